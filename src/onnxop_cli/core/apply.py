"""Run one node on one tensor: shape rule first, then bytes through the GPU.

    read (io) -> Tensor -> node.output_shape, node.view (pure) -> GPU kernel -> sink (file or memory)

Everything that can be refused is refused before the GPU is touched and
before an output file is opened. The node's index map is composed with the
input's own layout (a Fortran-ordered input is a view with reversed strides):
when the result reads the input front to back (a reshape of row-major
little-endian data) the flat copy kernel moves it, otherwise the strided
gather kernel, which also swaps big-endian bytes. String tensors, which have
no GPU form, are gathered on the host and the result says so.
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TYPE_CHECKING, Callable

from ..errors import InputError, OnnxopError, OpError
from ..ops import Node, View
from .sources import MAP_THRESHOLD, MemoryBytes, finish
from .tensor import Tensor, check_shape

if TYPE_CHECKING:
    from ..io import Sink, Writer


HOST_NOTE = "host: string tensors have no GPU form"


def any_type_note(node: Node, tensor: Tensor) -> str:
    """Said next to a result that --any-type let through (empty when the type is allowed)."""
    from ..ops import check_type

    if not node.any_type:
        return ""
    try:
        check_type(replace(node, any_type=False), tensor.dtype)
    except OpError:
        name = "string" if tensor.dtype.is_string else tensor.dtype.name
        return f"--any-type: {node.op_type}-{node.op.since_version}'s type list excludes {name}"
    return ""


@dataclass
class Result:
    node: Node
    input: Tensor
    output: Tensor  # values in memory, or data=None when streamed to a file
    adapter: str
    path: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    note: str = ""  # said next to the result: HOST_NOTE when the GPU was not used
    shown: Any = None  # a summarised result (core/summary.py): only the elements shown, made; output.data is None


def check(node: Node, tensor: Tensor, where: str = "") -> tuple[int, ...]:
    """Everything that can be refused before the GPU is touched: the shape rule,
    the types the node's opset allows, the layout. Returns the output shape.

    The operator's refusals know the rank and the type, not the file: ``where``
    (the file's label, on the command line) is put in front of them."""
    from ..ops import check_type

    try:
        out_shape = node.output_shape(tensor.shape)
        # a shape numpy cannot hold (Unsqueeze past 64 dimensions) is no file numpy could read
        check_shape(out_shape, tensor.dtype.numpy_itemsize, node.op_type, noun="output shape")
        if not node.any_type:
            check_type(node, tensor.dtype)
    except (OpError, InputError) as e:
        if where:
            raise type(e)(f"{where}: {e}") from e
        raise
    return out_shape


def check_device(tensor: Tensor, backend: str | None = None) -> None:
    """Open the device before a batch writes anything, so that a missing
    adapter refuses the whole batch. (Nothing else is refused here: the flat
    copy and the gather take every fixed-width tensor at any size.) String
    tensors need no device."""
    if tensor.dtype.is_string:
        return
    from ..gpu import get_gpu

    get_gpu(backend)


def apply(
    node: Node,
    tensor: Tensor,
    *,
    backend: str | None = None,
    out_path: Path | None = None,
    out_name: str | None = None,
    writer: Writer | None = None,
    spill: bool = False,
) -> Result:
    """Apply ``node`` to ``tensor`` on the GPU.

    The result streams into ``writer`` (an open output, see ``io.open_writer``)
    or into the file ``out_path`` (atomically); otherwise it is returned in
    memory -- or, with ``spill``, in an unlinked temporary file mapped
    read-only once it is ``MAP_THRESHOLD`` bytes or more (for printing,
    which reads back only what it shows). String tensors are reshaped on
    the host: they have no GPU form.
    """
    from ..io import open_writer

    timings: dict[str, float] = {}
    out_shape = check(node, tensor)
    name = out_name or (out_path.stem if out_path else node.op.outputs[0])
    out = Tensor(name, out_shape, tensor.dtype, source=str(out_path or ""), named=tensor.named,
                 text_dtype=tensor.text_dtype)

    if tensor.dtype.is_string:
        assert tensor.strings is not None
        out.strings = _host_gather(node, tensor.strings).reshape(out_shape)
        if writer is not None:
            writer.strings(name, out.strings, tensor.text_dtype)
        elif out_path is not None:
            with open_writer(out_path) as w:
                w.strings(name, out.strings, tensor.text_dtype)
        return Result(node, tensor, out, "host", out_path, timings, note=_joined(HOST_NOTE, any_type_note(node, tensor)))

    from ..gpu import get_gpu

    t0 = time.perf_counter()
    gpu = get_gpu(backend)
    timings["device"] = time.perf_counter() - t0
    moved = _mover(gpu, node, tensor)  # refuses what the device cannot hold before any file is opened

    def move(sink: Sink) -> object:
        done = moved(sink)
        # stdin read to its end and checked before an output is kept: a
        # truncated stream or trailing bytes are refused as the same file is
        finish(tensor.data)
        return done

    t0 = time.perf_counter()
    if writer is not None:
        with writer.tensor(name, out_shape, tensor.dtype) as sink:
            move(_zero_pad_bits(sink, out))
    elif out_path is not None:
        with open_writer(out_path) as w, w.tensor(name, out_shape, tensor.dtype) as sink:
            move(_zero_pad_bits(sink, out))
    elif spill and out.nbytes >= MAP_THRESHOLD:
        out.data = _to_scratch_file(lambda sink: move(_zero_pad_bits(sink, out)), out.nbytes)
    else:
        out.data = MemoryBytes.filled(lambda sink: move(_zero_pad_bits(sink, out)), out.nbytes)
    timings["copy"] = time.perf_counter() - t0
    return Result(node, tensor, out, gpu.name, out_path, timings, note=any_type_note(node, tensor))


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _to_scratch_file(fill: Callable[[Sink], int], nbytes: int) -> MemoryBytes:
    """A large result with no output file: the kernel's chunks go to an
    unlinked temporary file (it vanishes with the process, however that ends),
    mapped read-only afterwards. Printing reads back only what it shows, so
    the result never has to sit in memory next to the input."""
    import tempfile

    import numpy as np

    folder = tempfile.gettempdir()
    try:
        with tempfile.TemporaryFile(prefix="onnxop-", dir=folder) as f:

            def sink(chunk: memoryview) -> None:
                f.write(chunk)

            fill(sink)
            f.flush()
            return MemoryBytes(np.memmap(f, dtype=np.uint8, mode="r", shape=(nbytes,)))
    except OSError as e:
        if e.errno == errno.ENOMEM:  # the map, not the disk: no address space left (ulimit -v)
            raise OnnxopError(f"out of memory: cannot map the {nbytes}-byte result to print it ({e.strerror})") from None
        raise OnnxopError(
            f"{folder}: cannot hold the {nbytes}-byte result to print it: {e.strerror or e} "
            f"(write it to a file with -o, or set TMPDIR)"
        ) from None


def source_view(node: Node, tensor: Tensor) -> View:
    """The node's index map over the tensor's bytes as they lie: the op's
    view composed with the input's layout (C or Fortran strides)."""
    from ..ops import c_strides, f_strides

    strides = f_strides(tensor.shape) if tensor.order == "F" else c_strides(tensor.shape)
    return node.view(tensor.shape, strides).simplified()


def _mover(gpu, node: Node, tensor: Tensor) -> Callable[[Sink], int]:
    """The kernel that moves this tensor's bytes: the flat copy when the
    output is the input's bytes in order, the runs kernel when it repeats
    whole rows of them, the strided gather otherwise."""
    from .. import gpu as gpu_pkg

    view = source_view(node, tensor)
    if view.size == 0:
        return lambda sink: 0
    if view.is_identity() and view.size == tensor.size and not tensor.byteswap:
        return lambda sink: gpu_pkg.copy_through_kernel(gpu, tensor.data, sink)
    from ..gpu import repeats

    by_runs = repeats.mover(gpu, tensor.data, view, tensor.dtype.bits, tensor.byteswap)
    if by_runs is not None:  # Expand's and Tile's repeats of whole rows: the runs kernel (gpu/repeats.py)
        return by_runs
    from ..gpu.gather import gather_through_kernel

    return lambda sink: gather_through_kernel(
        gpu, tensor.data, sink, view=view, bits=tensor.dtype.bits, swap=tensor.byteswap
    )


def _host_gather(node: Node, strings):
    """A string tensor's elements picked by the node's index map, on the host:
    strings have no GPU form (the result carries HOST_NOTE)."""
    import numpy as np

    from ..ops import c_strides

    flat = np.asarray(strings, dtype=object).reshape(-1)
    view = node.view(tuple(strings.shape), c_strides(strings.shape))
    index = np.full(view.shape, view.offset, dtype=np.int64)
    for k, (d, s) in enumerate(zip(view.shape, view.strides)):
        index += (np.arange(d, dtype=np.int64) * s).reshape((d,) + (1,) * (len(view.shape) - k - 1))
    return flat[index.reshape(-1)] if index.size else np.empty(0, dtype=object)


def _zero_pad_bits(sink: Sink, tensor: Tensor) -> Sink:
    """For packed sub-byte types whose count does not fill the last byte, clear
    that byte's unused high bits as ONNX's own packers do (numpy_helper,
    helper.make_tensor): the elements pass through the kernel bit for bit, and
    the padding is canonical whatever the input held there."""
    used = tensor.size * tensor.dtype.bits % 8
    if not tensor.dtype.is_packed or not used:
        return sink
    total, seen = tensor.nbytes, 0
    mask = (1 << used) - 1

    def masked(chunk: memoryview) -> None:
        nonlocal seen
        seen += len(chunk)
        if seen == total and len(chunk):
            sink(chunk[:-1])
            sink(memoryview(bytes([chunk[-1] & mask])))
        else:
            sink(chunk)

    return masked

"""Run one node's plan: the executor of every operator's plan, view
operators' (one region, ops/base.py) and tensor operators' (ops/tensor_op.py).

    tensors -> Args -> op.plan (pure: shapes, types, regions) -> per output:
        a view region -> the flat copy, the runs kernel or the strided gather
        (streaming its input: memory, a mapped file or a pipe), or
        pieces -> gpu/pieces.py (gpu/render/pieces.py), or the op's runner,
        or a flat copy, or metadata values -> sink (file or memory)

Everything that can be refused is refused by ``check`` before the GPU is
touched and before an output is opened. String tensors have no GPU form:
their regions are run on the host (the result says so). ``apply_node`` is
the entry of every operator: core/apply.py is its one-tensor front end (a
writer or a file as the sink), for the view operators' commands. Both
return one ``Result``.
"""

from __future__ import annotations

import contextlib
import errno
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..errors import InputError, OnnxopError, OpError, OutputError
from ..ops.tensor_op import Arg, OutputPlan, Piece
from .graph_values import element_index
from .pieces import fields, moved, two_pass
from .region import Access
from .sources import MemoryBytes
from .tensor import Tensor, check_shape

if TYPE_CHECKING:
    from ..io import Sink
    from ..ops import Node

HOST_NOTE = "host: string tensors have no GPU form"
METADATA_NOTE = "metadata: no kernel"


@dataclass
class Result:
    """One node run: its inputs (None: an optional one left out) and, per
    output, its tensor (values in memory, or data=None when streamed to a
    file), its plan and the file written. A view operator's is the case of
    one input and one output: ``input``, ``output``, ``path``."""

    node: Node
    inputs: list[Optional[Tensor]]
    outputs: list[Tensor]
    plans: list[OutputPlan]
    adapter: str
    timings: dict[str, float] = field(default_factory=dict)
    note: str = ""  # said next to the result: HOST_NOTE when the GPU was not used
    # a printed result whose large outputs were only summarised (core/summary.py): per output
    # (values, summarised); the outputs then hold no data
    shown: Optional[list] = None
    paths: list = field(default_factory=list)  # per output: the file written (None: in memory or stdout)

    @property
    def input(self) -> Tensor:
        assert self.inputs[0] is not None
        return self.inputs[0]

    @property
    def output(self) -> Tensor:
        return self.outputs[0]

    @property
    def path(self):
        return self.paths[0] if self.paths else None


def args_of(node: Node, tensors: Sequence[Optional[Tensor]]) -> list[Optional[Arg]]:
    names = node.op.expanded_inputs(len(tensors))
    return [None if t is None else Arg(name, t.shape, t.dtype, t) for name, t in zip(names, tensors)]


def check(node: Node, tensors: Sequence[Optional[Tensor]], where: str = "") -> list[OutputPlan]:
    """The node's plan for these inputs, with every refusal made: missing
    inputs, types, the shape rule, output shapes numpy can hold."""
    op = node.op
    try:
        args = args_of(node, tensors)
        op.check_args(node, args)
        plans = op.plan(node, args)  # a view operator's: one region (ops/base.py)
        for p in plans:
            check_shape(p.shape, p.dtype.numpy_itemsize, op.op_type, noun="output shape")
    except (OpError, InputError) as e:
        if where:
            raise e.reworded(f"{where}: {e}") from e
        raise
    return plans


def needs_device(plans: Sequence[OutputPlan]) -> bool:
    """Whether a kernel moves bytes; a view operator's region opens the device even when empty."""
    return any(p.values is None and not p.dtype.is_string and (p.size or p.view is not None or _checks_empty(p))
               for p in plans)


def _checks_empty(p: OutputPlan) -> bool:
    """An empty output whose indices the device still checks (Gather of (3, 0) at index 9: onnxruntime and
    onnx.reference refuse it, though no element is read)."""
    return p.size == 0 and p.precheck is not None and p.kernel in ("indexed-gather", "scatter")


def apply_node(
    node: Node,
    tensors: Sequence[Optional[Tensor]],
    *,
    backend: str | None = None,
    sinks: Optional[Callable[[int, OutputPlan], object]] = None,
    names: Optional[Sequence[str]] = None,
    spill: bool = False,
) -> Result:
    """Run ``node`` on ``tensors`` (None for an optional input left out).

    ``sinks(k, plan)``, when given, returns a context manager yielding the
    sink of output k (a file being written); otherwise each output is
    returned in memory -- with ``spill`` (printed with --full), a large one
    in an unlinked scratch file mapped read-only, as a view operator's is
    (core/apply.py), so that it never sits in memory whole."""
    timings: dict[str, float] = {}
    plans = check(node, tensors)
    gpu = None
    host = any(p.dtype.is_string or p.kernel == "host" for p in plans)
    if needs_device(plans):
        from ..gpu import get_gpu

        t0 = time.perf_counter()
        gpu = get_gpu(backend)
        timings["device"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # One call's GPU work holds the engine's lock (gpu/device.py Gpu.lock):
    # the kernels share the device's pipelines, buffers and queue.
    with gpu.lock if gpu is not None else contextlib.nullcontext():
        outs = _outputs(gpu, plans, tensors, sinks, names, spill)
    timings["copy"] = time.perf_counter() - t0
    adapter = gpu.name if gpu is not None else "host"
    note = HOST_NOTE if host else (METADATA_NOTE if all(p.values is not None for p in plans) else "")
    return Result(node, list(tensors), outs, plans, adapter, timings, note=note)


def _outputs(gpu, plans, tensors, sinks, names, spill=False) -> list[Tensor]:
    if gpu is None or sum(p.pieces is not None for p in plans) < 2:
        return _each_output(gpu, plans, tensors, sinks, names, None, spill)
    from ..gpu.pieces import Runs

    reuse = Runs()  # several outputs of pieces (Split): one set of buffers for them all
    try:
        return _each_output(gpu, plans, tensors, sinks, names, reuse, spill)
    finally:
        reuse.release()


def _each_output(gpu, plans, tensors, sinks, names, reuse, spill=False) -> list[Tensor]:
    outs: list[Tensor] = []
    for k, p in enumerate(plans):
        name = names[k] if names else p.name
        out = Tensor(name, p.shape, p.dtype)
        if p.dtype.is_string:
            out.strings = _host(p, tensors)
            if sinks is not None:
                with sinks(k, p) as w:  # a writer for strings: w.strings
                    w(out.strings)  # type: ignore[operator]
            outs.append(out)
            continue
        fill = _filler(gpu, p, tensors, reuse)
        if sinks is not None:
            with sinks(k, p) as sink:
                fill(_zero_pad_bits(sink, out))  # type: ignore[arg-type]
        else:
            out.data = collected(lambda sink: fill(_zero_pad_bits(sink, out)), out.nbytes, spill, name)
        outs.append(out)
    return outs


def collected(fill: Callable, nbytes: int, spill: bool, name: str):
    """An output's bytes in memory, or (``spill``, a large one) in a mapped scratch file;
    one that would not fit the memory available is refused before its kernel runs
    (one line naming the output, not numpy's MemoryError from the API)."""
    from ..io.npy import size_words
    from .sources import MAP_THRESHOLD
    from .strings import available_memory

    if spill and nbytes >= MAP_THRESHOLD:
        return _to_scratch_file(fill, nbytes)
    free = available_memory()
    if free is not None and nbytes > free:
        raise OutputError(
            f"output {name!r}: it needs {nbytes} bytes ({size_words(nbytes)}) of memory and "
            f"{free} ({size_words(free)}) are available; not made"
        )
    return MemoryBytes.filled(fill, nbytes)


def precheck(plans: Sequence[OutputPlan], tensors: Sequence[Optional[Tensor]], backend: str | None,
             where: str = "") -> None:
    """The plans' device-side checks (ops/tensor_op.py OutputPlan.precheck), so a
    batch is refused before its first job writes."""
    checks = [p.precheck for p in plans if p.precheck is not None]
    if not checks:
        return
    from ..gpu import get_gpu

    gpu = get_gpu(backend)
    sources = [None if t is None else _source(t) for t in tensors]
    try:
        with gpu.lock:
            for check in checks:
                check(gpu, sources)
    except OpError as e:
        raise OpError(f"{where}: {e}" if where else str(e)) from e


def _filler(gpu, p: OutputPlan, tensors: Sequence[Optional[Tensor]], reuse=None) -> Callable[[Callable], int]:
    """How output ``p``'s bytes are made, as a function of its sink;
    ``reuse``: gpu/pieces.Runs shared by the node's outputs."""
    if p.size == 0:
        if _checks_empty(p):
            p.precheck(gpu, [None if t is None else _source(t) for t in tensors])  # type: ignore[misc]
        return lambda sink: 0
    if p.values is not None:
        import numpy as np

        raw = np.ascontiguousarray(np.asarray(p.values, dtype=p.dtype.numpy)).tobytes()
        return lambda sink: (sink(memoryview(raw)), len(raw))[1]
    copied = _copied(p, tensors)
    if copied is not None:
        from .. import gpu as gpu_pkg

        return lambda sink: gpu_pkg.copy_through_kernel(gpu, copied.data, sink)
    if p.view is not None:
        t = tensors[0]
        assert t is not None
        return _view_mover(gpu, p.view, t)
    sources = [None if t is None else _source(t) for t in tensors]
    if p.runner is not None:
        return lambda sink: p.runner(gpu, sources, sink)  # type: ignore[misc]
    from ..gpu.pieces import run_pieces

    assert p.pieces is not None
    return lambda sink: run_pieces(gpu, sources, sink, pieces=p.pieces, count=p.size, bits=p.dtype.bits,
                                   reuse=reuse)


def _copied(p: OutputPlan, tensors: Sequence[Optional[Tensor]]) -> Optional[Tensor]:
    """The input a copy plan's bytes are, as they are (``OutputPlan.flat``,
    not byte-swapped), for the flat copy kernel; else None (its piece runs)."""
    k = p.flat if p.kernel == "copy" else None
    t = None if k is None else tensors[k]
    return t if t is not None and t.data is not None and not t.byteswap and t.size == p.size else None


def _view_mover(gpu, view, t: Tensor) -> Callable[[Callable], int]:
    """A one-region plan (a view operator's): the flat copy when the output is
    the input's bytes in order, the runs kernel when it repeats whole rows of
    them (Expand, Tile: gpu/pieces.py's repeat_mover), the strided gather otherwise (which
    also swaps big-endian bytes). Each streams its input in chunks, whether
    it is in memory, a mapped file or a pipe."""
    from .. import gpu as gpu_pkg

    view = view.simplified()
    if view.is_identity() and view.size == t.size and not t.byteswap:
        return lambda sink: gpu_pkg.copy_through_kernel(gpu, t.data, sink)
    from ..gpu.pieces import repeat_mover

    by_runs = repeat_mover(gpu, t.data, view, t.dtype.bits, t.byteswap)
    if by_runs is not None:
        return by_runs
    from ..gpu.gather import gather_through_kernel

    return lambda sink: gather_through_kernel(gpu, t.data, sink, view=view, bits=t.dtype.bits, swap=t.byteswap)


def _source(t: Tensor):
    from ..gpu.pieces import Source

    return Source(t.data, t.byteswap)


def _host(p: OutputPlan, tensors: Sequence[Optional[Tensor]]):
    """A string output's pieces, run on the host with numpy fancy indexing."""
    import numpy as np

    out = np.empty(p.size, dtype=object)
    if p.values is not None:
        return np.asarray(p.values, dtype=object).reshape(p.shape)
    if p.view is not None:
        flat = _flat_strings(tensors[0])
        return flat[_index(p.view).reshape(-1)].reshape(p.shape)
    for piece in (q for whole in moved(p.pieces or []) for q in two_pass(whole)):
        if piece.size == 0:
            continue
        dst = _index(piece.dst)
        v = fields(piece.value)  # as the pieces kernel takes it: one fill, chosen or where the mask says no
        take = np.ones(piece.shape, dtype=bool)
        if v.mask is not None:
            m = tensors[v.mask.input]
            flat = m.to_numpy().reshape(-1) if m.order == "C" else m.to_numpy().reshape(-1, order="F")  # type: ignore[union-attr]
            take = flat[_index(v.mask.at)].astype(bool)
        elif v.tri is not None:
            k, r, c, upper = v.tri
            rows = _axis_index(piece.shape, r)
            cols = _axis_index(piece.shape, c)
            take = (cols - rows >= k) if upper else (cols - rows <= k)
        if v.src is not None:
            values = _flat_strings(tensors[v.src.input])[_index(v.src.at)]
        else:
            values = np.full(piece.shape, _fill_string(v.fill), dtype=object)
        fill = np.full(piece.shape, _fill_string(v.fill), dtype=object)
        chosen = np.where(take, values, fill)
        keep = take | v.otherwise
        out[dst[keep]] = chosen[keep]
    return out.reshape(p.shape)


def _flat_strings(t):
    """A string tensor's elements in the order its strides count them (Arg.strides)."""
    import numpy as np

    flat = np.asarray(t.strings, dtype=object)
    return flat.reshape(-1) if t.order == "C" else flat.reshape(-1, order="F")


def _fill_string(fill: object) -> object:
    return fill if isinstance(fill, (bytes, str)) and not isinstance(fill, bytes) else (fill if fill else b"")


def _index(at: Access):
    """The element each position of ``at`` reads, in ``at``'s shape."""
    return element_index(at).reshape(at.shape)


def _axis_index(shape, axis: int):
    import numpy as np

    if axis < 0:
        return np.zeros(shape, dtype=np.int64)
    d = shape[axis]
    return np.broadcast_to(np.arange(d, dtype=np.int64).reshape((d,) + (1,) * (len(shape) - axis - 1)), shape)


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


__all__ = ["Result", "check", "apply_node", "args_of", "needs_device", "precheck", "Piece"]

"""A result that is only printed as a summary: only its shown elements are made.

Print mode and --json show a large result as numpy's summary: along each axis
longer than 2 * EDGE_ITEMS only the first and last EDGE_ITEMS entries. Making
the whole result first (``expand x.npy --shape 1048576,1048576,2,3`` is 24 TiB
of float32) to show 3^k of its elements fills $TMPDIR and fails. So the index
map of the output is narrowed to those entries and only they go through the
gather kernel: each long axis of length n (stride s) becomes two axes, (2,
stride (n - E - 1) * s) and (E + 1, stride s) -- the first E + 1 entries and
the last E + 1, one extra on each side, so that the axis stays longer than
2 * E and numpy still writes ``...`` there. numpy formats a summarised array
from the shown elements only (``_leading_trailing``), so the text is the
same as for the whole result. ``--full`` still makes and streams every value.

Only for results whose index map is strided over the output's own shape
(every view operator, and a reshape of a row-major input); anything else,
and string tensors (which have no GPU form), take the whole-result path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .sources import MemoryBytes, finish
from .tensor import Tensor
from .view import View

EDGE_ITEMS = 3  # entries shown at each end of a summarised axis (render/values.py derives it from the ONNX pages)

if TYPE_CHECKING:
    import numpy as np

    from ..ops import Node


def output_view(node: Node, tensor: Tensor, out_shape: tuple[int, ...]) -> View | None:
    """The output's index map over the input's bytes, as a view of shape
    ``out_shape``; None when the output is not such a view."""
    from ..ops import c_strides, f_strides

    strides = f_strides(tensor.shape) if tensor.order == "F" else c_strides(tensor.shape)
    view = node.view(tensor.shape, strides)
    if tuple(view.shape) == tuple(out_shape):
        return view
    if view.simplified().is_identity():  # a reshape of row-major bytes: the output read as it lies
        return View.row_major(tuple(out_shape))
    return None


def edge_view(view: View, edge: int) -> tuple[View, tuple[int, ...]]:
    """The narrowed view and the shape its elements take (each long axis
    2 * (edge + 1) long)."""
    shape: list[int] = []
    strides: list[int] = []
    merged: list[int] = []
    for d, s in zip(view.shape, view.strides):
        if d > 2 * edge:
            shape += [2, edge + 1]
            strides += [(d - edge - 1) * s, s]
            merged.append(2 * (edge + 1))
        else:
            shape.append(d)
            strides.append(s)
            merged.append(d)
    return View(tuple(shape), tuple(strides), view.offset), tuple(merged)


def shown_elements(node: Node, tensor: Tensor, out_shape: tuple[int, ...], *, edge: int,
                   backend: str | None = None) -> np.ndarray | None:
    """The elements a summary shows, through the gather kernel, as an array
    of the narrowed shape (numpy's summary of it is the whole result's);
    None when the result is not a strided view (the caller makes it all)."""
    if tensor.dtype.is_string or tensor.data is None:
        return None
    view = output_view(node, tensor, out_shape)
    if view is None or view.size == 0:
        return None
    narrowed, shape = edge_view(view, edge)
    from ..gpu import get_gpu
    from ..gpu.gather import gather_through_kernel

    gpu = get_gpu(backend)
    chunks: list[bytes] = []
    gather_through_kernel(gpu, tensor.data, lambda c: chunks.append(bytes(c)), view=narrowed,
                          bits=tensor.dtype.bits, swap=tensor.byteswap)
    finish(tensor.data)  # stdin: read to its end and checked, as for a whole result
    import numpy as np

    data = MemoryBytes(np.frombuffer(b"".join(chunks), dtype=np.uint8))
    part = Tensor(tensor.name, tuple(narrowed.shape), tensor.dtype, data=data)
    return part.to_numpy().reshape(shape)


def summarised_result(node: Node, tensor: Tensor, *, edge: int, threshold: int, backend: str | None = None):
    """(Result, shown elements) for a result of ``threshold`` bytes or more
    that is only summarised; None to make the whole result as before. The
    Result's output has the true shape and no data (nothing else was made)."""
    import time

    from .apply import Result, check

    out_shape = check(node, tensor)
    out = Tensor(node.op.outputs[0], out_shape, tensor.dtype, named=tensor.named, text_dtype=tensor.text_dtype)
    if out.nbytes < threshold:
        return None
    t0 = time.perf_counter()
    values = shown_elements(node, tensor, out_shape, edge=edge, backend=backend)
    if values is None:
        return None
    from ..gpu import get_gpu

    return Result(node, tensor, out, get_gpu(backend).name, None, {"copy": time.perf_counter() - t0}), values

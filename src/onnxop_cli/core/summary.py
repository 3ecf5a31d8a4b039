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

That narrowing is one strided view when the index map is strided over the
output's own shape (every view operator but Tile, and a reshape of a
row-major input). Tile's map splits each output axis in two, and the tensor
operators (Concat, Pad, Where, fills, OneHot, EyeLike, ...) tile their
output with pieces: for them the whole output's pieces are cut to the shown
entries (core/shown.py) and the pieces kernel makes only those. String
tensors (no GPU form) run the same narrowed pieces on the host. The indexed
gathers narrow their kernel's table, and the other runners are streamed
through with only the shown elements kept (core/shown_values.py): no
printed output is made whole.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .sources import MemoryBytes, finish
from .tensor import Tensor
from .region import Access

EDGE_ITEMS = 3  # entries shown at each end of a summarised axis (render/values.py derives it from the ONNX pages)

if TYPE_CHECKING:
    import numpy as np

    from ..ops import Node


def output_view(region: Access, out_shape: tuple[int, ...]) -> Access | None:
    """The output's index map over the input's bytes (``region``: the view
    operator's plan, ops/base.py), as a view of shape ``out_shape``; None
    when the output is not such a view."""
    if tuple(region.shape) == tuple(out_shape):
        return region
    if region.simplified().is_identity():  # a reshape of row-major bytes: the output read as it lies
        return Access.row_major(tuple(out_shape))
    return None


def shown_elements(region: Access, tensor: Tensor, out_shape: tuple[int, ...], *, edge: int,
                   backend: str | None = None) -> np.ndarray | None:
    """The elements a summary shows of a view operator's one region over
    ``tensor``, through the gather kernel (or the
    pieces kernel; strings on the host), as an array of the narrowed shape
    (numpy's summary of it is the whole result's); None when the result's
    index map is neither form (the caller makes it all)."""
    if tensor.dtype.is_string:
        if tensor.strings is None:
            return None
    elif tensor.data is None:
        return None
    view = None if tensor.dtype.is_string else output_view(region, out_shape)
    if view is not None and view.size:
        from .shown_values import edge_view

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
    from .shown import narrow, view_piece

    full = region  # Tile's: (repeat, dim) per output axis
    if full.size == 0 or full.size != math.prod(out_shape):
        return None
    pieces = narrow([view_piece(full)], out_shape, edge)
    if pieces is None:
        return None
    from .shown_values import pieces_shown

    return pieces_shown(pieces, out_shape, tensor.dtype, [tensor], edge=edge, backend=backend,
                        text_dtype=tensor.text_dtype)


def large(shape: tuple[int, ...], dtype, threshold: int) -> bool:
    """Whether a result of ``shape`` is ``threshold`` bytes or more (a string
    element counts as the pointer numpy holds for it)."""
    count = math.prod(shape)
    return (count * 8 if dtype.is_string else dtype.nbytes(count)) >= threshold


def summarised_result(node: Node, tensor: Tensor, *, edge: int, threshold: int, backend: str | None = None):
    """The Result of a result of ``threshold`` bytes or more that is only
    summarised, carrying its shown elements (``shown``); None to make the whole
    result as before. Its output has the true shape and no data (nothing else
    was made)."""
    import time

    from .apply import _joined, any_type_note
    from .apply_tensors import HOST_NOTE, Result, check

    (plan,) = check(node, [tensor])  # one region: the node's view of the tensor
    out_shape = plan.shape
    out = Tensor(node.op.outputs[0], out_shape, tensor.dtype, named=tensor.named, text_dtype=tensor.text_dtype)
    if not large(out_shape, tensor.dtype, threshold):
        return None
    t0 = time.perf_counter()
    values = shown_elements(plan.view, tensor, out_shape, edge=edge, backend=backend)
    if values is None:
        return None
    note = any_type_note(node, tensor)
    if tensor.dtype.is_string:
        adapter, timings, note = "host", {}, _joined(HOST_NOTE, note)
    else:
        from ..gpu import get_gpu

        adapter, timings = get_gpu(backend).name, {"copy": time.perf_counter() - t0}
    return Result(node, [tensor], [out], [plan], adapter, timings, note=note, shown=[(values, True)], paths=[None])


def summarised_tensor_op(node: Node, tensors, *, edge: int, threshold: int, backend: str | None = None):
    """A tensor-op node's result (core/apply_tensors.py Result) whose large
    outputs are only summarised: each made as its shown elements alone
    (core/shown_values.py: whatever kernel makes it), the result carrying
    ``shown`` (values, summarised) per output; None when no output is large
    (each is made whole, as before)."""
    import time

    import numpy as np

    from .apply_tensors import HOST_NOTE, METADATA_NOTE, Result, check, needs_device
    from .shown_values import plan_shown

    plans = check(node, tensors)
    if not any(p.values is None and large(p.shape, p.dtype, threshold) for p in plans):
        return None
    t0 = time.perf_counter()
    gpu = None
    if needs_device(plans):
        from ..gpu import get_gpu

        gpu = get_gpu(backend)
    shown: list[tuple] = []
    outs: list[Tensor] = []
    for p in plans:
        outs.append(Tensor(p.name, p.shape, p.dtype))
        big = p.values is None and large(p.shape, p.dtype, threshold)
        if p.size == 0:
            shown.append((np.empty(p.shape, dtype=object if p.dtype.is_string else p.dtype.numpy), False))
            continue
        e = edge if big else max(p.shape, default=0)  # a small output: every element, as before
        shown.append((plan_shown(gpu, p, tensors, edge=e, backend=backend), big))
    adapter = "host" if gpu is None else gpu.name
    note = HOST_NOTE if any(p.dtype.is_string or p.kernel == "host" for p in plans) else (
        METADATA_NOTE if all(p.values is not None for p in plans) else "")
    return Result(node, list(tensors), outs, plans, adapter, {"copy": time.perf_counter() - t0}, note=note,
                  shown=shown)

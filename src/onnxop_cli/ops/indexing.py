"""The index maps of the indexed operators: pure shape logic, no GPU.

Each builder takes ONNX shapes (and, for inputs stored in Fortran order,
their element strides: ``ds`` the data's, ``is_`` the indices'), validates
them and returns what gpu/indexed.py and gpu/scatter.py run: the output (or updates) shape, a ``Table`` (per output axis its size
and strides into the data and the index tensor, per lookup a data stride
and an index offset) and the bounds each index is checked against on the
device. Strides are in elements, row-major.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import OpError
from ..gpu.index_table import MODULO, RANGE, WRAP, Check, Table, row_strides  # not gpu.indexed: no kernel code at import

Shape = tuple[int, ...]


def norm_axis(op: str, axis: int, rank: int, name: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise OpError(f"{op}: {name} {axis} is out of range [{-rank}, {rank - 1}] for an input of rank {rank}")
    return axis % rank


def _about(op_shape: Shape, axes: Sequence[int]):
    return lambda k: f"axis {axes[k]} of size {op_shape[axes[k]]}"


def gather(op: str, data: Shape, indices: Shape, axis: int, ds=None, is_=None) -> tuple[Table, Check]:
    """Gather: out = data[:a] + indices + data[a+1:]."""
    r = len(data)
    if r == 0:
        raise OpError(f"{op}: data must have rank 1 or more, not 0")
    a = norm_axis(op, axis, r)
    ds, is_ = ds or row_strides(data), is_ or row_strides(indices)
    shape = data[:a] + indices + data[a + 1 :]
    dstr = ds[:a] + (0,) * len(indices) + ds[a + 1 :]
    istr = (0,) * a + is_ + (0,) * (r - a - 1)
    # gpu/render/slices.py: each index selects the contiguous slab data[..., i, ...] after the axis, copied in
    # vec4s where it is whole ones ("slabs"; narrower whole words: choose.py's gather_words measures which)
    table = Table.over(shape, dstr, istr, ((ds[a], 0),), extra={"slices": "slabs"})
    return table, Check((data[a],), op, what=_about(data, [a]))


def gather_elements(op: str, data: Shape, indices: Shape, axis: int, ds=None, is_=None) -> tuple[Table, Check]:
    """GatherElements: out has the indices' shape."""
    r = len(data)
    if r == 0:
        raise OpError(f"{op}: data must have rank 1 or more, not 0")
    a = norm_axis(op, axis, r)
    if len(indices) != r:
        raise OpError(f"{op}: indices have rank {len(indices)}, the data {r}; they must be equal")
    for k, (d, i) in enumerate(zip(data, indices)):
        if k != a and i > d:
            raise OpError(f"{op}: indices' dimension {k} is {i}, more than the data's {d}")
    ds, is_ = ds or row_strides(data), is_ or row_strides(indices)
    dstr = tuple(0 if k == a else ds[k] for k in range(r))
    # gpu/indexed_variants.py
    table = Table.over(indices, dstr, is_, ((ds[a], 0),), extra={"line_axis": a, "elements": True})
    return table, Check((data[a],), op, what=_about(data, [a]))


def gather_nd(op: str, data: Shape, indices: Shape, batch_dims: int, ds=None, is_=None) -> tuple[Table, Check]:
    """GatherND: out = indices[:-1] + data[b+m:]."""
    r, q, b = len(data), len(indices), batch_dims
    if r < 1 or q < 1:
        raise OpError(f"{op}: data and indices must have rank 1 or more (got {r} and {q})")
    if not 0 <= b < min(q, r):
        raise OpError(f"{op}: batch_dims {b} must be in [0, {min(q, r) - 1}] for ranks {r} and {q}")
    if data[:b] != indices[:b]:
        raise OpError(f"{op}: the first {b} dimensions of data {data} and indices {indices} differ")
    m = indices[-1]
    if not 1 <= m <= r - b:
        raise OpError(f"{op}: indices' last dimension is {m}; it must be in [1, {r - b}]")
    ds, is_ = ds or row_strides(data), is_ or row_strides(indices)
    shape = indices[:-1] + data[b + m :]
    dstr = tuple(ds[j] if j < b else 0 for j in range(q - 1)) + ds[b + m :]
    istr = is_[:-1] + (0,) * (r - b - m)
    lookups = tuple((ds[b + t], t * is_[-1]) for t in range(m))
    bounds = tuple(data[b + t] for t in range(m))
    check = Check(bounds, op, what=_about(data, [b + t for t in range(m)]), inner=is_[-1])
    return Table.over(shape, dstr, istr, lookups, extra={"slices": True}), check  # gpu/render/slices.py


def reverse_sequence(op: str, data: Shape, lens: Shape, batch_axis: int, time_axis: int,
                     ds=None, is_=None) -> tuple[Table, Check]:
    r = len(data)
    if r < 2:
        raise OpError(f"{op}: input must have rank 2 or more, not {r}")
    if batch_axis not in (0, 1) or time_axis not in (0, 1) or batch_axis == time_axis:
        raise OpError(f"{op}: batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1, in either order")
    if lens != (data[batch_axis],):
        raise OpError(f"{op}: sequence_lens has shape {list(lens)}, not [{data[batch_axis]}] (the batch size)")
    ds = ds or row_strides(data)
    istr = tuple(1 if k == batch_axis else 0 for k in range(r))
    table = Table.over(data, ds, istr, mode=1, time_axis=time_axis, time_stride=ds[time_axis],
                       extra={"runs": True})  # gpu/indexed_variants.py
    check = Check((data[time_axis],), op, "sequence_lens", RANGE, lambda _: f"time axis {time_axis}")
    return table, check


def scatter_elements(op: str, data: Shape, indices: Shape, updates: Shape, axis: int,
                     is_=None) -> tuple[Table, Check]:
    r = len(data)
    if r == 0:
        raise OpError(f"{op}: data must have rank 1 or more, not 0")
    a = norm_axis(op, axis, r)
    if len(indices) != r or updates != indices:
        raise OpError(f"{op}: indices {list(indices)} and updates {list(updates)} must have one shape of rank {r}")
    for k, (d, i) in enumerate(zip(data, indices)):
        if k != a and i > d:
            raise OpError(f"{op}: indices' dimension {k} is {i}, more than the data's {d}")
    ds, is_ = row_strides(data), is_ or row_strides(indices)
    dstr = tuple(0 if k == a else ds[k] for k in range(r))
    table = Table.over(indices, dstr, is_, ((ds[a], 0),), extra={"line_axis": a})  # gpu/scatter.py's lines
    return table, Check((data[a],), op, what=_about(data, [a]))


def scatter_nd(op: str, data: Shape, indices: Shape, updates: Shape, is_=None) -> tuple[Table, Check]:
    r, q = len(data), len(indices)
    if r < 1 or q < 1:
        raise OpError(f"{op}: data and indices must have rank 1 or more (got {r} and {q})")
    m = indices[-1]
    if not 1 <= m <= r:
        raise OpError(f"{op}: indices' last dimension is {m}; it must be in [1, {r}]")
    want = indices[:-1] + data[m:]
    if updates != want:
        raise OpError(f"{op}: updates have shape {list(updates)}, not {list(want)}")
    ds, is_ = row_strides(data), is_ or row_strides(indices)
    dstr = (0,) * (q - 1) + ds[m:]
    istr = is_[:-1] + (0,) * (r - m)
    lookups = tuple((ds[t], t * is_[-1]) for t in range(m))
    check = Check(data[:m], op, what=_about(data, list(range(m))), inner=is_[-1])
    return Table.over(updates, dstr, istr, lookups, extra={"slices": True}), check  # gpu/render/slices.py


def tensor_scatter(op: str, past: Shape, update: Shape, indices: Shape | None, axis: int,
                   circular: bool, is_=None) -> tuple[Table, Check]:
    r = len(past)
    if r < 2:
        raise OpError(f"{op}: past_cache must have rank 2 or more, not {r}")
    a = norm_axis(op, axis, r)
    if a == 0:
        raise OpError(f"{op}: axis {axis} is the batch axis; the sequence axis must be another")
    if len(update) != r or any(u != p for k, (u, p) in enumerate(zip(update, past)) if k != a):
        raise OpError(f"{op}: update {list(update)} must match past_cache {list(past)} except on axis {a}")
    if update[a] > past[a]:
        raise OpError(f"{op}: update's sequence length {update[a]} is more than past_cache's {past[a]}")
    if indices is not None and indices != (past[0],):
        raise OpError(f"{op}: write_indices has shape {list(indices)}, not [{past[0]}] (the batch size)")
    ds = row_strides(past)
    istr = (1,) + (0,) * (r - 1)
    m, s = past[a], update[a]
    if circular:  # any write index wraps modulo m (ONNX's pseudocode, Python's %; onnx.reference): w % m, then + t
        table = Table.over(update, ds, istr, mode=2, time_axis=a, time_stride=ds[a], modulus=m)
        return table, Check((m,), op, "write_indices", MODULO)
    table = Table.over(update, ds, istr, ((ds[a], 0),))
    return table, Check((m - s,), op, "write_indices", RANGE, lambda _: f"{s} updates in a cache of {m}")


__all__ = ["WRAP", "RANGE", "gather", "gather_elements", "gather_nd", "reverse_sequence",
           "scatter_elements", "scatter_nd", "tensor_scatter", "norm_axis"]

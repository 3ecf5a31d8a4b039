"""How the indexed operators' plans run: one runner for the gathers, one
for the scatters (gpu/indexed.py, gpu/scatter.py), and the host path for
string tensors, which have no GPU form.

The op modules validate and build a table (ops/indexing.py); this module
turns it into an OutputPlan whose runner reads the inputs' bytes on the
device. Strings run the same table with numpy on the host, their indices
checked there too (the one place indices are read on the host; --json says
``kernel: host``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..core.region import Access, Lookup
from ..errors import OpError
from ..gpu.index_table import MODULO, NONNEG, RANGE, WRAP, Check, Table  # the kernels' modules only when one runs

if TYPE_CHECKING:
    from .tensor_op import Arg, OutputPlan

# Reduction arithmetic classes (gpu/scatter_claims.py's Reduce.cls), by ONNX type name
INTEGER = {"uint8": 0, "uint16": 0, "uint32": 0, "uint64": 0, "int8": 1, "int16": 1, "int32": 1, "int64": 1}
ADD_MUL = {**INTEGER, "bool": 3, "float16": 2, "float": 2, "bfloat16": 4}
MAX_MIN = {**ADD_MUL, "double": 2}


def _data(arg: Arg, source: Any):
    from ..gpu.indexed import Data

    return Data(source.data, arg.shape, arg.dtype.bits, source.swap, arg.strides)


def _index(arg: Arg, source: Any):
    from ..gpu.indexed import Index

    return Index(source.data, arg.shape, arg.dtype.bits == 64, bool(source.swap), arg.tensor.order == "F")


def _run_gather(data: Arg, idx: Optional[Arg], table: Table, check: Optional[Check], di: int, ii: int,
                gpu: Any, sources: Sequence[Any], sink: Any) -> int:
    from ..gpu.indexed import gather_indexed

    index = _index(idx, sources[ii]) if idx is not None else None
    return gather_indexed(gpu, _data(data, sources[di]), index, check, table, sink)


def _run_scatter(data: Arg, updates: Arg, idx: Optional[Arg], table: Table, check: Optional[Check],
                 reduce: Any, where: tuple[int, int, int], gpu: Any, sources: Sequence[Any], sink: Any) -> int:
    from ..gpu.scatter import scatter_indexed

    di, ui, ii = where
    index = _index(idx, sources[ii]) if idx is not None and sources[ii] is not None else None
    return scatter_indexed(gpu, _data(data, sources[di]), _data(updates, sources[ui]), index, check, table,
                           reduce, sink)


def layout(data: Arg, idx: Optional[Arg]) -> tuple[Any, Any]:
    """(data strides, index strides) for a table: the storage's, or None
    (row-major) for strings, which the host path keeps in logical order."""
    if data.dtype.is_string:
        return None, None
    return data.strides, None if idx is None else idx.strides


def _precheck(idx: Arg, check: Check, ii: int, gpu: Any, sources: Sequence[Any]) -> None:
    from ..gpu.indexed import check_only

    check_only(gpu, _index(idx, sources[ii]), check)


def _prechecker(idx: Optional[Arg], check: Optional[Check], ii: int):
    if idx is None or check is None:
        return None
    return functools.partial(_precheck, idx, check, ii)


def gather_plan(name: str, data: Arg, idx: Optional[Arg], table: Table, check: Optional[Check],
                where: tuple[int, int] = (0, 1)) -> list[OutputPlan]:
    from .tensor_op import OutputPlan

    if data.dtype.is_string:
        values = host_gather(data, idx, table, check)
        return [OutputPlan(name, table.shape, data.dtype, values=values, kernel="host")]
    runner = functools.partial(_run_gather, data, idx, table, check, *where)
    return [OutputPlan(name, table.shape, data.dtype, runner=runner, kernel="indexed-gather",
                       precheck=_prechecker(idx, check, where[1]),
                       cut=functools.partial(_cut, functools.partial(_gather_runner, data, idx, check, where), table),
                       read_from=functools.partial(_read_from, idx, check, table, where[0]))]


MAX_HOST_INDICES = 1 << 20  # indices read on the host to place a few output elements (print mode)


def _read_from(idx: Optional[Arg], check: Optional[Check], table: Table, di: int, positions) -> Any:
    """(the data input, the data element each output element at flat
    ``positions`` reads): the gather kernel's index map for a few elements
    (print mode, core/value_bytes.py), the indices checked as the kernel
    checks them; None when the indices are too many to read on the host."""
    if idx is not None and idx.size > MAX_HOST_INDICES:
        return None
    return di, _offsets(table, _host_norm(idx, check, table), positions)


def _gather_runner(data: Arg, idx: Optional[Arg], check: Optional[Check], where: tuple[int, int], table: Table) -> Any:
    return functools.partial(_run_gather, data, idx, table, check, *where)


def _cut(runner_of: Any, table: Table, edge: int) -> Any:
    """The runner of the shown elements only (core/shown_values.py): the table narrowed as ``edge_view``
    narrows a view, in the data and in the indices alike; None for the tables whose map names an output
    axis (ReverseSequence, TensorScatter) or whose lookups are separable (``_cut_made`` narrows those)."""
    if table.mode != 0 or table.time_axis >= 0 or table.separable:
        return None
    from ..core.shown_values import edge_view

    (data, _), (index, _) = edge_view(table.data, edge), edge_view(table.index, edge)
    return runner_of(Table(data, index, table.lookups))


def gather_made(name: str, data: Arg, indices: Any, table: Table, check: Check, di: int = 0) -> list[OutputPlan]:
    """A gather whose indices the op made on the host from a small input
    (Compress: its condition's kept positions; Resize: a separable table's
    per-axis vectors): an int32 or int64 array of ``check``'s index shape,
    run by the same kernels as gather_plan's, which check them as they read
    them. Not for strings (no device form)."""
    import numpy as np

    from .tensor_op import OutputPlan

    made = np.ascontiguousarray(indices, dtype="<i8" if indices.dtype.itemsize == 8 else "<i4")
    return [OutputPlan(name, table.shape, data.dtype, runner=_made_runner(data, made, check, di, table),
                       kernel="indexed-gather", cut=functools.partial(_cut_made, data, made, table, check, di))]


def _made_runner(data: Arg, made: Any, check: Check, di: int, table: Table) -> Any:
    from ..core.sources import MemoryBytes

    return functools.partial(_run_made, data, MemoryBytes(made), made.shape, made.itemsize == 8, table, check, di)


def _cut_made(data: Arg, made: Any, table: Table, check: Check, di: int, edge: int) -> Any:
    """``_cut`` of a made gather; a separable table's (whose lookups read the output's coordinates, which
    ``edge_view`` would split) as another: every long axis a separable lookup of the shown entries only, its
    vector the old one's entries there (an axis without one: the positions, over its data stride), so the
    host holds and the device reads the page's indices, not the output's or every axis' whole vector."""
    import numpy as np

    if not table.separable:
        return _cut(functools.partial(_made_runner, data, made, check, di), table, edge)
    from ..core.shown import shown_positions

    flat, along = made.reshape(-1), {lk.axis: lk for lk in table.lookups}
    dstrides, vectors, bounds, looks = list(table.data.strides), [], [], []
    for k, d in enumerate(table.shape):
        lk, pos = along.get(k), np.asarray(shown_positions(d, edge), dtype=np.int64)
        if lk is None and len(pos) == d:
            continue
        vectors.append(pos if lk is None else flat[lk.at + pos])
        bounds.append(d if lk is None else check.bounds[check.bound_of(lk.at)])
        looks.append((dstrides[k] if lk is None else lk.stride, k))
        dstrides[k] = 0
    index = separable_index(vectors, bounds)
    shape = tuple(len(shown_positions(d, edge)) for d in table.shape)
    cut = Table(Access(shape, tuple(dstrides), table.data.offset), Access(shape, (0,) * len(shape)),
                tuple(Lookup(s, t * index.shape[1], k) for t, (s, k) in enumerate(looks)))
    return _made_runner(data, index, replace(check, bounds=tuple(bounds), inner=index.shape[1], what=None), di, cut)


def separable_index(vectors: Sequence[Any], bounds: Sequence[int]) -> Any:
    """A separable table's index tensor: one row a lookup (vector t, whose entries are under ``bounds[t]``),
    zero-padded to the longest, so row t starts at ``t * width`` and a Check of ``inner=width`` holds each
    row to its bound; int64 where a bound passes 2^31."""
    import numpy as np

    wide = max(bounds) > 1 << 31
    index = np.zeros((len(vectors), max(len(v) for v in vectors)), dtype=np.int64 if wide else np.int32)
    for row, v in zip(index, vectors):
        row[:len(v)] = v
    return index


def _run_made(data: Arg, made: Any, shape: tuple[int, ...], wide: bool, table: Table, check: Check, di: int,
              gpu: Any, sources: Sequence[Any], sink: Any) -> int:
    from ..gpu.indexed import Index, gather_indexed

    return gather_indexed(gpu, _data(data, sources[di]), Index(made, shape, wide), check, table, sink)


def scatter_plan(op: str, name: str, data: Arg, updates: Arg, idx: Optional[Arg], table: Table,
                 check: Optional[Check], reduction: str = "none", numpy_rule: bool = True,
                 where: tuple[int, int, int] = (0, 2, 1), inner: int = 0) -> list[OutputPlan]:
    """``inner``: how many elements the reference combines in one numpy call
    (ScatterND: a slice's; 0: one scalar at a time), which decides its NaN rule."""
    from ..gpu.scatter import Reduce
    from .tensor_op import OutputPlan

    t = data.dtype
    if reduction != "none":
        allowed = ADD_MUL if reduction in ("add", "mul") else MAX_MIN
        if t.onnx_name not in allowed:
            from ..core.tensor import dtype_by_name

            can = ", ".join(sorted(dtype_by_name(n).name for n in allowed))
            raise OpError(f"{op}: reduction {reduction} on {t} is not run on the device (it runs on {can})")
    if t.is_string:
        values = host_scatter(op, data, updates, idx, table, check)
        return [OutputPlan(name, data.shape, t, values=values, kernel="host")]
    reduce = Reduce(reduction, MAX_MIN.get(t.onnx_name, 0), numpy_rule, inner)
    runner = functools.partial(_run_scatter, data, updates, idx, table, check, reduce, where)
    return [OutputPlan(name, data.shape, t, runner=runner, kernel="scatter",
                       precheck=_prechecker(idx, check, where[2]))]


# ------------------------------------------------------------------ strings, on the host


def _host_norm(idx: Optional[Arg], check: Optional[Check], table: Table):
    import numpy as np

    if idx is None:  # (TensorScatter without write_indices: 0 for every batch entry the table reads one for)
        reach = sum((d - 1) * s for d, s in zip(table.shape, table.index.strides) if d)
        return np.zeros(1 + reach + max((lk.at for lk in table.lookups), default=0), dtype=np.int64)
    flat = np.asarray(idx.values(), dtype=np.int64).reshape(-1)
    for p, v in enumerate(flat):
        d = check.bounds[check.bound_of(p)]
        ok = -d <= v < d if check.mode == WRAP else (0 <= v < d if check.mode == NONNEG else
                                                      check.mode == MODULO or 0 <= v <= d)
        if not ok:
            where = ", ".join(map(str, np.unravel_index(p, idx.shape))) if idx.shape else ""
            from ..gpu.indexed import valid_range

            valid = valid_range(check.mode, d)
            about = f" for {check.what(check.bound_of(p))}" if check.what else ""
            raise OpError(f"{check.op}: {check.name}[{where}] = {int(v)} is out of range {valid}{about}")
    if check.mode in (WRAP, MODULO):  # each index's own bound (RANGE and NONNEG keep the index as it is)
        bounds = np.array([check.bounds[check.bound_of(p)] for p in range(len(flat))], dtype=np.int64)
        flat = np.where(flat < 0, flat + bounds, flat) if check.mode == WRAP else flat % np.maximum(bounds, 1)
    return flat


def _offsets(table: Table, norm, positions=None) -> Any:
    """What the gather kernel computes, for every output element (or those
    at the flat ``positions``), in numpy."""
    import numpy as np

    shape = table.shape
    if positions is not None:
        grids = np.array(np.unravel_index(positions, shape), dtype=np.int64).reshape(len(shape), -1) if shape \
            else np.zeros((0, len(positions)), np.int64)
    else:
        grids = np.indices(shape, dtype=np.int64).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
    off = sum((grids[k] * table.data.strides[k] for k in range(len(shape))), np.zeros(grids.shape[1], np.int64))
    ip = sum((grids[k] * table.index.strides[k] for k in range(len(shape))), np.zeros(grids.shape[1], np.int64))
    if table.mode == 1:
        t = grids[table.time_axis]
        lens = norm[ip]
        off = np.where(t < lens, off + (lens - 1 - 2 * t) * table.time_stride, off)
    elif table.mode == 2:
        t = grids[table.time_axis]
        off = off + ((norm[ip] + t) % table.modulus - t) * table.time_stride
    for lk in table.lookups:  # a separable lookup reads its vector at the element's coordinate on its axis
        off = off + norm[(ip if lk.axis < 0 else grids[lk.axis]) + lk.at] * lk.stride
    return off


def host_gather(data: Arg, idx: Optional[Arg], table: Table, check: Optional[Check]):
    import numpy as np

    norm = _host_norm(idx, check, table)
    flat = np.asarray(data.tensor.strings, dtype=object).reshape(-1)
    if table.size == 0:
        return np.empty(table.shape, dtype=object)
    return flat[_offsets(table, norm)].reshape(table.shape)


def host_scatter(op: str, data: Arg, updates: Arg, idx: Optional[Arg], table: Table, check: Optional[Check]):
    import numpy as np

    norm = _host_norm(idx, check, table)
    out = np.array(np.asarray(data.tensor.strings, dtype=object).reshape(-1))
    if table.size:
        targets = _offsets(table, norm)
        if len(np.unique(targets)) != len(targets):
            from ..gpu.scatter import DUPLICATES

            raise OpError(f"{op}: {DUPLICATES}")
        out[targets] = np.asarray(updates.tensor.strings, dtype=object).reshape(-1)
    return out.reshape(data.shape)


__all__ = ["gather_plan", "gather_made", "separable_index", "scatter_plan", "layout", "NONNEG", "RANGE", "WRAP"]

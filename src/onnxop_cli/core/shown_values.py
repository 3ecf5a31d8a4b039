"""The elements a summary shows of any output, made without the rest.

A printed output (text or --json) of ``threshold`` bytes or more shows only
the first and last EDGE_ITEMS entries of each long axis (core/summary.py);
core/shown.py keeps one more at each end. ``plan_shown`` makes that
narrowed array for any tensor-op output plan (ops/tensor_op.py OutputPlan), in
the first form that fits:

- ``values`` (metadata): indexed on the host, they are a few integers;
- ``pieces`` or ``copy`` (Concat, Pad, Where, fills, ...): the pieces cut to
  the shown entries (core/shown.py), run by the pieces kernel;
- ``cut`` (the indexed gathers: Gather, GatherElements, GatherND, Compress):
  the kernel's table narrowed like a view (ops/indexed_plan.py ``_cut``), the indices
  checked whole first, as for the whole result;
- anything else (scatters, OneHot, NonZero, a cut that does not fit): the
  output streamed through its own kernel, band by band, and only the shown
  elements kept (``Picker``) -- the time of the whole output, the memory of
  one band.

So no printed output is ever held whole, whatever made it. ``stream_shown``
is the same picking for any stream of row-major bytes and any view of it
(a graph output that is a view of a step, core/graph.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence

from .region import Access
from .shown import narrow, narrowed_shape, shown_positions

if TYPE_CHECKING:
    import numpy as np

    from ..ops.tensor_op import OutputPlan
    from .tensor import DType, Tensor


def edge_view(view: Access, edge: int) -> tuple[Access, tuple[int, ...]]:
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
    return Access(tuple(shape), tuple(strides), view.offset), tuple(merged)


def pieces_shown(pieces, shape: tuple[int, ...], dtype, tensors, *, edge: int, backend: str | None = None,
                 text_dtype: str = "", gpu=None) -> np.ndarray:
    """The narrowed array (core/shown.py) that ``pieces`` tile, made by the
    pieces kernel from ``tensors`` (strings: on the host, as a whole string
    result is)."""
    nshape = narrowed_shape(shape, edge)
    from .sources import MemoryBytes, finish
    from .tensor import Tensor

    part = Tensor("shown", nshape, dtype, text_dtype=text_dtype)
    if dtype.is_string:
        from ..ops.tensor_op import OutputPlan
        from .apply_tensors import _host

        part.strings = _host(OutputPlan("shown", nshape, dtype, pieces=list(pieces)), tensors)
        return part.to_numpy()
    import numpy as np

    from ..gpu import get_gpu
    from ..gpu.pieces import Source, run_pieces

    from .value_bytes import SMALL_WINDOW, ValueBytes, prefetched

    gpu = gpu if gpu is not None else get_gpu(backend)
    chunks: list[bytes] = []
    sources = [None if t is None else Source(t.data, t.byteswap) for t in tensors]
    # a graph's value made where it is read (core/value_bytes.py): small windows, a few elements each
    binding = SMALL_WINDOW if any(s is not None and isinstance(s.data, ValueBytes) for s in sources) else None
    with gpu.lock, prefetched(pieces, sources):
        run_pieces(gpu, sources, lambda c: chunks.append(bytes(c)), pieces=pieces, count=part.size,
                   bits=dtype.bits, binding_bytes=binding)
    for t in tensors:
        if t is not None and t.data is not None:
            finish(t.data)
    part.data = MemoryBytes(np.frombuffer(b"".join(chunks), dtype=np.uint8))
    return part.to_numpy()


class Picker:
    """A sink that keeps, of a row-major stream of ``bits``-wide elements,
    those at the sorted element indices ``wanted``: memory of ``wanted``,
    whatever the stream's length. ``raw()`` packs them (sub-byte types as
    they lie in a file: the first element in the low bits)."""

    def __init__(self, wanted: np.ndarray, bits: int) -> None:
        import numpy as np

        self.wanted, self.bits = wanted, bits
        self.nb = max(1, bits // 8)
        self.per = 8 // bits if bits < 8 else 1
        self.out = np.zeros((len(wanted), self.nb), dtype=np.uint8)
        self.element = 0  # element index of the first byte not yet seen (whole elements only)
        self.carry = b""

    def __call__(self, chunk) -> None:
        import numpy as np

        data = np.frombuffer(self.carry + bytes(chunk) if self.carry else chunk, dtype=np.uint8)
        if self.bits < 8:
            count = len(data) * self.per
            lo, hi = np.searchsorted(self.wanted, [self.element, self.element + count])
            at = self.wanted[lo:hi] - self.element
            shift = (at % self.per) * self.bits
            self.out[lo:hi, 0] = (data[at // self.per] >> shift.astype(np.uint8)) & ((1 << self.bits) - 1)
            self.element += count
            return
        whole = len(data) // self.nb
        lo, hi = np.searchsorted(self.wanted, [self.element, self.element + whole])
        if hi > lo:
            self.out[lo:hi] = data[: whole * self.nb].reshape(whole, self.nb)[self.wanted[lo:hi] - self.element]
        self.element += whole
        self.carry = bytes(data[whole * self.nb:])

    def raw(self) -> np.ndarray:
        import numpy as np

        if self.bits >= 8:
            return self.out.reshape(-1)
        values = self.out[:, 0]
        packed = np.zeros(-(-len(values) // self.per), dtype=np.uint8)
        for k in range(self.per):
            part = values[k:: self.per]
            packed[: len(part)] |= (part << (k * self.bits)).astype(np.uint8)
        return packed


def stream_shown(stream: Callable[[Callable], object], view: Access, dtype: DType, name: str, edge: int) -> np.ndarray:
    """The summary's elements of ``view`` (the output's index map over the
    row-major elements that ``stream(sink)`` writes), as an array of the
    narrowed shape: the stream is read through once, only they are kept."""
    import numpy as np

    from .graph_values import element_index

    narrowed, shape = edge_view(view, edge)
    index = element_index(narrowed)
    wanted, back = np.unique(index, return_inverse=True)
    picker = Picker(wanted, dtype.bits)
    stream(picker)
    return _array(picker.raw(), (len(wanted),), dtype, name).reshape(-1)[back.reshape(-1)].reshape(shape)


def _array(raw: np.ndarray, shape: tuple[int, ...], dtype: DType, name: str) -> np.ndarray:
    from .sources import MemoryBytes
    from .tensor import Tensor

    return Tensor(name, shape, dtype, data=MemoryBytes(raw)).to_numpy()


def plan_shown(gpu, p: OutputPlan, tensors: Sequence[Optional[Tensor]], *, edge: int,
               backend: str | None = None) -> np.ndarray:
    """The narrowed array of output plan ``p`` (module docs), whose numpy
    summary is the whole output's."""
    import numpy as np

    nshape = narrowed_shape(p.shape, edge)
    if p.values is not None or p.dtype.is_string and p.pieces is None:
        from .apply_tensors import _host

        whole = _host(p, tensors) if p.dtype.is_string else np.asarray(p.values, dtype=p.dtype.numpy)
        return whole.reshape(p.shape)[np.ix_(*[shown_positions(n, edge) for n in p.shape])]
    pieces = p.moves  # not a conversion's region: its runner makes it
    if pieces is not None:
        narrowed = narrow(pieces, p.shape, edge)
        if narrowed is not None:
            return pieces_shown(narrowed, p.shape, p.dtype, tensors, edge=edge, backend=backend, gpu=gpu)
    from .apply_tensors import _filler, _source
    from .value_bytes import ValueBytes, gathered

    sources = [None if t is None else _source(t) for t in tensors]
    with gpu.lock:
        if p.read_from is not None and any(t is not None and isinstance(t.data, ValueBytes) for t in tensors):
            from .graph_values import element_index

            read = p.read_from(element_index(edge_view(Access.row_major(tuple(p.shape)), edge)[0]))
            if read is not None:  # a gather of a graph's value made where read: its few elements only
                if p.precheck is not None:  # every index checked, as for the whole output
                    p.precheck(gpu, sources)
                return pieces_shown(gathered(*read), p.shape, p.dtype, tensors, edge=edge, gpu=gpu)
        runner = p.cut(edge) if p.cut is not None else None
        if runner is not None:
            if p.precheck is not None:  # every index checked, as for the whole output
                p.precheck(gpu, sources)
            chunks: list[bytes] = []
            runner(gpu, sources, lambda c: chunks.append(bytes(c)))
            raw = np.frombuffer(b"".join(chunks), dtype=np.uint8)
            return _array(raw, nshape, p.dtype, p.name)
        return stream_shown(_filler(gpu, p, tensors), Access.row_major(tuple(p.shape)), p.dtype, p.name, edge)

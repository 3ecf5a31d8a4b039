"""A graph value's bytes made on demand, range by range, through the kernels
that make it (print mode: core/graph.py ``plan(..., shown=True)``).

A printed output needs only its shown elements (core/shown_values.py), and
those need only a few elements of each value up the chain. So in print mode
a large value that a later node reads -- a view that is not its base as it
lies (Expand before Concat), or a family node's output not made (Concat
before Pad, ConstantOfShape before Transpose) -- is handed to the next
kernel as a ``ValueBytes``: a byte source (core/sources.py's protocol)
whose ``readinto(offset, out)`` makes just those bytes, by running the
value's own index map (a view's, as one piece) or its node's pieces cut to
that range (core/pieces.py ``cut``) over its own inputs, which may be
ValueBytes in turn. The kernels read their sources in windows (gpu/pieces.py),
so a narrowed summary reads a few small windows of each value, whatever
its size, and no value is ever made whole, on the device or on the host.

A node made by a kernel of its own (scatters, indexed gathers, OneHot,
NonZero, elementwise arithmetic) cannot be cut to a range: its output is
streamed through its kernel, band by band, and only the bytes asked for are
kept (``prefetch`` keeps, in one pass, every range a narrowed run will read).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from .graph_values import Step, Value

if TYPE_CHECKING:
    from ..gpu.resident import Traffic

SMALL_WINDOW = 1 << 20  # bytes of a window at most when a narrowed run reads a ValueBytes
MAX_KEPT = 256 << 20  # bytes a streamed kernel's output may keep for one narrowed run


class ValueBytes:
    """The row-major bytes of value ``v`` (see the module docs), made on
    demand on ``device()``'s GPU; ``nbytes`` is the whole value's."""

    def __init__(self, v: Value, device: Callable[[], Any], traffic: Traffic) -> None:
        self.v, self.device, self.traffic = v, device, traffic
        self.size = 1
        for d in v.shape:
            self.size *= d
        self.bits = v.dtype.bits
        self.nbytes = (self.size * self.bits + 7) // 8
        self.kept: Optional[list[tuple[int, bytes]]] = None  # (byte offset, bytes) kept by ``prefetch``

    def readinto(self, offset: int, out: memoryview) -> None:
        if self.kept is not None and _streamed(self.v) is not None:
            _serve(self.kept, offset, out)
            return
        e0 = offset * 8 // self.bits
        e1 = min(self.size, -(-(offset + len(out)) * 8 // self.bits))
        filled = 0

        def sink(chunk) -> None:
            nonlocal filled
            n = min(len(chunk), len(out) - filled)
            out[filled:filled + n] = bytes(chunk)[:n]
            filled += n

        if e1 > e0:
            value_range(self.v, self.device(), self.traffic, e0, e1, sink, cap=len(out))
        out[filled:] = bytes(len(out) - filled)

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Keep, streaming a kernel's output once, the bytes of the element
        spans [lo, hi] a narrowed run will read (only a value made by a kernel
        of its own; the others are cut to any range at once)."""
        step = _streamed(self.v)
        if step is None or not spans:
            return
        ranges = _merged([(lo * self.bits // 8, -(-(hi + 1) * self.bits // 8)) for lo, hi in spans])
        total = sum(b - a for a, b in ranges)
        if total > MAX_KEPT:
            from ..errors import OpError

            raise OpError(f"{step.label}: print mode would keep {total} bytes of its output "
                          f"{tuple(step.shape)} to show a later node's elements; write the outputs with -o")
        pieces = {a: bytearray(b - a) for a, b in ranges}
        at = 0

        def sink(chunk) -> None:
            nonlocal at
            data = memoryview(chunk).cast("B")
            for a, b in ranges:
                lo, hi = max(a, at), min(b, at + len(data))
                if lo < hi:
                    pieces[a][lo - a:hi - a] = data[lo - at:hi - at]
            at += len(data)

        gpu = self.device()
        with gpu.lock:
            step.lazy.stream(sink)
        self.traffic.read_back += at
        self.kept = [(a, bytes(pieces[a])) for a, _ in ranges]

    def to_array(self):
        import numpy as np

        buf = np.empty(self.nbytes, dtype=np.uint8)
        self.readinto(0, memoryview(buf))
        return buf

    def close(self) -> None:
        pass


def _streamed(v: Value) -> Optional[Step]:
    """The unmade step under ``v`` whose kernel cannot be cut to a range (a runner), as it lies."""
    from .graph_steps import _as_it_lies

    base = v.base
    if isinstance(base, Step) and base.buffer is None and base.lazy is not None and _as_it_lies(v.view, base.size):
        p = base.lazy.plan
        if p.pieces is None and p.copy is None:
            return base
    return None


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _serve(kept: list[tuple[int, bytes]], offset: int, out: memoryview) -> None:
    """``out`` from the kept ranges; bytes outside them are never read by the
    run that kept them (they lie between the elements it reads): zeros."""
    out[:] = bytes(len(out))
    end = offset + len(out)
    for a, data in kept:
        lo, hi = max(a, offset), min(a + len(data), end)
        if lo < hi:
            out[lo - offset:hi - offset] = data[lo - a:hi - a]


def value_range(v: Value, gpu, traffic: Traffic, e0: int, e1: int, sink, *, cap: int) -> None:
    """Stream elements [e0, e1) of ``v`` (row-major) into ``sink``."""
    from .graph_steps import _as_it_lies

    base = v.base
    if isinstance(base, Step) and base.buffer is None and _as_it_lies(v.view, base.size):
        _step_range(base, gpu, traffic, e0, e1, sink, cap=cap)
        return
    from ..gpu.pieces import Source
    from .graph_steps import Counted
    from .shown import view_piece

    if isinstance(base, Step):
        data = base.buffer if base.buffer is not None else ValueBytes(whole_value(base), lambda: gpu, traffic)
    else:
        data = Counted(base.data, traffic)
    piece = view_piece(v.view.shape, v.view.strides, v.view.offset)
    run_cut([piece], [Source(data, v.swap)], gpu, traffic, e0, e1, v.dtype.bits, sink, cap=cap)


def whole_value(step: Step) -> Value:
    from .view import View

    shape = tuple(step.source.view.shape) if step.source is not None else tuple(step.shape)
    dtype = step.source.dtype if step.source is not None else step.dtype
    return Value(step.label, shape, dtype, step, View.row_major(shape))


def _step_range(step: Step, gpu, traffic: Traffic, e0: int, e1: int, sink, *, cap: int) -> None:
    if step.source is not None:  # a gather step: its elements are its source's, row-major
        value_range(step.source, gpu, traffic, e0, e1, sink, cap=cap)
        return
    from ..gpu.pieces import Source
    from ..ops import c_strides
    from ..ops.tensor_op import Piece

    p = step.lazy.plan
    pieces = p.pieces
    if pieces is None and p.copy is not None:
        pieces = [Piece(p.shape, c_strides(p.shape), 0, p.copy, c_strides(p.shape), 0)]
    if pieces is None:  # a kernel of its own: streamed through, the range kept
        skip, want = e0 * p.dtype.bits // 8, (e1 * p.dtype.bits + 7) // 8 - e0 * p.dtype.bits // 8
        at = 0

        def keep(chunk) -> None:
            nonlocal at
            data = memoryview(chunk).cast("B")
            lo, hi = max(skip, at), min(skip + want, at + len(data))
            if lo < hi:
                sink(data[lo - at:hi - at])
            at += len(data)

        with gpu.lock:
            step.lazy.stream(keep)
        traffic.read_back += at
        return
    sources = [None if t is None else Source(t.data, t.byteswap) for t in step.lazy.tensors]
    run_cut(pieces, sources, gpu, traffic, e0, e1, p.dtype.bits, sink, cap=cap)


def run_cut(pieces, sources, gpu, traffic: Traffic, e0: int, e1: int, bits: int, sink, *, cap: int) -> None:
    """Run ``pieces`` cut to output elements [e0, e1) over ``sources``, in
    windows of about ``cap`` bytes (what was asked for, a page at least)."""
    from ..gpu.pieces import DEFAULT_BAND, run_pieces
    from .pieces import cut

    parts = [c for p in pieces for c in cut(p, e0, e1)]
    binding = max(4096, min(DEFAULT_BAND, cap + 64))
    n = 0

    def counted(chunk) -> None:
        nonlocal n
        n += len(chunk)
        sink(chunk)

    with gpu.lock, prefetched(parts, sources, bits, binding):
        run_pieces(gpu, sources, counted, pieces=parts, count=e1 - e0, bits=bits, binding_bytes=binding)
    traffic.read_back += n


@contextmanager
def prefetched(pieces, sources, bits: int, binding: int) -> Iterator[None]:
    """For one run of ``pieces`` in windows of ``binding`` bytes: each
    ValueBytes source made by a kernel of its own keeps, in one pass, the
    spans its parts read (module docs), and forgets them after the run."""
    from .pieces import fit, span

    kept: list[ValueBytes] = []
    try:
        _prefetch(pieces, sources, bits, binding, kept, fit, span)
        yield
    finally:
        for s in kept:
            s.kept = None


def _prefetch(pieces, sources, bits: int, binding: int, kept: list, fit, span) -> None:
    if not binding:
        return
    window = max(1, (binding - 8) * 8 // max(bits, 8))
    wanted: dict[int, tuple[ValueBytes, list]] = {}  # an input named twice (Concat(t, t)): one pass
    for k, s in enumerate(sources):
        if s is not None and isinstance(s.data, ValueBytes) and _streamed(s.data.v) is not None:
            spans = wanted.setdefault(id(s.data), (s.data, []))[1]
            for p in pieces:
                for q in fit(p, window):
                    for who, strides, offset in ((q.src, q.src_strides, q.src_offset),
                                                 (q.mask, q.mask_strides, q.mask_offset),
                                                 (q.other, q.other_strides, q.other_offset)):
                        if who == k and q.size:
                            spans.append(span(q.shape, strides, offset))
    for data, spans in wanted.values():
        kept.append(data)
        data.prefetch(spans)

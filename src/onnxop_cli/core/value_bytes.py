"""A graph value's bytes made on demand, range by range, through the kernels
that make it (print mode: core/graph.py ``plan(..., shown=True)``).

A printed output needs only its shown elements (core/shown_values.py), and
those need only a few elements of each value up the chain. So in print mode
a large value that a later node reads -- a view that is not its base as it
lies (Expand before Concat), or a tensor-op node's output not made (Concat
before Pad, ConstantOfShape before Transpose) -- is handed to the next
kernel as a ``ValueBytes``: a byte source (core/sources.py's protocol)
whose ``readinto(offset, out)`` makes just those bytes, by running the
value's own index map (a view's, as one piece) or its node's pieces cut to
that range (core/pieces.py ``cut``) over its own inputs, which may be
ValueBytes in turn. The kernels read their sources in windows (gpu/pieces.py),
so a narrowed summary reads a few small windows of each value, whatever
its size, and no value is ever made whole, on the device or on the host.

An indexed gather (Gather, GatherElements, GatherND, ReverseSequence)
places the few elements asked for by its index map (ops/indexed_plan.py
``read_from``: the indices read on the host and checked as its kernel
checks them), and the pieces kernel copies them. A node made by a kernel of
its own (the scatters, NonZero, Cast and the arithmetic) cannot be cut to a
range: its output is streamed through its kernel, band by band, and only
the bytes asked for are kept. A node that reads a value whole on the host
(NonZero's count) is refused past HOST_WHOLE bytes.

Before a kernel runs (``run_parts``), each ValueBytes source it reads is
told the elements its parts read, listed (``prefetched``): it makes just
those, as runs of consecutive elements, in one run of its own kernel (a
kernel of its own: one pass, the runs kept), and serves the run's windows
from them -- the bytes between them are never read by that run. So each
value up the chain makes the few elements the next one reads, not the
windows around them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from .graph_values import Step, Value

if TYPE_CHECKING:
    from ..gpu.resident import Traffic

SMALL_WINDOW = 1 << 20  # bytes of a window at most when a narrowed run reads a ValueBytes
HOST_WHOLE = 1 << 30  # bytes of a value a node may read whole on the host in print mode
# elements a run's parts may read of a source for them to be listed one by one (and kept: 32 MiB at most)
MAX_LISTED = 1 << 22


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
        self.kept: Optional[list[tuple[int, bytes]]] = None  # (byte offset, bytes) kept for one run

    def readinto(self, offset: int, out: memoryview) -> None:
        if self.kept is not None:
            _serve(self.kept, offset, out)
            return
        e0 = offset * 8 // self.bits
        e1 = min(self.size, -(-(offset + len(out)) * 8 // self.bits))
        filled = 0

        def sink(chunk) -> None:  # straight into ``out``: a window is never held twice
            nonlocal filled
            n = min(len(chunk), len(out) - filled)
            out[filled:filled + n] = memoryview(chunk).cast("B")[:n]
            filled += n

        if e1 > e0:
            produce(self.v, self.device(), self.traffic, [(e0, e1)], sink, cap=len(out))
        out[filled:] = bytes(len(out) - filled)

    def made(self, runs: list[tuple[int, int]], *, cap: int = SMALL_WINDOW) -> bytes:
        """The bytes of the element ``runs`` [a, b), one after another."""
        chunks: list[bytes] = []
        produce(self.v, self.device(), self.traffic, runs, lambda c: chunks.append(bytes(c)), cap=cap)
        return b"".join(chunks)

    def keep(self, runs: list[tuple[int, int]]) -> None:
        """Make the element ``runs`` now and serve reads from them (module docs)."""
        per = 8 // self.bits if self.bits < 8 else 1  # whole bytes of a sub-byte type
        runs = _merged([(a - a % per, min(self.size, -(-b // per) * per)) for a, b in runs])
        data = self.made(runs)
        kept, at = [], 0
        for a, b in runs:
            n = (b - a) * self.bits // 8
            kept.append((a * self.bits // 8, data[at:at + n]))
            at += n
        self.kept = kept

    def to_array(self):
        """All the bytes, for a node that reads a value on the host (NonZero's
        count, Compress's condition): refused past HOST_WHOLE bytes."""
        import numpy as np

        if self.nbytes > HOST_WHOLE:
            from ..errors import OpError

            raise OpError(f"print mode would read its input {self.v.name!r} {tuple(self.v.shape)} "
                          f"({self.nbytes} bytes) whole on the host; print mode holds at most {HOST_WHOLE} bytes")
        buf = np.empty(self.nbytes, dtype=np.uint8)
        self.readinto(0, memoryview(buf))
        return buf

    def close(self) -> None:
        pass


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
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


def produce(v: Value, gpu, traffic: Traffic, runs: list[tuple[int, int]], sink, *, cap: int) -> None:
    """Stream the elements of ``v`` (row-major) in ``runs`` ([a, b) each), one
    run after another, into ``sink``."""
    from .graph_values import as_it_lies

    base = v.base
    if isinstance(base, Step) and base.buffer is None and as_it_lies(v.view, base.size):
        _step_runs(base, gpu, traffic, runs, sink, cap=cap)
        return
    from ..gpu.pieces import Source
    from .graph_values import Counted
    from .shown import view_piece

    if isinstance(base, Step):
        data = base.buffer if base.buffer is not None else ValueBytes(whole_value(base), lambda: gpu, traffic)
    else:
        data = Counted(base.data, traffic)
    piece = view_piece(v.view)
    run_parts(_cut_runs([piece], runs), [Source(data, v.swap)], gpu, traffic, runs, v.dtype.bits, sink, cap=cap)


def whole_value(step: Step) -> Value:
    from .region import Access

    shape = tuple(step.source.view.shape) if step.source is not None else tuple(step.shape)
    dtype = step.source.dtype if step.source is not None else step.dtype
    return Value(step.label, shape, dtype, step, Access.row_major(shape))


def _step_runs(step: Step, gpu, traffic: Traffic, runs, sink, *, cap: int) -> None:
    if step.source is not None:  # a gather step: its elements are its source's, row-major
        produce(step.source, gpu, traffic, runs, sink, cap=cap)
        return
    plan_runs(step.lazy.plan, step.lazy.tensors, step.lazy.stream, gpu, traffic, runs, sink, cap=cap)


def plan_runs(p, tensors, stream, gpu, traffic: Traffic, runs, sink, *, cap: int) -> None:
    """The element ``runs`` of output plan ``p`` over ``tensors``
    (``stream(sink)``: its whole output through its own kernel)."""
    from ..gpu.pieces import Source

    sources = [None if t is None else Source(t.data, t.byteswap) for t in tensors]
    pieces = p.moves  # not a conversion's region: its runner makes it
    if pieces is None and p.read_from is not None:  # an indexed gather: its elements placed by its index map
        import numpy as np

        for group in _groups(runs, CHUNK):  # index arithmetic of CHUNK elements at a time
            read = p.read_from(np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in group]))
            if read is None:  # too many indices to read on the host (so for the first group): streamed
                break
            run_parts(gathered(*read), sources, gpu, traffic, group, p.dtype.bits, sink, cap=cap)
        else:
            return
    if pieces is None:  # a kernel of its own: streamed through once, the runs kept
        _stream_runs(stream, p.dtype.bits, gpu, traffic, runs, sink)
        return
    run_parts(_cut_runs(pieces, runs), sources, gpu, traffic, runs, p.dtype.bits, sink, cap=cap)


def gathered(src: int, offsets) -> list:
    """Pieces that copy elements ``offsets`` of input ``src`` to output
    elements 0, 1, ...: each stretch of evenly stepping offsets one piece."""
    import numpy as np

    from .pieces import Piece
    from .region import load

    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
    n = len(offsets)
    d = np.diff(offsets)
    starts = np.r_[0, np.flatnonzero(d[1:] != d[:-1]) + 1] if n > 1 else np.zeros(1, np.int64)
    ends = np.r_[starts[1:], n]
    return [Piece((int(e - a),), (1,), int(a), load(src, (int(e - a),), (int(d[a]) if e - a > 1 else 0,), int(offsets[a])))
            for a, e in zip(starts, ends)]


CHUNK = 1 << 20  # output elements an indexed gather places at a time


def _groups(runs, most: int):
    """``runs`` cut into groups of at most ``most`` elements each."""
    group, count = [], 0
    for a, b in runs:
        while b > a:
            take = min(b - a, most - count)
            group.append((a, a + take))
            count += take
            a += take
            if count == most:
                yield group
                group, count = [], 0
    if group:
        yield group


def _stream_runs(stream, bits: int, gpu, traffic: Traffic, runs, sink) -> None:
    """The element ``runs`` of an output streamed whole through its kernel (``stream(sink)``) once."""
    ranges = [(a * bits // 8, (b * bits + 7) // 8) for a, b in runs]
    order = sorted(range(len(ranges)), key=lambda k: ranges[k])
    pieces = [bytearray(b - a) for a, b in ranges]
    at = 0

    def keep(chunk) -> None:
        nonlocal at
        data = memoryview(chunk).cast("B")
        for k in order:
            a, b = ranges[k]
            if a >= at + len(data):
                break
            lo, hi = max(a, at), min(b, at + len(data))
            if lo < hi:
                pieces[k][lo - a:hi - a] = data[lo - at:hi - at]
        at += len(data)

    with gpu.lock:
        stream(keep)
    traffic.read_back += at
    for piece in pieces:
        sink(memoryview(piece))


def _cut_runs(pieces, runs):
    """The parts of ``pieces`` in each run, placed one run after another."""
    from dataclasses import replace

    from .pieces import cut

    parts, at = [], 0
    for a, b in runs:
        parts += [replace(c, dst_offset=c.dst_offset + at) for p in pieces for c in cut(p, a, b)]
        at += b - a
    return parts


def run_parts(parts, sources, gpu, traffic: Traffic, runs, bits: int, sink, *, cap: int) -> None:
    """Run ``parts`` (whose output is the runs' elements) over ``sources``, in
    windows of about ``cap`` bytes (what was asked for, a page at least)."""
    from ..gpu.pieces import BAND, run_pieces

    count = sum(b - a for a, b in runs)
    binding = max(4096, min(BAND, cap + 64))  # windows of 16 MiB at most, however large the read
    n = 0

    def counted(chunk) -> None:
        nonlocal n
        n += len(chunk)
        sink(chunk)

    with gpu.lock, prefetched(parts, sources):
        run_pieces(gpu, sources, counted, pieces=parts, count=count, bits=bits, binding_bytes=binding)
    traffic.read_back += n


@contextmanager
def prefetched(parts, sources) -> Iterator[None]:
    """For one run of ``parts``: each ValueBytes source makes and keeps the
    elements the parts read (module docs), and forgets them after the run."""
    kept: list[ValueBytes] = []
    try:
        for data, runs in _listed(parts, sources).items():
            kept.append(data)
            data.keep(runs)
        yield
    finally:
        for data in kept:
            data.kept = None


def _listed(parts, sources) -> dict:
    """Each ValueBytes source's elements read by ``parts``, as runs; a source
    the parts read more than MAX_LISTED elements of is left to read its windows."""
    import numpy as np

    from .graph_values import element_index

    wanted: dict[int, list] = {}  # an input named twice (Concat(t, t)): listed once
    for k, s in enumerate(sources):
        if s is None or not isinstance(s.data, ValueBytes):
            continue
        entry = wanted.setdefault(id(s.data), [s.data, [], 0])
        for q in parts:
            for x in q.loads:
                if x.input == k and q.size:
                    entry[2] += q.size
                    if entry[2] <= MAX_LISTED:
                        entry[1].append(element_index(x.at))
    out = {}
    for data, found, count in wanted.values():
        if not found or count > MAX_LISTED:
            continue
        # sorted, each once: a sort and a mask, not np.unique (numpy 2.4 hashes: 6.7 CPU s for 4M indices, 0.1 this way)
        index = np.sort(np.concatenate(found))
        first = np.ones(index.size, dtype=bool)
        first[1:] = index[1:] != index[:-1]
        index = index[first]
        breaks = np.flatnonzero(np.diff(index) != 1) + 1
        out[data] = [(int(r[0]), int(r[-1]) + 1) for r in np.split(index, breaks)]
    return out


def make_step(gpu, step: Step, traffic: Traffic, shown: bool = False) -> None:
    """Gather ``step``'s source into its buffer (strings: on the host);
    ``shown``: print mode (a step it reads that is not made: made where read)."""
    from ..gpu.gather import gather_resident
    from ..errors import OnnxopError
    from .graph_values import host_array

    v = step.source
    if v.dtype.is_string:
        step.strings = host_array(v)
        return
    source = read_source(v.base, gpu, traffic, shown) if isinstance(v.base, Step) else v.base.data
    try:
        step.buffer = gather_resident(gpu, source, v.view.simplified(), v.dtype.bits, swap=v.swap, traffic=traffic)
    except ValueError as e:  # a view outside its source: a bug, said plainly
        raise OnnxopError(f"{step.label}: {e}") from None


def read_source(step: Step, gpu, traffic: Traffic, shown: bool = False):
    """What a kernel reads of ``step``'s elements: its buffer (made now if
    need be), or in print mode (``shown``, or a tensor-op output planned so), a
    step not made: its bytes made where they are read (core/value_bytes.py)."""
    if step.buffer is None and (step.lazy is not None and step.lazy.rt.shown or shown and step.source is not None):
        return ValueBytes(whole_value(step), lambda: gpu, traffic)
    from .graph_values import buffer_of

    return buffer_of(step)

"""How a strided view is cut into GPU work: pure index arithmetic, no wgpu.

A *band* is a run of the output that fits one binding; it is written whole
in the dst buffer and then handed to the sink, so the sink sees the output
in order. A band is at most 2 x rank *boxes* (a range of one axis times all
of the axes after it: the way a row-major range decomposes), each contiguous
in the output. An *upload* fills the src buffer from the source, and each of
its *dispatches* writes one box from it:

- a *window*: one contiguous source range of at most one binding. When the
  band's whole source range fits one, all its boxes read from it (Fortran
  order, big-endian, slices, broadcasts, tiles: the source is read about once);
- *packed runs*: when the band's source range is larger (a transpose of a
  tensor larger than a binding, whose every output row reads the whole
  source), each box's own elements are read as runs along its unit-stride
  axis and packed, and the box reads them with packed strides: the source is
  again read about once, at the price of one read call per run;
- otherwise (no unit-stride axis, or so many short runs that re-reading is
  cheaper) a box reads its source range through as many windows as it
  spans, and each dispatch writes the elements whose source lies in its window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..core.region import Access

# Costs in bytes copied, to choose between packed runs and windows: one read
# call (a FileBytes read opens the file), and one byte through the gather
# kernel (about 10x a flat copy's on lavapipe: scripts/bench_gather.py). A
# box read through n windows pays n - 1 extra windows and kernel passes.
# A speed model measured on lavapipe, not a choose.py question: it weighs
# each box's runs against its windows, one answer per adapter would not do.
RUN_COST = 16 << 10
KERNEL_COST = 8


@dataclass(frozen=True)
class Box:
    """Band elements [e0, e0 + count): axis ``axis`` from some index for
    ``extent`` steps, all of each later axis. ``origin`` is the source element
    of its first element; ``lo``..``hi`` its source range."""

    e0: int
    count: int
    axis: int
    extent: int
    origin: int
    lo: int
    hi: int

    def words(self, bits: int) -> tuple[int, int]:
        """(first dst word, words) the box's dispatch writes."""
        if bits >= 32:
            per = bits // 32
            return self.e0 * per, self.count * per
        per = 32 // bits
        first = self.e0 // per
        return first, (self.e0 + self.count - 1) // per - first + 1


@dataclass(frozen=True)
class Dispatch:
    """One box, read from the current upload: ``strides`` for its axes
    (box.axis onwards), ``base`` the upload element of its first element;
    ``keep``: some of its elements lie outside this upload."""

    box: Box
    strides: tuple[int, ...]
    base: int
    keep: bool


@dataclass(frozen=True)
class Upload:
    """What goes into the src buffer: (source byte, upload byte, bytes) runs,
    ``elements`` valid elements from upload element 0, and the dispatches."""

    runs: list[tuple[int, int, int]]
    elements: int
    dispatches: list[Dispatch]


@dataclass(frozen=True)
class Plan:
    """The sizes a view is cut to, in elements: bands of ``band``, windows of
    at most ``window`` starting at multiples of ``align``, from a source of
    ``nbytes`` bytes of ``bits``-bit elements. ``pack``
    false: uploads are whole windows only, as a buffer-to-buffer copy from a
    device source needs (4-byte aligned offsets: windows start at 16-byte
    words, packed runs do not)."""

    view: Access  # simplified
    bits: int
    band: int
    window: int
    align: int
    nbytes: int
    pack: bool = True

    def bands(self) -> Iterator[tuple[int, int, list[Upload]]]:
        """(first output element, elements, uploads) per band, in output order."""
        count = self.view.size
        for start in range(0, count, self.band):
            n = min(self.band, count - start)
            yield start, n, self.band_uploads(start, n)

    def band_uploads(self, start: int, n: int) -> list[Upload]:
        """The uploads of the band of output elements [start, start + n)."""
        return self.uploads(list(boxes(self.view, start, start + n)))

    def uploads(self, band: list[Box]) -> list[Upload]:
        lo, hi = min(b.lo for b in band), max(b.hi for b in band)
        first = lo - lo % self.align
        if hi - first < self.window:
            return [self.windowed(first, band)]
        out: list[Upload] = []
        for box in band:
            windows = range(box.lo - box.lo % self.align, box.hi + 1, self.window)
            window_bytes, box_bytes = self.window * self.bits // 8, box.count * self.bits // 8
            packed = self.packed(box, budget=(len(windows) - 1) * (window_bytes + KERNEL_COST * box_bytes))
            if packed is not None:
                out.append(packed)
            else:
                out.extend(self.windowed(w, [box]) for w in windows)
        return out

    def windowed(self, first: int, band: list[Box]) -> Upload:
        """Source elements from ``first`` up to what ``band`` reads, at most a window."""
        n = min(self.window, max(b.hi for b in band) + 1 - first)
        v = self.view
        start = first * self.bits // 8
        nbytes = min(-(-(first + n) * self.bits // 8), self.nbytes) - start
        dispatches = [
            Dispatch(b, v.strides[b.axis :], b.origin - first, b.lo < first or b.hi >= first + n)
            for b in band
            if b.lo < first + n and b.hi >= first
        ]
        return Upload([(start, 0, nbytes)], n, dispatches)

    def packed(self, box: Box, budget: int) -> Upload | None:
        """The box's elements as runs along its unit-stride axis, packed in
        box order; None where that cannot be done, or where its read calls
        would cost ``budget`` bytes or more (the extra cost of its windows)."""
        if not self.pack:
            return None
        v, bits = self.view, self.bits
        axes = range(box.axis, len(v.shape))
        extent = {k: box.extent if k == box.axis else v.shape[k] for k in axes}
        units = [k for k in axes if abs(v.strides[k]) == 1 and extent[k] > 1]
        if not units:
            return None
        unit = max(units, key=lambda k: extent[k])
        run, step = extent[unit], v.strides[unit]
        per_byte = max(1, 8 // bits)
        others = [k for k in axes if k != unit and v.strides[k] != 0 and extent[k] > 1]
        start = box.origin + min(0, (run - 1) * step)
        if per_byte > 1 and (start % per_byte or any(v.strides[k] % per_byte for k in others)):
            return None  # a run would start inside a byte
        # Each run starts a byte, and for elements of 4 bytes or more a
        # 16-byte word where the window holds the padding, so the packed
        # strides are whole words for the blocked transpose kernel
        # (gpu/render/transpose.py); the padding is never read.
        count = 1
        for k in others:
            count *= extent[k]
        slot = -(-run // per_byte) * per_byte
        if bits >= 32:
            word = 128 // bits
            if -(-run // word) * word * count <= self.window:
                slot = -(-run // word) * word
        packed, size = {}, slot
        for k in reversed(others):
            packed[k] = size
            size *= extent[k]
        if size > self.window or count * RUN_COST >= budget:
            return None
        run_bytes = -(-run * bits // 8)
        # the runs in box order (the first of ``others`` outermost), built
        # axis by axis: a large transpose has millions of them
        sources, intos = [start], [0]
        for k in others:
            step_k, packed_k, steps = v.strides[k], packed[k], range(extent[k])
            sources = [o + i * step_k for o in sources for i in steps]
            intos = [o + i * packed_k for o in intos for i in steps]
        runs = [(s * bits // 8, t * bits // 8, run_bytes) for s, t in zip(sources, intos)]
        strides = tuple(step if k == unit else packed.get(k, 0) for k in axes)
        return Upload(runs, size, [Dispatch(box, strides, 0 if step == 1 else run - 1, False)])


def boxes(v: Access, start: int, end: int) -> Iterator[Box]:
    """Output elements [start, end) as boxes: at each step the outermost axis
    whose whole inner block starts here and still fits, as far along it as fits."""
    rank = len(v.shape)
    inner = [1] * rank
    for k in range(rank - 2, -1, -1):
        inner[k] = inner[k + 1] * v.shape[k + 1]
    e = start
    while e < end:
        a = next(k for k in range(rank) if e % inner[k] == 0 and end - e >= inner[k])
        index = [(e // inner[k]) % v.shape[k] for k in range(rank)]
        extent = min(v.shape[a] - index[a], (end - e) // inner[a])
        origin = v.offset + sum(i * s for i, s in zip(index, v.strides))
        lo = hi = origin
        for k in range(a, rank):
            reach = ((extent if k == a else v.shape[k]) - 1) * v.strides[k]
            lo, hi = lo + min(0, reach), hi + max(0, reach)
        yield Box(e - start, extent * inner[a], a, extent, origin, lo, hi)
        e += extent * inner[a]


def in_order(plan: Plan) -> bool:
    """Whether the plan reads the source front to back, each byte once at most."""
    end = 0
    for _, _, uploads in plan.bands():
        for upload in uploads:
            for source, _, n in upload.runs:
                if source < end:
                    return False
                end = source + n
    return True

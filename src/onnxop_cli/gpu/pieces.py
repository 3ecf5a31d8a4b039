"""Run an output's pieces (core/pieces.py, planned by ops/tensor_op.py) through gpu/render/pieces.py's kernels.

    for each band of the output (at most one binding):
        clear dst; for each piece (cut to the band, and to windows of its
        sources that fit one binding): upload the windows, one dispatch
        readback dst --sink-->

The sink sees the output in order, band by band; host and GPU memory are a few buffers of at most one binding
whatever the sizes. A piece's source is any input (so Concat of 300 inputs binds two buffers, not 300), and the
window uploaded is only the part the piece reads. Cutting is pure index arithmetic (core/pieces.py's ``cut``,
``fit``), and so are a part's Params records (gpu/piece_records.py); a ``Run`` holds the buffers and bind group,
uploads each group of parts' windows, dispatches and reads each band back. Where's select and OneHot
(gpu/word_kernels.py) drive one kernel of this layout over a ``Run``'s buffers.

By runs (gpu/render/pieces.py's ``words`` and ``edges``, two dispatches in the same pass on the general
kernel's buffers): a part whose innermost axis is contiguous in the output and in its source (gpu/piece_records.py's
``eligible``): Concat's, Split's and Pad's interior, fills, Trilu's triangle, and a view that repeats its rows
(``repeat_mover``: Expand, Tile). Every other part keeps the general kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

from ..core.pieces import Piece, cut, extent, fields, fit, flatten, moved, ranges
from ..core.region import Access, Select, c_strides, load
from . import piece_records
from .bands import Band, Window, fill
from .buffers import WORD, BufferUsage, Owned, binding_limit, can_map, dispatch_limit, env_poison, round_up
from .device import Gpu
from .piece_records import SLOTS, eligible, usable
from .program import compiled
from .render.frame import Frame
from .render.pieces import EDGES, GENERAL, PARAMS, ROWS_PARAMS, WORDS
from .resident import DeviceBuffer, DeviceSink

DEFAULT_BAND = 64 << 20  # bytes of a window at most (and of a band, below BAND)
# Bands of at most 16 MiB, as Where's select's (gpu/word_kernels.py): Pad's 64 MiB float32 output (one
# band of 64 MiB against four) ran at 2.0-2.3x the gather kernel's GB/s against 4.4-4.7x, Concat's 2.6-2.8x
# against 2.6-3.4x (Mesa 22.3, load 3.6-3.8, benchmarks/ops_whole_process.py kernel, 2026-12-01)
BAND = 16 << 20
LOOKED = 64  # bands of an output that size its windows (reach)
BATCH = 128  # dispatches per submission
# (src, mask, dst, params at a dynamic offset, axes, other): every kernel of a run (by runs, the select, OneHot's)
KINDS = ("read-only-storage", "read-only-storage", "storage", "uniform+offset", "read-only-storage",
         "read-only-storage")
REPEATS = True  # repeat_mover; benchmarks and tests turn it off to compare with the gather kernel

Sink = Callable[[memoryview], None]


@dataclass
class Source:
    """An input's bytes (a sources.ByteSource) with its big-endian swap unit."""

    data: Any
    swap: int = 0


def mappable(gpu: Gpu, sources: Sequence[Optional[Source]], sink: Sink) -> bool:
    """Whether a run's windows and dst can be mapped themselves, no staging copies (``Run``'s ``mapped``):
    a CPU adapter (``can_map``), host sources and a host sink (not a graph's device buffers)."""
    return can_map(gpu) and not isinstance(sink, DeviceSink) and not any(
        s is not None and isinstance(s.data, DeviceBuffer) for s in sources)


class Runs:
    """The runs of one node's outputs, kept for the next output that needs the same buffers (Split's outputs, one
    run each: 8 outputs of 2 MiB spent a fifth of the call making and clearing the same six buffers and bind
    group 8 times). The caller holds it for one call under the engine's lock and releases it once (``release``);
    a run is reused only whole (same band, windows and kernels), and each band clears its dst first, so nothing
    of one output reaches the next."""

    def __init__(self) -> None:
        self.kept: dict[tuple, Run] = {}
        self.made = 0

    def get(self, key: tuple, make) -> Run:
        run = self.kept.get(key)
        if run is None:
            run = self.kept[key] = make()
            self.made += 1
        return run

    def release(self) -> None:
        for run in self.kept.values():
            run.release()
        self.kept.clear()


def run_pieces(gpu: Gpu, sources: Sequence[Optional[Source]], sink: Sink, *, pieces: Sequence[Piece], count: int,
               bits: int, binding_bytes: Optional[int] = None, max_groups_per_dim: Optional[int] = None,
               poison: Optional[int] = None, reuse: Optional[Runs] = None) -> int:
    """Stream the ``count`` output elements (``bits`` wide) that ``pieces`` tile into ``sink``, in order; returns
    the bytes written. ``reuse``: the node's other outputs' runs (``Runs``), which then keeps this one too."""
    if count == 0:
        return 0
    cap, band_bytes = one_kernel_bands(gpu, binding_bytes, count, bits, BAND)
    band = band_bytes * 8 // bits
    pieces = [flatten(p) for p in moved(pieces)]  # a fill of the whole output: one long row

    def cuts(start: int) -> list[Piece]:
        """The pieces cut to the band at ``start``: made when needed, never a list of every band's
        (that grew with the output: a Tile of 480 PB, 2.8e10 bands, filled 20 GB before a byte)."""
        return [c for p in pieces for c in cut(p, start, min(start + band, count))]

    # windows as large as the largest part reads (plus a word each side), at most one binding: a
    # window sized for a whole piece (Pad's 64 MiB source, read a 16 MiB band at a time) cost its
    # first touch (Mesa 25: 0.16 s against 0.06 s). No part reads more than its piece
    masked = any(fields(p.value).mask is not None for p in pieces)
    width = max(bits, 8) if masked else bits  # what a window's element limit is counted in: the mask is 8-bit
    most = min(cap - 2 * WORD, max([extent(p, width) for p in pieces] + [0]))
    read = reach(range(0, count, band), lambda start: max([0] + [extent(c, width) for c in cuts(start)]), most)
    window_bytes = min(cap, round_up(read + 2 * WORD, 16))  # whole vec4s for the runs kernels
    if poison is None:
        poison = env_poison()
    # the src, mask and other windows: no mask (all but Where), no select piece: a word, bound but never read
    sizes = (window_bytes, window_bytes if masked else WORD,
             window_bytes if any(isinstance(p.value, Select) for p in pieces) else WORD)
    # a window's elements: it starts up to one word before the first it needs; the mask is 8-bit
    limit = (window_bytes - 2 * WORD) * 8 // width
    mapped = mappable(gpu, sources, sink)
    def make() -> Run:
        return Run(gpu, band_bytes, sizes, max_groups_per_dim, mapped=mapped, by_runs=usable(band_bytes, window_bytes))

    key = (band_bytes, sizes, max_groups_per_dim, mapped)
    run = make() if reuse is None else reuse.get(key, make)

    def each(start: int, _n: int, _extra: None, nbytes: int) -> None:
        run.band(sources, [q for c in cuts(start) for q in fit(c, limit)], bits, round_up(nbytes, 4), poison, limit)

    bands = ((start, min(band, count - start), None) for start in range(0, count, band))
    return run.stream(bands, bits, sink, each, release=reuse is None)


def reach(bands: Iterable[Any], reads: Callable[[Any], int], most: int) -> int:
    """The most any of ``bands`` ``reads`` (bands made as they run), looking until one reaches ``most``; past the
    first LOOKED bands (1 GiB of output, where a larger window's first touch is lost in the run) ``most``
    itself, so that a Tile of 4.8 TB (286,000 bands) does not cut every band twice before its first byte."""
    got = 0
    for k, b in enumerate(bands):
        if got >= most:
            break
        if k == LOOKED:
            return most
        got = max(got, reads(b))
    return got


def repeat_mover(gpu: Any, data: Any, view: Access, bits: int, swap: int) -> Optional[Callable[[Any], int]]:
    """A sink -> bytes mover by runs for ``view`` of ``data`` where it repeats its source (Expand's
    broadcast axes, Tile's copies: an axis of stride 0) with rows contiguous in it, else None (the gather
    kernel's, gpu/gather.py, which computes every output element's source address). Such a view is rows
    of whole source rows, each read once per repeat; measured (benchmarks/ops_speed.py, Mesa 22.3, 2048^2
    float32): Expand of a row 0.33-0.43x the gather kernel's transpose, Tile 2 x 2 0.20-0.57x on the
    gather kernel (docs/operators.md#speed has the figures by runs)."""
    if not REPEATS or swap or view.size == 0 or not 2 <= len(view.shape) <= SLOTS:
        return None
    if 0 not in view.strides[:-1] or view.strides[-1] != 1:
        return None
    p = Piece(tuple(view.shape), c_strides(tuple(view.shape)), 0, load(0, view.shape, view.strides, view.offset))
    if not eligible(p, bits, swap, gpu):
        return None
    return lambda sink: run_pieces(gpu, [Source(data)], sink, pieces=[p], count=view.size, bits=bits)


def one_kernel_bands(gpu: Gpu, binding_bytes: Optional[int], count: int, bits: int, most: int) -> tuple[int, int]:
    """(window cap, band bytes) of a run over ``count`` elements of ``bits`` (run_pieces; one kernel:
    gpu/word_kernels.py's run_select and run_one_hot): windows of at most one binding (``binding_bytes`` forces
    smaller), bands of at most ``most`` bytes and no more than the output, whole words each."""
    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = max(WORD, cap - cap % WORD)
    return cap, min(cap, most, round_up((count * bits + 7) // 8, WORD))


class Run(Owned):
    def __init__(self, gpu: Gpu, band_bytes: int, sizes: tuple[int, int, int], max_groups_per_dim: Optional[int], *,
                 kernel: Frame = GENERAL, shared_upload: int = 0, mapped: bool = False, by_runs: bool = False) -> None:
        """Buffers and a bind group for one run of ``kernel`` (a rendered kernel of this layout).
        ``sizes``: the src, mask and other windows' bytes; ``shared_upload``: the bytes of one staging buffer
        for the three (each upload submitted before the next), else one each; ``mapped`` (``can_map``
        adapters, host sources and sinks): the windows and dst mapped themselves, no staging; ``by_runs``:
        parts ``eligible`` takes run by runs. ``taken`` counts the parts each kernel ran (tests check the path)."""
        self.gpu = gpu
        self.taken = {"runs": 0, "general": 0, "mapped": mapped}
        self.max_dim = dispatch_limit(gpu, max_groups_per_dim)
        self.wg = GENERAL.schedule.wg * GENERAL.schedule.per  # elements per workgroup
        self.stride = max(256, gpu.limits.get("min-uniform-buffer-offset-alignment", 256))
        src_bytes, mask_bytes, other_bytes = sizes
        U = BufferUsage
        self.buffers: list[Any] = []
        with gpu.errors("allocating pieces buffers"):
            self.kernel = compiled(gpu, kernel, KINDS)
            # the runs kernels' words and edges, on the pieces kernel's layout
            self.runs = tuple(compiled(gpu, k, KINDS) for k in (WORDS, EDGES)) if by_runs else None
            shared = (self._buffer("upload", shared_upload, U.MAP_WRITE | U.COPY_SRC) if shared_upload and not mapped
                      else Window.OWN)
            windows = [Window(self, name, size, mapped, shared, label) for name, size, label in (
                ("src", src_bytes, "upload"), ("mask", mask_bytes, "upload-mask"),
                ("other", other_bytes, "upload-other"))]
            (self.upload, self.src), (self.upload_mask, self.mask), (self.upload_other, self.other) = (
                (w.upload, w.buffer) for w in windows)
            self.out = Band(self, band_bytes, mapped)
            self.dst, self.readback = self.out.dst, self.out.out
            # a part by runs takes two records (its two dispatches)
            self.params = self._buffer("params", self.stride * 2 * BATCH, U.UNIFORM | U.COPY_DST)
            # one binding for every kernel of this layout: the largest of their Params
            params_bytes = max(kernel.PARAMS.size, PARAMS.size, ROWS_PARAMS.size)
            self.axes_bytes = 16 * 2 * SLOTS * BATCH
            self.axes = self._buffer("axes", self.axes_bytes, U.STORAGE | U.COPY_DST)
            self.bind_group = self.kernel.bind([
                (self.src, 0, src_bytes), (self.mask, 0, mask_bytes), (self.dst, 0, band_bytes),
                (self.params, 0, params_bytes), (self.axes, 0, self.axes_bytes), (self.other, 0, other_bytes),
            ])

    def band(self, sources: Sequence[Optional[Source]], parts: list[Piece], bits: int, n4: int, poison,
             limit: int) -> None:
        """Band ``parts`` into dst (``n4`` bytes cleared or poisoned first), windows of ``limit`` elements."""
        with self.gpu.errors("pieces band"):
            self.out.reset(n4, poison)
        # consecutive parts from one source share an upload while its window fits
        group: list[Piece] = []
        window: Optional[tuple[int, int, int, int, int, int]] = None  # src lo, hi, mask lo, hi, other lo, hi
        for part in parts:
            w = ranges(part)
            merged = _merge(window, w) if group and _same_inputs(group[0], part) else None
            if merged is not None and _fits(merged, limit) and len(group) < BATCH:
                group.append(part)
                window = merged
                continue
            if group:
                self._dispatch(sources, group, window, bits)
            group, window = [part], w
        if group:
            self._dispatch(sources, group, window, bits)

    def upload_window(self, buffer_up: Any, buffer: Any, source: Source, lo: int, hi: int, bits: int,
                      encoder: Any) -> int:
        """Upload source elements [lo, hi] from the word that holds ``lo`` into ``buffer`` (through ``buffer_up``,
        or straight into ``buffer`` mapped when ``buffer_up`` is None); returns the element the window starts
        at."""
        first = lo - lo % (32 // bits) if bits < 32 else lo
        start = first * bits // 8
        end = min(-(-(hi + 1) * bits // 8), source.data.nbytes)
        fill(self.gpu, buffer, source.data, [(start, 0, end - start)], buffer if buffer_up is None else buffer_up,
             encoder)
        return first

    def _dispatch(self, sources: Sequence[Optional[Source]], group: list[Piece], window, bits: int) -> None:
        gpu, head = self.gpu, fields(group[0].value)
        with gpu.errors("pieces dispatch"):
            encoder = gpu.device.create_command_encoder()
            first, swap = [0, 0, 0], [0, 0, 0]  # the src, mask and other windows' first elements, swap units
            for k, (load, up, buf, width) in enumerate(((head.src, self.upload, self.src, bits),
                                                         (head.mask, self.upload_mask, self.mask, 8),
                                                         (head.other, self.upload_other, self.other, bits))):
                if load is not None:
                    source = sources[load.input]
                    assert source is not None
                    swap[k] = source.swap
                    first[k] = self.upload_window(up, buf, source, window[2 * k], window[2 * k + 1], width, encoder)
            compute = encoder.begin_compute_pass()
            axes = bytearray()
            slot = 0
            for i, p in enumerate(group):
                at = i * 2 * SLOTS
                if self.runs is not None and eligible(p, bits, swap[0], gpu):
                    records, entries, groups = piece_records.runs(p, bits, first[0], at, self.max_dim)
                    kernels, path = self.runs, "runs"
                else:
                    records, entries, groups = piece_records.general(p, bits, first, swap, at, self.wg, self.max_dim)
                    kernels, path = (self.kernel,), "general"
                axes += entries + bytes(16 * 2 * SLOTS - len(entries))
                for kernel, record, n in zip(kernels, records, groups):
                    gpu.queue.write_buffer(self.params, slot * self.stride, record)
                    kernel.record(compute, n, self.max_dim, self.bind_group, [slot * self.stride])
                    slot += 1
                self.taken[path] += 1
            compute.end()
            gpu.queue.write_buffer(self.axes, 0, bytes(axes))
            gpu.queue.submit([encoder.finish()])

    def stream(self, bands: Iterable[tuple[int, int, Any]], bits: int, sink: Sink, each: Callable[..., Any], *,
               stats: Optional[dict] = None, release: bool = True) -> int:
        """Each of ``bands`` (start, elements, what ``each`` needs) made in dst by ``each(start, n, extra,
        nbytes)`` and drained into ``sink``, in order, then the run released (``release``); the bytes written.
        ``stats``: ``bands`` counted."""
        written = 0
        try:
            for start, n, extra in bands:
                nbytes = (n * bits + 7) // 8
                each(start, n, extra, nbytes)
                self.drain(sink, nbytes)
                written += nbytes
                if stats is not None:
                    stats["bands"] += 1
        finally:
            if release:
                self.release()
        return written

    def drain(self, sink: Sink, nbytes: int) -> None:
        self.out.drain(sink, nbytes)


def _merge(a, b):
    return b if a is None else tuple((min, max)[k % 2](x, y) for k, (x, y) in enumerate(zip(a, b)))


def _fits(w, limit: int) -> bool:
    return all(w[k + 1] - w[k] + 1 <= limit for k in (0, 2, 4))


def _same_inputs(a: Piece, b: Piece) -> bool:
    f, g = fields(a.value), fields(b.value)
    return all((x and x.input) == (y and y.input) for x, y in ((f.src, g.src), (f.mask, g.mask), (f.other, g.other)))

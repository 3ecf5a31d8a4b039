"""The representative cases choose.py times a question's candidates on.

One function per question, of the question's name, given the device, builds
its case once: a source, the output numpy computes for it, and ``run``, which
runs the real operator path (the one that asks the question, so it runs with
the candidate choose.py is timing) and returns the output bytes and which
candidate took the work, read from the counts the kernels leave for tests. A
case is small enough to time in a fraction of a second on a CPU adapter and
large enough that its kernels, not the submit, decide the time.

choose.py imports this module by name when a question is first measured: the
cases run the kernels that ask the questions, so they sit above them all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.sources import MemoryBytes
from ..core.region import Access
from .device import Gpu
from .index_table import WRAP, Check, Table
from .headroom import status_bytes

COPY_SIZE = 4 << 20  # one streaming chunk (copy.DEFAULT_CHUNK): what a real run moves per dispatch
TRANSPOSE_SIDE = 1024  # a 4 MiB float32 square: one band, one upload
ND_ROWS = (128, 2048)  # GatherND index pairs: rows of 2048 slices (>= indexed_variants.LONG_ROW), 4 MiB of tuples
ND_DATA = (64, 64)


@dataclass(frozen=True)
class Case:
    run: Callable[[], tuple[bytes, str]]  # -> (output bytes, the candidate that took the work)
    expected: bytes
    nbytes: int  # output bytes a run makes (the GB/s figures)
    time: Callable[[], float] | None = None  # seconds of the part the answer changes; None: of ``run``
    close: Callable[[], None] = lambda: None
    decide: Callable[[], tuple[str, dict[str, float]]] | None = None  # a fact, not a speed: (answer, figures)


def _bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random 32-bit patterns as float32: NaN payloads and -0.0 among them."""
    return rng.integers(0, 2**32, size=shape, dtype=np.uint32).view(np.float32)


def _hosted(go: Callable[[Callable], object], took: Callable[[], str], expected: bytes, nbytes: int = 0,
            seconds: Callable[[], float] | None = None) -> Case:
    """A case the host runs into a sink (``go(sink)``), then reads which
    candidate took the work (``took()``); ``nbytes``: the output's unless
    given. ``seconds``: read after a run into no sink, the time of the part
    the answer changes, where the host keeps it (None: the run is timed)."""

    def run() -> tuple[bytes, str]:
        out = bytearray()
        go(out.extend)
        return bytes(out), took()

    def timed() -> float:
        go(lambda _: None)
        return seconds()  # type: ignore[misc]

    return Case(run, expected, nbytes or len(expected), None if seconds is None else timed)


def kernel(gpu: Gpu) -> Case:
    """The flat copy of one streaming chunk of random bytes (gpu/measure.py's
    Bench, the copy kernels only), the kernel's dispatches timed (GPU
    timestamps where the device has them); the check poisons the output and
    compares it with the source (a wrong byte raises GpuError)."""
    from .choose import choice
    from .measure import Bench

    bench = Bench(gpu, COPY_SIZE, streaming=False)  # every kernel the adapter runs

    def run() -> tuple[bytes, str]:
        name = choice(gpu).kernel  # the one being timed
        bench.poison()
        bench.kernel(name)
        bench.verify(f"kernel {name}")
        return b"", name

    return Case(run, b"", COPY_SIZE, lambda: bench.kernel(choice(gpu).kernel), bench.close)


def transpose(gpu: Gpu) -> Case:
    """A float32 square transposed (perm 1, 0): the source uploaded once by
    gather.py's own run, then each candidate's dispatches recorded and timed
    alone (the kernel is what the answer changes; the upload and read-back
    around it are the same for all, and took most of an end-to-end run's
    time: the answer flipped with the load), as benchmarks/transpose_kernels.py
    does. The output is read back for the byte check."""
    from . import gather as G
    from .choose import answer

    x = _bits(np.random.default_rng(0), (TRANSPOSE_SIDE, TRANSPOSE_SIDE))
    t = x.T
    view = Access(t.shape, tuple(s // 4 for s in t.strides)).simplified()
    plan, band_bytes, window_bytes = G.make_plan(gpu, x.nbytes, view, 32)
    ((_, band, (upload,)),) = list(plan.bands())  # one band, one upload: the case is small
    run = G.Run(gpu, plan, MemoryBytes(x), band_bytes, window_bytes, 0, None)
    run.dispatch(upload, band)  # fills src (and runs once)
    pipelines = {name: program.on(gpu) for name, program in G.VARIANTS.items()}

    def dispatch(nbytes: int, sink: Callable) -> str:
        name = answer(gpu, "transpose")
        run.variants = [(name, pipelines[name])] if name in pipelines else []
        run.blocked = 0
        encoder = gpu.device.create_command_encoder()
        run.record(encoder, upload, band)
        gpu.queue.submit([encoder.finish()])
        run.drain(sink, 0, nbytes)  # waits for the kernel
        return {0: "generic", len(upload.dispatches): name}.get(run.blocked, "mixed")

    def checked() -> tuple[bytes, str]:
        gpu.queue.write_buffer(run.dst, 0, bytes([0xA5]) * band_bytes)  # poisoned: an unwritten byte shows
        out = bytearray()
        took = dispatch(x.nbytes, out.extend)
        return bytes(out), took

    def timed() -> float:
        start = time.perf_counter()
        dispatch(16, lambda _: None)
        return time.perf_counter() - start

    return Case(checked, np.ascontiguousarray(t).tobytes(), x.nbytes, timed, run.release)


def nd_run(gpu: Gpu) -> Case:
    """GatherND of one-word slices by row-major int64 pairs in rows of 2048
    (gpu/indexed_variants.py): the run length is what ``nd_run`` answers."""
    from . import indexed as ix
    from .render.rows import RUNS

    rng = np.random.default_rng(0)
    x = _bits(rng, ND_DATA)
    pairs = np.stack([rng.integers(0, d, ND_ROWS) for d in ND_DATA], axis=-1).astype("<i8")
    (rows, row), d1 = ND_ROWS, ND_DATA[1]  # ops/indexing.py's gather_nd table for these shapes
    table = Table.over((rows, row), (0, 0), (2 * row, 2), ((d1, 0), (1, 1)), extra={"slices": True})
    check = Check(ND_DATA, "GatherND", mode=WRAP, inner=1)
    data = ix.Data(MemoryBytes(x), x.shape, 32)
    index = ix.Index(MemoryBytes(pairs), pairs.shape, True, False)
    runs = {n: name for name, n in RUNS.items()}
    return _hosted(lambda sink: ix.gather_indexed(gpu, data, index, check, table, sink),
                   lambda: runs.get(gpu.cache[ix.LAST].get("nd run"), "none"),
                   x[pairs[..., 0], pairs[..., 1]].tobytes())


PROBE = 64 << 20  # bytes of the device buffer gather_source looks for in the process's memory: above
# glibc's largest mmap threshold (32 MiB), so a CPU driver's malloc maps it afresh, never reuses touched heap


def gather_source(gpu: Gpu) -> Case:
    """Whether the device's memory is this process's own: a PROBE-byte
    storage buffer cleared on the device, and how much of it the process's
    resident memory grew by (lavapipe and llvmpipe: all of it; a GPU's own
    memory: none). Streaming a gather's source bounds the process's peak
    only where it is (gpu/indexed_buffers.py); it is always the slower way."""
    from .engines.base import BufferUsage as U
    from .engines.base import MapMode

    def decide() -> tuple[str, dict[str, float]]:
        before = status_bytes("VmRSS")  # this process's resident memory, bytes (0 where /proc cannot say)
        probe = gpu.device.create_buffer(size=PROBE, usage=U.STORAGE | U.COPY_DST | U.COPY_SRC)
        tail = gpu.device.create_buffer(size=16, usage=U.MAP_READ | U.COPY_DST)
        try:
            encoder = gpu.device.create_command_encoder()
            encoder.clear_buffer(probe, 0, PROBE)
            encoder.copy_buffer_to_buffer(probe, PROBE - 16, tail, 0, 16)  # so the wait covers the clear
            gpu.queue.submit([encoder.finish()])
            gpu.wait(tail.map_async(MapMode.READ, 0, 16), "probing the device's memory")
            tail.unmap()
            share = min(1.0, max(0.0, (status_bytes("VmRSS") - before) / PROBE)) if before else 0.0
        finally:
            probe.destroy()
            tail.destroy()
        figures = {"streamed": round(max(share, 0.001), 3), "resident": round(max(1 - share, 0.001), 3)}
        return ("streamed" if share >= 0.5 else "resident"), figures

    return Case(lambda: (b"", ""), b"", PROBE, decide=decide)


WORD_CASE = 1 << 20  # output bytes of a whole-word kernel's case: one dispatch, a band of its own
ONE_HOT_DEPTH = 1000  # ImageNet's classes: lines of many invocations (a depth of 16 favoured 16 words, the
# depth an invocation's words then fill; a depth of 2048 ran faster on 32 words, Mesa 25)


def _word_case(gpu: Gpu, question: str, variant: str, last: str, go: Callable[[Callable], int],
               expected: bytes) -> Case:
    """A case of a whole-word kernel's schedule (gpu/word_kernels.py): the
    host's own run (``go``, into a sink) of its body ``variant``, and the
    candidate that took the work read back from the schedule it ran
    (``gpu.cache[last]``, where the host keeps its stats); timed
    from the dispatch to the bytes read back (the buffers' making and the
    uploads around it are the same for every candidate, and took most of a
    1 MiB run's time: the answer was noise)."""
    from .choose import answer
    from .word_kernels import schedule

    def took() -> str:
        candidate = answer(gpu, question)  # the one being timed
        return candidate if gpu.cache[last]["schedule"] == schedule(question, variant, candidate) else "none"

    return _hosted(go, took, expected, seconds=lambda: gpu.cache[last]["seconds"])


def select(gpu: Gpu) -> Case:
    """Where over full uint8 inputs (the small body: the one whose words and
    workgroup the answer both set), WORD_CASE elements."""
    from .word_kernels import SELECT_LAST, run_select
    from .pieces import Source

    rng = np.random.default_rng(0)
    c, x, y = (rng.integers(0, 256 if k else 2, WORD_CASE).astype(np.uint8) for k in range(3))
    sources = [Source(MemoryBytes(a)) for a in (c, x, y)]
    return _word_case(gpu, "select", "small", SELECT_LAST, lambda sink: run_select(
        gpu, sources, sink, forms=[(1, WORD_CASE)] * 3, fallback=(), count=WORD_CASE, bits=8),
        np.where(c.view(bool), x, y).tobytes())


def one_hot(gpu: Gpu) -> Case:
    """OneHot of int64 indices (some negative) along the last axis into
    float32 (the wide body), about WORD_CASE bytes."""
    from .word_kernels import ONE_HOT_LAST, run_one_hot
    from .pieces import Source

    rng = np.random.default_rng(0)
    depth = ONE_HOT_DEPTH
    count = WORD_CASE // 4 // depth * depth
    i = rng.integers(-depth, depth, count // depth).astype("<i8")
    off, on = np.float32(-0.0), np.float32(2.5)
    expected = np.where(np.arange(depth) == (i % depth)[:, None], on, off).astype(np.float32).tobytes()
    return _word_case(gpu, "one_hot", "wide", ONE_HOT_LAST, lambda sink: run_one_hot(
        gpu, [Source(MemoryBytes(i))], sink, depth=depth, inner=1, index_kind="i", index_bits=64,
        off=off.tobytes(), on=on.tobytes(), count=count, bits=32), expected)


SCATTER_LINES = (64, 64, 64)  # ScatterElements' case: lines (between scatter.py's FEWEST_LINES and
# LINES_AT_LEAST), the data's axis, updates a line (one to an element on average, up to 6: a few rounds)


def scatter_lines(gpu: Gpu) -> Case:
    """SCATTER_LINES, end to end: the line kernel or the rounds, as answered (``_scatter_case``)."""
    return _scatter_case(gpu, SCATTER_LINES, lambda counts: "lines" if counts.get("word lines") else "rounds")


ROUNDS_CASE = (1 << 16, 1 << 16)  # float32 data elements, updates: one an element on average, up to 8 or so
LINES_CASE = (4096, 64, 64)  # lines (past LINES_AT_LEAST: the line kernel always), the data's axis, updates a line


def _scatter_case(gpu: Gpu, shape: tuple[int, int, int], took: Callable[[dict], str]) -> Case:
    """ScatterElements of float32 with reduction add along the last axis,
    ``shape`` (lines, the data's axis, updates a line), int64 indices some
    negative, end to end; ``took`` reads the candidate that took the work
    from the counts the scatter leaves."""
    from . import indexed as ix
    from .scatter import Reduce, scatter_indexed

    lines, d, n = shape
    rng = np.random.default_rng(0)
    x, u = (rng.standard_normal(s).astype("<f4") for s in ((lines, d), (lines, n)))
    i = rng.integers(-d, d, (lines, n)).astype("<i8")
    table = Table.over((lines, n), (d, 0), (n, 1), ((1, 0),), extra={"line_axis": 1, "elements": True})
    expected = x.copy()
    np.add.at(expected, (np.arange(lines)[:, None], i % d), u)  # in index order, as onnx.reference

    return _hosted(lambda sink: scatter_indexed(
        gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Data(MemoryBytes(u), u.shape, 32),
        ix.Index(MemoryBytes(i), i.shape, True, False), Check((d,), "ScatterElements"), table,
        Reduce("add", 2, False), sink), lambda: took(gpu.cache[ix.LAST]), expected.tobytes(),
        2 * x.nbytes + u.nbytes + i.nbytes)  # every byte moved: the output is small


def rounds_wg(gpu: Gpu) -> Case:
    """One line of ROUNDS_CASE updates into ROUNDS_CASE data elements (one
    line: the rounds), end to end."""
    d, n = ROUNDS_CASE
    return _scatter_case(gpu, (1, d, n), lambda counts: str(counts.get("rounds wg", "none")))


def lines_wg(gpu: Gpu) -> Case:
    """LINES_CASE (the line kernel, 32-bit elements, a line an invocation), end to end."""
    return _scatter_case(gpu, LINES_CASE, lambda counts: str(counts.get("lines wg", "none")))


PIECES_ROWS = (4096, 16)  # each of two float32 inputs: rows of 64 bytes, concatenated into 512 KiB


def pieces_min_row(gpu: Gpu) -> Case:
    """Concat of two float32 (4096, 16) inputs along the last axis: every
    part's rows are 64 bytes, copied by runs (the answer 64) or by the
    general kernel (128); timed with the run's buffers kept (pieces.Runs),
    so the kernels and not the buffers' making decide."""
    from ..core.pieces import Piece
    from ..core.region import Load
    from .pieces import Runs, Source, run_pieces

    rng = np.random.default_rng(0)
    (rows, n), kept = PIECES_ROWS, Runs()
    inputs = [_bits(rng, PIECES_ROWS) for _ in range(2)]
    sources = [Source(MemoryBytes(x)) for x in inputs]
    parts = [Piece((rows, n), (2 * n, 1), k * n, Load(k, Access.row_major((rows, n)))) for k in range(2)]

    def go(sink, reuse) -> None:
        run_pieces(gpu, sources, sink, pieces=parts, count=rows * 2 * n, bits=32, reuse=reuse)

    def run() -> tuple[bytes, str]:
        out, once = bytearray(), Runs()
        try:
            go(out.extend, once)
            (run_,) = once.kept.values()
            return bytes(out), ("64" if run_.taken["runs"] and not run_.taken["general"] else
                                "128" if run_.taken["general"] and not run_.taken["runs"] else "none")
        finally:
            once.release()

    def timed() -> float:
        t0 = time.perf_counter()
        go(lambda _: None, kept)
        return time.perf_counter() - t0

    expected = np.concatenate(inputs, axis=1).tobytes()
    return Case(run, expected, len(expected), timed, kept.release)


def texts(question: str) -> tuple[str, ...]:
    """The rendered WGSL of every candidate of ``question``: its cache key's."""
    from .word_kernels import texts

    if question == "gather_source":  # a fact about the adapter, no kernel's speed
        return ()

    if question == "nd_run":  # both run lengths run one text per width (params.run)
        from .render.rows import KERNELS

        return tuple(k.wgsl() for (name, _), k in KERNELS.items() if name == "gather-nd")

    if question in ("scatter_lines", "rounds_wg", "lines_wg"):  # the cases' kernels (on each workgroup)
        from .choose import QUESTIONS
        from .render.scatter import PASSES, Apply, Lines, Pass

        if question == "scatter_lines":
            return tuple(k.wgsl() for k in (Lines("fadd", 32), Apply("fadd", 32), *map(Pass, PASSES)))
        wgs = [int(wg) for wg in QUESTIONS[question].candidates]
        if question == "lines_wg":
            return tuple(Lines("fadd", 32, wg=wg).wgsl() for wg in wgs)
        return tuple(k.wgsl() for wg in wgs for k in (Apply("fadd", 32, wg), *(Pass(p, wg) for p in PASSES)))

    if question == "pieces_min_row":  # both candidates run the same kernels
        from .render.pieces import EDGES, GENERAL, WORDS

        return tuple(k.wgsl() for k in (GENERAL, WORDS, EDGES))

    if question == "gather_words":  # the indexed gather that checks int64 indices, the slices' words
        from .render.indexed import gather
        from .render.slices import KERNELS

        return (gather("one_i64").wgsl(), KERNELS["words"].wgsl())

    if question == "elementwise":  # the case's kernel on each workgroup
        from dataclasses import replace

        from .choose import QUESTIONS
        from .render.schedule import Elements

        kernel = _elementwise_kernel()
        return tuple(replace(kernel, schedule=Elements(int(wg))).wgsl() for wg in QUESTIONS[question].candidates)

    if question == "slab_chunk":  # every chunk runs the one text (params.chunk)
        from .render.slices import KERNELS

        return (KERNELS["windowed"].wgsl(),)

    if question == "transpose":
        from .render.strided import KERNELS

        return tuple(k.wgsl() for k in KERNELS.values())

    return texts(question)


GATHER_WORDS = (4096, 3)  # float32 rows of 3 words (the narrowest past gather_lines' 1-2), 48 KiB
GATHER_PICKS = 32768  # int64 row indices: 384 KiB out


def gather_words(gpu: Gpu) -> Case:
    """Gather along axis 0 of 3-word float32 rows (``_row_gather``): the
    indexed gather's elements or the slices kernel, as answered."""
    return _row_gather(gpu, GATHER_WORDS, GATHER_PICKS, lambda stats: "slices" if stats.get("slices") else "elements")


def _row_gather(gpu: Gpu, rows: tuple[int, int], picks: int, took: Callable[[dict], str], **window) -> Case:
    """Gather along axis 0 of float32 ``rows`` (rows, words) by ``picks``
    int64 indices (some negative), end to end (ops/indexing.py's table for
    these shapes; ``window``: gather_indexed's window_bytes); ``took`` reads
    the candidate that took the work from the stats the gather leaves."""
    from . import indexed as ix

    rng = np.random.default_rng(0)
    x = _bits(rng, rows)
    (n, width), k = rows, picks
    i = rng.integers(-n, n, k).astype("<i8")
    table = Table.over((k, width), (0, 1), (1, 0), ((width, 0),), extra={"slices": "slabs"})
    check = Check((n,), "Gather", mode=WRAP)
    data = ix.Data(MemoryBytes(x), x.shape, 32)
    index = ix.Index(MemoryBytes(i), i.shape, True, False)

    return _hosted(lambda sink: ix.gather_indexed(gpu, data, index, check, table, sink, **window),
                   lambda: took(gpu.cache[ix.LAST]), x[i].tobytes())


ELEMENTWISE_COUNT = 1 << 18  # int32 elements of each input and the output: 1 MiB, one band


def _elementwise_kernel():
    """The elementwise case's kernel, on the renderer's first workgroup (run_elementwise sets the answer's)."""
    from .render.elementwise import Elementwise, Operand

    return Elementwise("Add", (Operand("int32"), Operand("int32")), "int32")


def elementwise(gpu: Gpu) -> Case:
    """Add of two int32 inputs of ELEMENTWISE_COUNT elements, neither
    broadcast (the kernel's cheapest value: the workgroup decides most),
    timed from the dispatch to the bytes read back (the uploads around it
    are the same for every candidate)."""
    from .elementwise import LAST, run_elementwise
    from .pieces import Source

    rng = np.random.default_rng(0)
    a, b = (rng.integers(-2**31, 2**31, ELEMENTWISE_COUNT).astype("<i4") for _ in range(2))
    kernel, shape = _elementwise_kernel(), (ELEMENTWISE_COUNT,)

    def go(sink: Callable) -> None:
        run_elementwise(gpu, kernel, [Source(MemoryBytes(a)), Source(MemoryBytes(b))], sink, shape=shape,
                        strides=[(1,), (1,)], where="Add")

    return _hosted(go, lambda: str(gpu.cache[LAST]["wg"]), (a + b).tobytes(),
                   seconds=lambda: gpu.cache[LAST]["seconds"])


SLAB_ROWS = (512, 256)  # float32 rows of 1 KiB (64 vectors, a 256-float embedding): 512 KiB, two windows
SLAB_PICKS = 2048  # int64 row indices: 2 MiB out, one band (8 workgroups a window at 64 vectors an invocation)
SLAB_WINDOW = 256 << 10  # bytes a window (window_bytes): every band runs the windowed variant once a window


def slab_chunk(gpu: Gpu) -> Case:
    """Gather along axis 0 of 1 KiB float32 rows (``_row_gather``) from a
    source of two SLAB_WINDOW windows: the windowed slabs kernel runs once a
    window, its vectors per invocation as answered (a gather's bands past
    64 MiB run it too, a window each)."""
    return _row_gather(gpu, SLAB_ROWS, SLAB_PICKS, lambda stats: str(stats.get("slab chunk", "none")),
                       window_bytes=SLAB_WINDOW)

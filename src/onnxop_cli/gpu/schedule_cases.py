"""The representative cases choose.py times a question's candidates on, and
the rendered WGSL of each question's candidates (``texts``), which its cached
answer is keyed by: a release that changes a kernel a candidate runs measures
the question again.

``case`` builds a question's case on the device once (the function of the
question's name): the output numpy computes, and
``run``, which runs the real operator path (the one that asks the question,
so it runs with the candidate choose.py is timing) and returns the output
bytes and which candidate took the work, read from the stats the host
leaves in ``gpu.cache`` for tests. A case is small enough to time in a
fraction of a second on a CPU adapter and large enough that its kernels,
not the submit, decide the time.

choose.py imports this module by name when a question is first asked: the
cases run the kernels that ask the questions, so they sit above them all.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from ..core.sources import MemoryBytes
from ..core.region import Access
from .device import Gpu
from .index_table import WRAP, Check, Table
from .faults import status_bytes
from .measure import POISON, Bench

COPY_SIZE = 4 << 20  # one streaming chunk (copy.DEFAULT_CHUNK): what a real run moves per dispatch
TRANSPOSE_SIDE = 1024  # a 4 MiB float32 square: one band, one upload
PROBE = 64 << 20  # bytes of the device buffer gather_source looks for in the process's memory: above
# glibc's largest mmap threshold (32 MiB), so a CPU driver's malloc maps it afresh, never reuses touched heap
PIECES_ROWS = (4096, 16)  # each of two float32 inputs: rows of 64 bytes, concatenated into 512 KiB
# lines, the data's axis, updates a line: lines between scatter.py's FEWEST_LINES and LINES_AT_LEAST, one update
# to an element on average, up to 6
SCATTER_SHAPE = (64, 64, 64)
GATHER_ROWS, GATHER_PICKS = (4096, 3), 32768


@dataclass(frozen=True)
class Case:
    run: Callable[[], tuple[bytes, str]]  # -> (output bytes, the candidate that took the work)
    expected: bytes
    nbytes: int  # output bytes a run makes (the GB/s figures)
    time: Callable[[], float] | None = None  # seconds of the part the answer changes; None: of ``run``
    close: Callable[[], None] = lambda: None
    decide: Callable[[], tuple[str, dict[str, float]]] | None = None  # a fact, not a speed: (answer, figures)


def case(gpu: Gpu, question: str) -> Case:
    """``question``'s case on ``gpu``: the function of its name."""
    return globals()[question](gpu)


def _bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random 32-bit patterns as float32: NaN payloads and -0.0 among them."""
    return rng.integers(0, 2**32, size=shape, dtype=np.uint32).view(np.float32)


def _clock(go: Callable[[], object]) -> Callable[[], float]:
    """A function that runs ``go`` and returns its wall-clock seconds."""

    def timed() -> float:
        start = time.perf_counter()
        go()
        return time.perf_counter() - start

    return timed


def _hosted(gpu: Gpu, go: Callable[[Callable], object], took: Callable[[dict], str], expected: bytes,
            nbytes: int = 0) -> Case:
    """A case the indexed host runs into a sink (``go(sink)``), end to end; ``took`` reads the candidate that
    took the work from the stats it leaves (``gpu.cache[indexed.LAST]``). ``nbytes``: the output's unless given."""
    from .indexed import LAST

    def run() -> tuple[bytes, str]:
        out = bytearray()
        go(out.extend)
        return bytes(out), took(gpu.cache[LAST])

    return Case(run, expected, nbytes or len(expected))


def kernel(gpu: Gpu) -> Case:
    """The flat copy of one streaming chunk of random bytes (gpu/measure.py's Bench, the copy kernels only),
    the kernel's dispatches timed (GPU timestamps where the device has them); the check poisons the output
    and compares it with the source (a wrong byte raises GpuError)."""
    from .choose import choice

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
    alone (the upload and read-back around them are the same for all, and
    took most of an end-to-end run's time: the answer flipped with the load),
    as benchmarks/transpose_kernels.py does; the output is read back for the
    byte check."""
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
        run.drain(sink, nbytes)  # waits for the kernel
        return {0: "generic", len(upload.dispatches): name}.get(run.blocked, "mixed")

    def checked() -> tuple[bytes, str]:
        gpu.queue.write_buffer(run.dst, 0, bytes([POISON]) * band_bytes)  # poisoned: an unwritten byte shows
        out = bytearray()
        took = dispatch(x.nbytes, out.extend)
        return bytes(out), took

    timed = _clock(lambda: dispatch(16, lambda _: None))
    return Case(checked, np.ascontiguousarray(t).tobytes(), x.nbytes, timed, run.release)


def gather_words(gpu: Gpu) -> Case:
    """Gather along axis 0 of 4096 float32 rows of 3 words (the narrowest past gather_lines' 1-2, 48 KiB) by
    32768 int64 indices, some negative (384 KiB out), end to end (``_hosted``): the indexed gather's elements
    or the slices kernel took it, as answered."""
    from . import indexed as ix

    rng = np.random.default_rng(0)
    (n, width), k = GATHER_ROWS, GATHER_PICKS
    x = _bits(rng, GATHER_ROWS)
    i = rng.integers(-n, n, k).astype("<i8")
    table = Table.over((k, width), (0, 1), (1, 0), ((width, 0),), extra={"slices": "slabs"})
    data, index = ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape, True, False)
    check = Check((n,), "Gather", mode=WRAP)
    return _hosted(gpu, lambda sink: ix.gather_indexed(gpu, data, index, check, table, sink),
                   lambda stats: "slices" if stats.get("slices") else "elements", x[i].tobytes())


def gather_source(gpu: Gpu) -> Case:
    """Whether the device's memory is this process's own: a PROBE-byte storage buffer cleared on the device,
    and how much of it the process's resident memory grew by (lavapipe and llvmpipe: all of it; a GPU's own
    memory: none). Streaming a gather's source bounds the process's peak only where it is
    (gpu/indexed_buffers.py); it is always the slower way."""
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


def scatter_lines(gpu: Gpu) -> Case:
    """ScatterElements of float32 with reduction add along the last axis, SCATTER_SHAPE (lines, the data's
    axis, updates a line), int64 indices some negative, end to end (``_hosted``); GB/s of every byte moved
    (the output is small). The scatter's stats say whether the lines kernel took it."""
    from . import indexed as ix
    from .scatter import Reduce, scatter_indexed

    lines, d, n = SCATTER_SHAPE
    rng = np.random.default_rng(0)
    x, u = (rng.standard_normal(s).astype("<f4") for s in ((lines, d), (lines, n)))
    i = rng.integers(-d, d, (lines, n)).astype("<i8")
    table = Table.over((lines, n), (d, 0), (n, 1), ((1, 0),), extra={"line_axis": 1, "elements": True})
    expected = x.copy()
    np.add.at(expected, (np.arange(lines)[:, None], i % d), u)  # in index order, as onnx.reference

    return _hosted(gpu, lambda sink: scatter_indexed(
        gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Data(MemoryBytes(u), u.shape, 32),
        ix.Index(MemoryBytes(i), i.shape, True, False), Check((d,), "ScatterElements"), table,
        Reduce("add", 2, False), sink), lambda stats: "lines" if stats.get("word lines") else "rounds",
        expected.tobytes(), 2 * x.nbytes + u.nbytes + i.nbytes)


def pieces_min_row(gpu: Gpu) -> Case:
    """Concat of two float32 (4096, 16) inputs along the last axis: every part's rows are 64 bytes, copied
    by runs (the answer 64) or by the general kernel (128); timed with the run's buffers kept (pieces.Runs),
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

    expected = np.concatenate(inputs, axis=1).tobytes()
    return Case(run, expected, len(expected), _clock(lambda: go(lambda _: None, kept)), kept.release)


# each question's kernels, every one a candidate runs: (the gpu/render/ module that renders them, a function of
# it to the kernels); gather_source, a fact about the adapter, has none
TEXTS: dict[str, tuple[str, Callable[[Any], Iterable]]] = {
    "transpose": ("strided", lambda m: m.KERNELS.values()),
    "scatter_lines": ("scatter", lambda m: (m.Lines("fadd", 32), m.Apply("fadd", 32), *map(m.Pass, m.PASSES))),
    "pieces_min_row": ("pieces", lambda m: (m.GENERAL, m.WORDS, m.EDGES)),  # both candidates run them
    "gather_words": ("slices", lambda m: (_render("indexed").gather("one_i64"), m.KERNELS["words"])),
}


def _render(name: str) -> Any:
    """Module gpu/render/``name``, imported when a question's key is first asked."""
    return importlib.import_module(f"{__package__}.render.{name}")


def texts(question: str) -> tuple[str, ...]:
    """The rendered WGSL of every candidate of ``question``: its cache key's."""
    if question == "gather_source":
        return ()
    module, kernels = TEXTS[question]
    return tuple(k.wgsl() for k in kernels(_render(module)))

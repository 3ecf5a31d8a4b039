"""OneHot in one kernel pass: the kernel gpu/render/one_hot.py renders
writes every word of the output from the indices as they are stored, read
on the device (no piece per index, no host pass over them).

    for each band of the output (at most one binding and BAND bytes):
        upload the band's window of indices; one dispatch; readback dst --sink-->

A band is a run of whole lines (a line: the ``inner`` elements of one
(outer, depth) pair, all reading the same ``inner`` index positions) or, for
lines too long for that, a stretch of one line; either way its index window
is a few lines' positions, at most one binding (``_bands``). The buffers,
uploads, readback and graph (device-resident) sources and sinks are
gpu/pieces.py's ``Run``, as Where's select's: only the kernel and its
parameters differ. ``gpu.cache[LAST]`` holds the last call's band count
(tests check the path was taken).
"""

from __future__ import annotations

import struct
from typing import Iterator, Optional, Sequence

from . import pieces, word_kernels
from .buffers import WORD, env_poison, round_up
from .device import Gpu

LAST = "one-hot-last"
LIMIT = 1 << 31  # depth: the kernel wraps and compares indices in u32
BAND = 16 << 20  # bytes of a band at most, as Where's select's (gpu/elementwise.py)
NONE = 0xFFFFFFFF  # the kernel's line of a band inside one line
KINDS = {"i": 0, "u": 1, "f": 2}  # numpy kind -> the kernel's index kind

Band = tuple[int, int, int, int, int, int]  # start, elements, window lo, hi (positions), line, d0


def _bands(count: int, depth: int, inner: int, band: int, window: int) -> Iterator[Band]:
    """The bands of an output of ``count`` elements (lines of ``inner``,
    ``depth`` lines to an outer): at most ``band`` elements, reading at most
    ``window`` index positions each."""
    lines = count // inner
    if inner <= band and 2 * inner <= window:
        # k whole lines span at most (k - 1) // depth + 2 outers of inner positions each
        k = max(1, min(band // inner, (window // inner - 1) * depth))
        for l0 in range(0, lines, k):
            n = min(k, lines - l0)
            o0, o1 = l0 // depth, (l0 + n - 1) // depth
            yield l0 * inner, n * inner, o0 * inner, (o1 + 1) * inner - 1, inner, l0 % depth
        return
    step = min(band, window)
    for line in range(lines):
        o, d = divmod(line, depth)
        for r in range(0, inner, step):
            n = min(step, inner - r)
            yield line * inner + r, n, o * inner + r, o * inner + r + n - 1, NONE, d


def run_one_hot(
    gpu: Gpu,
    sources: Sequence[Optional[pieces.Source]],
    sink: pieces.Sink,
    *,
    depth: int,
    inner: int,
    index_kind: str,
    index_bits: int,
    off: bytes,
    on: bytes,
    count: int,
    bits: int,
    binding_bytes: Optional[int] = None,
    max_groups_per_dim: Optional[int] = None,
    poison: Optional[int] = None,
) -> int:
    """Stream the ``count`` output elements (``bits`` wide) of OneHot into
    ``sink``, in order; ``sources[0]`` holds the indices (row-major, numpy
    kind ``index_kind``, ``index_bits`` wide), ``off`` and ``on`` the values'
    element bytes (ops/tensor_op.element_bytes). Returns the bytes written."""
    stats = gpu.cache[LAST] = {"bands": 0, "mapped": False, "schedule": None}
    if count == 0:
        return 0
    cap, band_bytes = pieces.one_kernel_bands(gpu, binding_bytes, count, bits, BAND)
    band = band_bytes * 8 // bits
    window = (cap - 2 * WORD) * 8 // index_bits  # a window starts up to a word before its first index
    source = sources[0]
    assert source is not None
    if poison is None:
        poison = env_poison()
    mapped = stats["mapped"] = pieces.mappable(gpu, sources[:1], sink)
    bands = list(_bands(count, depth, inner, band, window))
    reach = max(hi - lo + 1 for _, _, lo, hi, _, _ in bands)
    need = min(cap, round_up(reach * index_bits // 8 + 2 * WORD, WORD))
    kernel = word_kernels.kernel(gpu, "one_hot", variant(bits, inner))
    stats["schedule"] = kernel.schedule
    run = pieces.Run(gpu, band_bytes, cap, max_groups_per_dim, kernel=kernel, sizes=(need, WORD, WORD), mapped=mapped)
    fixed = {"depth": depth, "ibits": index_bits, "kind": KINDS[index_kind], "swap": 1 if source.swap else 0,
             "off": _words(off, bits), "on": _words(on, bits)}

    def band(start: int, n: int, at: tuple[int, int, int, int], encoder) -> dict:
        lo, hi, line, d0 = at
        first = run.upload_window(None if mapped else run.upload, run.src, source, lo, hi, index_bits, encoder)
        return {"line": line, "d0": d0, "q0": lo - first, **fixed}

    return word_kernels.walk(run, kernel, ((start, n, at) for start, n, *at in bands), band, bits=bits, sink=sink,
                             poison=poison, what="one-hot band", stats=stats)


def variant(bits: int, inner: int) -> str:
    """The body (a key of render/one_hot.OneHot.BODIES): sub-word elements ``small``; the last axis (lines of one
    element) and longer lines take separate bodies, each holding its own fast path alone."""
    return "small" if bits < 32 else ("wide" if inner == 1 else "wide_lines")


def _words(value: bytes, bits: int) -> tuple[int, ...]:
    """An element's bytes as the kernel's four words (low bits of the first for sub-word elements)."""
    raw = (value + bytes(16))[: max(4, bits // 8)]
    return struct.unpack("<4I", raw + bytes(16 - len(raw)))

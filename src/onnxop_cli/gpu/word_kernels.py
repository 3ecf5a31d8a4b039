"""The host of the kernels on the whole-word schedule (gpu/render/select.py, one_hot.py): Where's select
(``run_select``), OneHot (``run_one_hot``), and the one loop that walks an output in bands through them
(``walk``) on gpu/pieces.py's ``Run`` (buffers, uploads, readback, a graph's device sources and sinks):
only the kernel and its parameters differ, on one schedule (``SCHEDULE``).

Where runs the select when each input is element ``(e // div) % size`` of itself for output element e
(ops/where.py's run forms): on CPU adapters (``can_map``) the windows and dst mapped themselves,
elsewhere a full X or Y uploaded into dst and selected in place. What it cannot read (big-endian bytes,
an input broadcast along leading axes past one binding) and what is no run form keep the select piece of
the pieces kernel. OneHot reads the indices on the device as they are stored, a window of a few lines'
positions a band (``_bands``). ``gpu.cache[SELECT_LAST]`` and ``gpu.cache[ONE_HOT_LAST]`` hold the last
call's bands and schedule (tests check the path was taken).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from . import pieces
from .buffers import WORD, env_poison, round_up
from .device import Gpu
from .piece_records import fill_words
from .pieces import Run, Sink
from .program import grid_x
from .render import one_hot, select
from .render.schedule import OnWords, Words

LIMIT = 1 << 31  # Where's output elements and OneHot's depth: the kernels' arithmetic is u32
# Bands of at most 16 MiB: a 32 MB float32 Where ran at 0.48x the gather kernel's GB/s (CPU time)
# in one 64 MiB band on Mesa 25, 0.82-0.84x in 8 MiB bands, 0.85-0.87x in 16 MiB, 0.45x in 1 MiB
# (fresh buffers' first touch against per-band waits; the select before its plain loops, 2026-12-01)
BAND = 16 << 20
NEVER = 0xFFFFFFFF  # a run's wrap that never comes
NONE = 0xFFFFFFFF  # OneHot's line of a band inside one line
INDEX_KINDS = {"i": 0, "u": 1, "f": 2}  # numpy kind -> OneHot's index kind
SELECT_LAST = "select-last"  # gpu.cache[SELECT_LAST]: the last select's bands and schedule (None: not run)
ONE_HOT_LAST = "one-hot-last"

KERNELS: dict[str, type[OnWords]] = {"select": select.Select, "one_hot": one_hot.OneHot}
# invocations a workgroup, words an invocation: Mesa 22.3's (64x16, 64x32 and 128x32 won on neither Mesa,
# docs/performance-adapters.md)
SCHEDULE = (256, 16)


def schedule(name: str, variant: str) -> Words:
    """Body ``variant`` of kernel ``name`` (a key of KERNELS) on SCHEDULE."""
    wg, words = SCHEDULE
    return Words(variant, wg, KERNELS[name].KEEPS.get(variant, words))


def kernel(name: str, variant: str) -> OnWords:
    """Kernel ``name`` with its body ``variant``."""
    return KERNELS[name](schedule(name, variant))


Band = tuple[int, int, Any]  # start, elements, what the host's band function needs of it


def walk(gpu: Gpu, name: str, variant: str, band_bytes: int, sizes: tuple[int, int, int], bands: Iterable[Band],
         band: Callable[[Run, int, int, Any, Any], dict], *, bits: int, sink: Sink, poison: Optional[int],
         mapped: bool, max_groups_per_dim: Optional[int], what: str, stats: dict, shared_upload: int = 0) -> int:
    """Run body ``variant`` of kernel ``name`` over each of ``bands`` in order into ``sink``
    on a ``Run`` of ``sizes`` windows (``shared_upload``, ``mapped``: Run's); ``band(run, start, n, extra,
    encoder)`` uploads the band's windows (on ``encoder``, None when mapped) and returns its Params fields
    beyond the words, grid, elements and width. Returns the bytes written; ``stats["schedule"]`` is the
    kernel's, ``stats["bands"]`` counts the bands."""
    rendered = kernel(name, variant)
    run = Run(gpu, band_bytes, sizes, max_groups_per_dim, kernel=rendered,  # type: ignore[arg-type]
              shared_upload=shared_upload, mapped=mapped)
    stats["schedule"] = rendered.schedule

    def each(start: int, n: int, extra: Any, nbytes: int) -> None:
        words = -(-nbytes // 4)
        with gpu.errors(what):
            if poison is not None:
                run.out.reset(round_up(nbytes, 4), poison)
            encoder = None if mapped else gpu.device.create_command_encoder()
            fields = band(run, start, n, extra, encoder)
            groups = -(-words // rendered.schedule.per_group)
            gpu.queue.write_buffer(run.params, 0, rendered.PARAMS.pack(
                words=words, groups_x=grid_x(groups, run.max_dim), elems=n, bits=bits, **fields))
            encoder = encoder or gpu.device.create_command_encoder()  # the uploads', submitted with it
            run.kernel.dispatch(encoder, groups, run.max_dim, run.bind_group, [0])
            gpu.queue.submit([encoder.finish()])

    return run.stream(bands, bits, sink, each, stats=stats)


Form = tuple[int, int]  # (div, size): input element (e // div) % size of output element e


def _window(form: Form, band: int, width: int, whole: bool) -> int:
    """Bytes of an input's window: what one band reads of it (from the word
    that holds its first element), or all of it when it wraps."""
    div, size = form
    elements = size if whole else min(size, (band - 1) // div + 2)
    return round_up(elements * width // 8 + 2 * WORD, WORD)


def select_variant(bits: int, forms: Sequence[Form] = (), count: int = 0) -> str:
    """The select's whole-word schedule (a key of render/select.Select.BODIES): ``rows`` for 32-bit X and Y in full
    and a condition broadcast along leading axes (a row of 16 bytes or more); else by element width."""
    if bits == 32 and len(forms) == 3 and forms[1] == forms[2] == (1, count):
        div, size = forms[0]
        if div == 1 and 16 <= size < count:
            return "rows"
    return "small" if bits < 32 else "wide"


def run_select(gpu: Gpu, sources: Sequence[Optional[pieces.Source]], sink: Sink, *, forms: Sequence[Form],
               fallback: Sequence[pieces.Piece], count: int, bits: int, binding_bytes: Optional[int] = None,
               max_groups_per_dim: Optional[int] = None, poison: Optional[int] = None) -> int:
    """Stream the ``count`` output elements (``bits`` wide) of Where into ``sink``, in order; ``sources`` are
    (condition, X, Y), each read in its ``forms`` entry. Returns the bytes written. Runs ``fallback`` (the
    select piece) through the pieces kernel where the select cannot: a big-endian source, or an input broadcast
    along leading axes larger than a window."""
    if count == 0:
        return 0
    stats = gpu.cache[SELECT_LAST] = {"bands": 0, "schedule": None}
    cap, band_bytes = pieces.one_kernel_bands(gpu, binding_bytes, count, bits, BAND)
    band_elements = band_bytes * 8 // bits
    widths = (8, bits, bits)
    whole = [div * size < count for div, size in forms]  # wraps: the whole input uploaded once
    if (count >= LIMIT or any(s is None or s.swap for s in sources[:3])
            or any(w and size * width // 8 + WORD > cap for w, (_, size), width in zip(whole, forms, widths))):
        return pieces.run_pieces(gpu, sources, sink, pieces=fallback, count=count, bits=bits,
                                 binding_bytes=binding_bytes, max_groups_per_dim=max_groups_per_dim, poison=poison)
    if poison is None:
        poison = env_poison()
    full = [div == 1 and size == count for div, size in forms]
    mapped = pieces.mappable(gpu, sources[:3], sink)
    # else a full X or Y is uploaded into dst itself and selected in place (each word read, then written,
    # by its own invocation): one buffer of the output's size fewer to allocate and fill
    in_dst = 0 if mapped else 2 if full[2] else (1 if full[1] else 0)
    need = [min(cap, _window(form, band_elements, width, w)) for form, width, w in zip(forms, widths, whole)]
    sizes = tuple(WORD if in_dst and k == in_dst else need[k] for k in (1, 0, 2))  # (src: X, mask, other: Y)

    def band(run: Run, start: int, n: int, _, encoder) -> dict:
        fields: dict[str, Any] = {"in_dst": in_dst}
        buffers = [run.mask, run.src, run.other]
        if in_dst:
            buffers[in_dst] = run.dst
        for k, (v, (div, size), width, source) in enumerate(zip("cxy", forms, widths, sources)):
            assert source is not None

            def upload(lo: int, hi: int) -> int:
                if mapped:
                    return run.upload_window(None, buffers[k], source, lo, hi, width, None)
                # one staging buffer for the three: each upload submitted before the next is written
                encoder = gpu.device.create_command_encoder()
                first = run.upload_window(run.upload, buffers[k], source, lo, hi, width, encoder)
                gpu.queue.submit([encoder.finish()])
                return first

            if whole[k]:
                if start == 0:
                    assert upload(0, size - 1) == 0
                q0, wrap = (start // div) % size, size
            else:  # full (div 1): q0 the window offset
                lo = start // div
                first = upload(lo, (start + n - 1) // div)
                assert not full[k] or k == 0 or first == start, "a band starts on a word of X and Y"
                q0, wrap = lo - first, NEVER
            fields[f"{v}_full"] = int(full[k])
            fields[v] = {"q0": q0, "r0": start % div, "div": div, "wrap": wrap}
        return fields

    bands = ((start, min(band_elements, count - start), None) for start in range(0, count, band_elements))
    return walk(gpu, "select", select_variant(bits, forms, count), band_bytes, sizes, bands, band, bits=bits,
                sink=sink, poison=None if in_dst else poison, mapped=mapped, max_groups_per_dim=max_groups_per_dim,
                what="where band", stats=stats, shared_upload=max(need))


Lines = tuple[int, int, int, int, int, int]  # start, elements, window lo, hi (positions), line, d0


def _bands(count: int, depth: int, inner: int, band: int, window: int) -> Iterator[Lines]:
    """The bands of an output of ``count`` elements (lines of ``inner``, ``depth`` lines to an outer): at most
    ``band`` elements, reading at most ``window`` index positions each."""
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


def run_one_hot(gpu: Gpu, sources: Sequence[Optional[pieces.Source]], sink: Sink, *, depth: int, inner: int,
                index_kind: str, index_bits: int, off: bytes, on: bytes, count: int, bits: int,
                binding_bytes: Optional[int] = None, max_groups_per_dim: Optional[int] = None,
                poison: Optional[int] = None) -> int:
    """Stream the ``count`` output elements (``bits`` wide) of OneHot into ``sink``, in order; ``sources[0]`` holds
    the indices (row-major, numpy kind ``index_kind``, ``index_bits`` wide), ``off`` and ``on`` the values'
    element bytes (ops/tensor_op.element_bytes). Returns the bytes written."""
    stats = gpu.cache[ONE_HOT_LAST] = {"bands": 0, "mapped": False, "schedule": None}
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
    # the index positions the most a band reads (no band passes the window)
    reach = pieces.reach(_bands(count, depth, inner, band, window), lambda b: b[3] - b[2] + 1, window)
    need = min(cap, round_up(reach * index_bits // 8 + 2 * WORD, WORD))
    fixed = {"depth": depth, "ibits": index_bits, "kind": INDEX_KINDS[index_kind], "swap": 1 if source.swap else 0,
             "off": fill_words(off, bits), "on": fill_words(on, bits)}

    def band_fields(run: Run, start: int, n: int, at: tuple[int, int, int, int], encoder) -> dict:
        lo, hi, line, d0 = at
        first = run.upload_window(None if mapped else run.upload, run.src, source, lo, hi, index_bits, encoder)
        return {"line": line, "d0": d0, "q0": lo - first, **fixed}

    bands = _bands(count, depth, inner, band, window)
    return walk(gpu, "one_hot", one_hot_variant(bits, inner), band_bytes, (need, WORD, WORD),
                ((start, n, at) for start, n, *at in bands), band_fields, bits=bits, sink=sink, poison=poison,
                mapped=mapped, max_groups_per_dim=max_groups_per_dim, what="one-hot band", stats=stats)


def one_hot_variant(bits: int, inner: int) -> str:
    """The body (a key of render/one_hot.OneHot.BODIES): sub-word elements ``small``; the last axis (lines of one
    element) and longer lines take separate bodies, each holding its own fast path alone."""
    return "small" if bits < 32 else ("wide" if inner == 1 else "wide_lines")


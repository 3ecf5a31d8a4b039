"""Where's fast path: ``shaders/where.wgsl`` over the output in whole words.

ops/where.py chooses it when each input (condition, X, Y) is read through
one *run form* of the row-major output element e: element ``(e // div) %
size`` of the input as it lies -- the output's own shape (div 1, size the
output's), a scalar (size 1), broadcast along a trailing run (div > 1),
along leading axes (div * size < the output), or both. Everything else (an
input broadcast along two separate runs, Fortran order, big-endian bytes,
strings, outputs of 2**31 elements or more) keeps the select piece of the
general pieces kernel (gpu/pieces.py), as does an input broadcast along
leading axes that is larger than one binding.

    for each band of the output (at most one binding and BAND bytes):
        upload each input's window for the band (one broadcast along leading
        axes: the whole input, once); one dispatch; readback dst --sink-->

The buffers, uploads, readback and graph (device-resident) sources and
sinks are gpu/pieces_run.py's ``Run``: only the kernel and its parameters
differ. On CPU adapters (``can_map``) the windows and dst are mapped
themselves (no staging copies); elsewhere a full X or Y is uploaded into
dst and selected in place, and one staging buffer serves the three inputs.
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import pieces
from .buffers import WORD, can_map, env_poison, round_up
from .device import Gpu
from .kernels import shader_const
from .layout import pack

SHADER = "where.wgsl"
KERNELS = {name: {"KERNEL": k} for k, name in enumerate(("small", "wide", "rows"))}  # the shader's variants
LIMIT = 1 << 31  # output elements: the kernel's element arithmetic is u32
# Bands of at most 16 MiB: a 32 MB float32 Where ran at 0.48x the gather kernel's GB/s (CPU time)
# in one 64 MiB band on Mesa 25, 0.82-0.84x in 8 MiB bands, 0.85-0.87x in 16 MiB, 0.45x in 1 MiB
# (fresh buffers' first touch against per-band waits; the kernel before its plain loops, 2026-12-01)
BAND = 16 << 20
NEVER = 0xFFFFFFFF  # a run's wrap that never comes

Form = tuple[int, int]  # (div, size): input element (e // div) % size of output element e


def _window(form: Form, band: int, width: int, whole: bool) -> int:
    """Bytes of an input's window: what one band reads of it (from the word
    that holds its first element), or all of it when it wraps."""
    div, size = form
    elements = size if whole else min(size, (band - 1) // div + 2)
    return round_up(elements * width // 8 + 2 * WORD, WORD)


def variant(bits: int, forms: Sequence[Form] = (), count: int = 0) -> str:
    """The kernel's variant (a key of KERNELS): ``rows`` for 32-bit X and Y
    in full and a condition broadcast along leading axes (a row of 16 bytes
    or more); else by element width."""
    if bits == 32 and len(forms) == 3 and forms[1] == forms[2] == (1, count):
        div, size = forms[0]
        if div == 1 and 16 <= size < count:
            return "rows"
    return "small" if bits < 32 else "wide"


def run_where(
    gpu: Gpu,
    sources: Sequence[Optional[pieces.Source]],
    sink: pieces.Sink,
    *,
    forms: Sequence[Form],
    fallback: Sequence[pieces.Piece],
    count: int,
    bits: int,
    binding_bytes: Optional[int] = None,
    max_groups_per_dim: Optional[int] = None,
    poison: Optional[int] = None,
) -> int:
    """Stream the ``count`` output elements (``bits`` wide) of Where into
    ``sink``, in order; ``sources`` are (condition, X, Y), each read in its
    ``forms`` entry. Returns the bytes written. Runs ``fallback`` (the
    select piece) through the pieces kernel where this kernel cannot: a
    big-endian source, or an input broadcast along leading axes larger than
    a window."""
    if count == 0:
        return 0
    cap, band_bytes = pieces.one_kernel_bands(gpu, binding_bytes, count, bits, BAND)
    band = band_bytes * 8 // bits
    widths = (8, bits, bits)
    whole = [div * size < count for div, size in forms]  # wraps: the whole input uploaded once
    if (count >= LIMIT or any(s is None or s.swap for s in sources[:3])
            or any(w and size * width // 8 + WORD > cap for w, (_, size), width in zip(whole, forms, widths))):
        return pieces.run_pieces(gpu, sources, sink, pieces=fallback, count=count, bits=bits,
                                 binding_bytes=binding_bytes, max_groups_per_dim=max_groups_per_dim, poison=poison)
    if poison is None:
        poison = env_poison()
    full = [div == 1 and size == count for div, size in forms]
    from .resident import DeviceBuffer, DeviceSink

    # CPU adapters: the windows and dst mapped themselves, no staging copies (gpu/copy.py's mapped mode)
    mapped = can_map(gpu) and not isinstance(sink, DeviceSink) and not any(
        isinstance(s.data, DeviceBuffer) for s in sources[:3] if s is not None)
    # else a full X or Y is uploaded into dst itself and selected in place (each word read, then written,
    # by its own invocation): one buffer of the output's size fewer to allocate and fill
    in_dst = 0 if mapped else 2 if full[2] else (1 if full[1] else 0)
    need = [min(cap, _window(form, band, width, w)) for form, width, w in zip(forms, widths, whole)]
    sizes = tuple(WORD if in_dst and k == in_dst else need[k] for k in (1, 0, 2))  # (src: X, mask, other: Y)
    kernel = variant(bits, forms, count)
    run = pieces.Run(gpu, band_bytes, cap, max_groups_per_dim, shader=SHADER, constants=KERNELS[kernel],
                      sizes=sizes, shared_upload=max(need), mapped=mapped)  # type: ignore[arg-type]
    per_group = shader_const(SHADER, "WG") * shader_const(SHADER, "ROW_WORDS" if kernel == "rows" else "WORDS")
    buffers = [run.mask, run.src, run.other]
    if in_dst:
        buffers[in_dst] = run.dst
    written = 0
    try:
        for start in range(0, count, band):
            n = min(band, count - start)
            nbytes = (n * bits + 7) // 8
            words = -(-nbytes // 4)
            inputs = []
            with gpu.errors("where band"):
                if poison is not None and not in_dst:
                    gpu.queue.write_buffer(run.dst, 0, bytes([poison]) * round_up(nbytes, 4))
                for k, ((div, size), width) in enumerate(zip(forms, widths)):
                    source = sources[k]
                    assert source is not None

                    def upload(lo: int, hi: int) -> int:
                        if mapped:
                            return run._upload(None, buffers[k], source, lo, hi, width, None)
                        # one staging buffer for the three: each upload submitted before the next is written
                        encoder = gpu.device.create_command_encoder()
                        first = run._upload(run.upload, buffers[k], source, lo, hi, width, encoder)
                        gpu.queue.submit([encoder.finish()])
                        return first

                    if whole[k]:
                        if start == 0:
                            assert upload(0, size - 1) == 0
                        inputs.append((0, (start // div) % size, start % div, div, size))
                    elif full[k]:
                        first = upload(start, start + n - 1)
                        assert k == 0 or first == start, "a band starts on a word of X and Y"
                        inputs.append((1, start - first, 0, 1, NEVER))
                    else:
                        lo = start // div
                        first = upload(lo, (start + n - 1) // div)
                        inputs.append((0, lo - first, start % div, div, NEVER))
                c, x, y = ({"q0": q0, "r0": r0, "div": div, "wrap": wrap} for _, q0, r0, div, wrap in inputs)
                c_full, x_full, y_full = (i[0] for i in inputs)
                run.dispatch_one(words, per_group, lambda gx: pack(
                    "where.wgsl", words=words, groups_x=gx, elems=n, bits=bits, c_full=c_full, x_full=x_full,
                    y_full=y_full, in_dst=in_dst, c=c, x=x, y=y))
            run.drain(sink, nbytes)
            written += nbytes
    finally:
        run.release()
    return written

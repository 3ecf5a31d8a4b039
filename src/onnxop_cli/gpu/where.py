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

    for each band of the output (at most one binding, pieces' banding):
        upload each input's window for the band (one broadcast along leading
        axes: the whole input, once); one dispatch; readback dst --sink-->

The buffers, uploads, readback and graph (device-resident) sources and
sinks are gpu/pieces.py's ``_Run``: only the kernel and its parameters
differ.
"""

from __future__ import annotations

import struct
from typing import Optional, Sequence

from . import pieces
from .buffers import WORD, env_poison, grid, round_up
from .device import Gpu
from .kernels import shader_const

SHADER = "where.wgsl"
LIMIT = 1 << 31  # output elements: the kernel's element arithmetic is u32
NEVER = 0xFFFFFFFF  # a run's wrap that never comes

Form = tuple[int, int]  # (div, size): input element (e // div) % size of output element e


def entry(bits: int) -> str:
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
    from .gather import binding_limit

    cap = min(binding_bytes or pieces.DEFAULT_BAND, binding_limit(gpu))
    cap = max(WORD, cap - cap % WORD)
    band_bytes = min(cap, round_up((count * bits + 7) // 8, WORD))
    band = band_bytes * 8 // bits
    widths = (8, bits, bits)
    window_bytes = min(cap, band_bytes + 2 * WORD)
    whole = [div * size < count for div, size in forms]  # wraps: the whole input uploaded once
    if (count >= LIMIT or any(s is None or s.swap for s in sources[:3])
            or any(w and size * width // 8 + WORD > window_bytes for w, (_, size), width in zip(whole, forms, widths))):
        return pieces.run_pieces(gpu, sources, sink, pieces=fallback, count=count, bits=bits,
                                 binding_bytes=binding_bytes, max_groups_per_dim=max_groups_per_dim, poison=poison)
    if poison is None:
        poison = env_poison()
    run = pieces._Run(gpu, band_bytes, window_bytes, max_groups_per_dim, shader=SHADER, entry=entry(bits))
    per_group = shader_const(SHADER, "WG") * shader_const(SHADER, "WORDS")
    buffers = [(run.upload_mask, run.mask), (run.upload, run.src), (run.upload_other, run.other)]
    written = 0
    try:
        for start in range(0, count, band):
            n = min(band, count - start)
            nbytes = (n * bits + 7) // 8
            words = -(-nbytes // 4)
            encoder = gpu.device.create_command_encoder()
            inputs = []
            with gpu.errors("where band"):
                if poison is not None:
                    gpu.queue.write_buffer(run.dst, 0, bytes([poison]) * round_up(nbytes, 4))
                for k, ((div, size), width) in enumerate(zip(forms, widths)):
                    source = sources[k]
                    assert source is not None
                    up, buf = buffers[k]
                    full = div == 1 and size == count
                    if whole[k]:
                        if start == 0:
                            assert run._upload(up, buf, source, 0, size - 1, width, encoder) == 0
                        inputs.append((0, (start // div) % size, start % div, div, size))
                    elif full:
                        first = run._upload(up, buf, source, start, start + n - 1, width, encoder)
                        assert k == 0 or first == start, "a band starts on a word of X and Y"
                        inputs.append((1, start - first, 0, 1, NEVER))
                    else:
                        lo = start // div
                        first = run._upload(up, buf, source, lo, (start + n - 1) // div, width, encoder)
                        inputs.append((0, lo - first, start % div, div, NEVER))
                gx, gy = grid(-(-words // per_group), run.max_dim)
                record = struct.pack("<8I12I", words, gx, n, bits, *(i[0] for i in inputs), 0,
                                     *(v for i in inputs for v in i[1:]))
                gpu.queue.write_buffer(run.params, 0, record)
                compute = encoder.begin_compute_pass()
                compute.set_pipeline(run.pipeline)
                compute.set_bind_group(0, run.bind_group, [0])
                compute.dispatch_workgroups(gx, gy, 1)
                compute.end()
                gpu.queue.submit([encoder.finish()])
            run.drain(sink, nbytes)
            written += nbytes
    finally:
        run.release()
    return written

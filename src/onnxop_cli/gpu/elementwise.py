"""One elementwise kernel over the output (gpu/render/elementwise.py renders
it from its description): integer arithmetic, comparisons and logic with
numpy's broadcasting, Cast between any two numeric types, Range.

    upload each input read through the axes table whole, once
    for each band of the output (at most one binding and BAND bytes):
        upload the band's window of each input read directly (the output's
        shape, row-major); one dispatch; check the fault word; readback --sink-->

The output is never handed to the sink before its band's fault word says no
divisor was zero, so a division by zero leaves no output (the file writer
discards what it began). Sources and sinks may be a graph's device buffers
(gpu/resident.py): they are copied on the device, nothing crosses.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Optional, Sequence

from ..core.region import c_strides
from ..errors import OpError
from .buffers import WORD, BufferUsage, binding_limit, dispatch_limit, env_poison, reset_status, round_up
from .device import Gpu
from .indexed_buffers import Buffers, read_small, to_sink
from .pieces import Sink
from .program import compiled, grid_x
from .render.elementwise import AXIS, BITS, INPUTS, NONE, PARAMS, Elementwise
from .word_kernels import BAND  # bands of at most 16 MiB, as Where's select's (measured there)

LIMIT = 1 << 31  # output and input elements: the kernel's element arithmetic is u32
LAST = "elementwise-last"  # gpu.cache[LAST]: the last run's bands and workgroup (tests check the path)


def run_elementwise(
    gpu: Gpu,
    kernel: Elementwise,
    sources: Sequence[Any],
    sink: Sink,
    *,
    shape: Sequence[int],
    strides: Sequence[Sequence[int]],
    konst: Sequence[int] = (0, 0, 0, 0),
    where: str = "",
    binding_bytes: Optional[int] = None,
    poison: Optional[int] = None,
) -> int:
    """Stream the output of ``kernel`` (``shape``, row-major) into ``sink``;
    ``sources`` are the inputs (gpu/pieces.Source: bytes and swap unit),
    ``strides`` each one's element strides over ``shape`` (0 where
    broadcast). Returns the bytes written. A zero divisor raises OpError
    naming ``where`` and the output element."""
    count = math.prod(shape)
    out_bits = BITS[kernel.out]
    stats = gpu.cache[LAST] = {"bands": 0, "wg": kernel.schedule.wg}
    if count == 0:
        return 0
    if poison is None:
        poison = env_poison()
    cap = min(binding_bytes or binding_limit(gpu), binding_limit(gpu))
    cap -= cap % WORD
    bits = [BITS[o.dtype] for o in kernel.inputs]
    # read directly: row-major over the output's shape, 0 on axes of extent 1 (ops/tensor_op.broadcast_strides)
    rowmajor = tuple(0 if d == 1 else s for d, s in zip(shape, c_strides(shape)))
    direct = [tuple(s) == rowmajor for s in strides]
    # a band's elements: whole words of every input and of the output, its windows within a binding
    widest = max([out_bits, *(b for b, d in zip(bits, direct) if d)])
    band = max(64, min(BAND * 8 // out_bits, (cap - 2 * WORD) * 8 // widest) // 64 * 64)
    sizes = []
    for k, (source, d) in enumerate(zip(sources, direct)):
        need = round_up((min(count, band) * bits[k] // 8 if d else source.data.nbytes) + WORD, WORD)
        if need > cap:
            raise OpError(f"{where}: input {k} ({source.data.nbytes} bytes, broadcast) is larger than one "
                          f"binding ({cap} bytes); onnxop reads a broadcast input whole")
        sizes.append(need)
    U = BufferUsage
    bufs = Buffers(gpu)  # destroyed together when the run ends
    written = 0
    try:
        with gpu.errors(kernel.label):
            program = compiled(gpu, kernel)
            ins = [bufs.new(f"in{k}", sizes[k], U.STORAGE | U.COPY_DST) for k in range(len(sources))]
            ins += [bufs.new("unused", WORD, U.STORAGE) for _ in range(INPUTS - len(ins))]
            band_bytes = round_up(-(-min(count, band) * out_bits // 8), WORD)  # 2- and 4-bit: whole bytes
            dst = bufs.new("dst", band_bytes, U.STORAGE | U.COPY_SRC | U.COPY_DST)
            params = bufs.new("params", PARAMS.size, U.UNIFORM | U.COPY_DST)
            axes = _axes(shape, strides)
            table = bufs.holding("axes", axes)
            fault = bufs.result("fault")
            group = program.bind([*ins, (dst, 0, band_bytes), (params, 0, PARAMS.size), (table, 0, len(axes)),
                                  (fault, 0, 16)])
            for k, source in enumerate(sources):  # broadcast inputs: whole, once
                if not direct[k]:
                    _upload(gpu, source, 0, source.data.nbytes, ins[k])
        max_dim = dispatch_limit(gpu)
        strided = sum(1 << k for k, d in enumerate(direct) if not d)
        for e0 in range(0, count, band):
            n = min(band, count - e0)
            nbytes = (n * out_bits + 7) // 8
            base = [0, 0, 0, 0]
            with gpu.errors(kernel.label):
                for k, source in enumerate(sources):
                    if direct[k]:
                        lo = e0 * bits[k] // 8
                        _upload(gpu, source, lo, min(source.data.nbytes, lo + round_up(-(-n * bits[k] // 8), WORD)),
                                ins[k])
                        base[k] = e0
                if poison is not None:
                    gpu.queue.write_buffer(dst, 0, bytes([poison]) * round_up(nbytes, WORD))
                reset_status(gpu, fault, NONE)
                units = n if out_bits >= 32 else -(-n * out_bits // 32)
                groups = -(-units // kernel.schedule.wg)
                gpu.queue.write_buffer(params, 0, PARAMS.pack(
                    units=units, groups_x=grid_x(groups, max_dim), count=n, e0=e0, rank=len(shape), strided=strided,
                    base=base, konst=konst, **kernel.conversion))
                encoder = gpu.device.create_command_encoder()
                program.dispatch(encoder, groups, max_dim, group)
                gpu.queue.submit([encoder.finish()])
            if kernel.faults:
                _check_fault(gpu, bufs, fault, shape, where, kernel.fault)
            to_sink(gpu, bufs, dst, nbytes, sink)
            stats["bands"] += 1
            written += nbytes
    finally:
        bufs.release()
    return written


def _axes(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> bytes:
    """The axes table: per axis its extent and each input's stride (render/elementwise.AXIS)."""
    rows = ({"extent": d, **{f"s{k}": strides[k][j] if k < len(strides) else 0 for k in range(INPUTS)}}
            for j, d in enumerate(shape))
    return AXIS.layout.pack_rows(rows) or bytes(16)


def _upload(gpu: Gpu, source: Any, lo: int, hi: int, into: Any) -> None:
    """Bytes [lo, hi) of a source into ``into`` from its start (lo a whole word)."""
    from .bands import fill
    from .resident import DeviceBuffer

    n = hi - lo
    if n <= 0:
        return
    if isinstance(source.data, DeviceBuffer):  # a graph's intermediate: copied on the device
        fill(gpu, into, source.data, [(lo, 0, n)])
        return
    raw = bytearray(round_up(n, WORD))
    source.data.readinto(lo, memoryview(raw)[:n])
    gpu.queue.write_buffer(into, 0, raw)


def _check_fault(gpu: Gpu, bufs: Buffers, fault: Any, shape: Sequence[int], where: str, what: str) -> None:
    (first,) = struct.unpack("<I", read_small(gpu, bufs, fault, 4))
    if first != NONE:
        import numpy as np

        at = ", ".join(map(str, np.unravel_index(first, shape)))
        raise OpError(f"{where}: " + what.format(at=f"({at})"))


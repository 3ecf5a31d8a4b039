"""NonZero on the device: the int64 (rank, count) coordinates of the non-zero elements, in row-major
order, by one kernel (gpu/render/nonzero.py) run twice, an invocation an element (its storage offset from the
strides: a Fortran-order input reads in place). Pass 0 counts each workgroup's non-zero elements into
counts[group]; the host turns the counts into each group's first output position (a prefix sum of one
number per 256 elements), checked against the count the plan was made with (the output's shape: a
kernel that counted otherwise is a GpuError, never a wrong-sized output). Pass 1 ranks them in the
workgroup (a scan in workgroup memory) and writes axis k of the i-th to out[k * total + i], an int64 as
two words (a coordinate is below 2^32: the device indexes fewer elements).

Zero is a bit pattern: all bits 0, but a float's sign bit (-0.0 is zero, every NaN is not). An element
is ``words`` words, or one ``width``-byte part of a word (bool, int8, int16, float16, bfloat16); a
float is parts of ``part_words`` words (complex: two), each with a sign bit that ``sign`` clears in the
part's word ``sign_word`` (the last, or the first when big-endian).

Limits, one-line errors: the data and the output each fit one storage binding, and the data has fewer
than 2^32 elements.
"""

from __future__ import annotations

import struct
from itertools import accumulate
from typing import Callable

from ..errors import GpuError, OpError
from .buffers import dispatch_limit, read_through
from .device import Gpu
from .engines.base import BufferUsage as U
from .indexed import Buffers, Data, fits
from .indexed_buffers import launch, read_small
from .render.nonzero import AXIS, KERNEL

FLOAT_PARTS = {"float16": 2, "bfloat16": 2, "float": 4, "double": 8, "complex64": 4, "complex128": 8}


def _fields(e: Data, onnx_name: str, pass_: int, total: int) -> dict[str, int]:
    part, itemsize = FLOAT_PARTS.get(onnx_name, 0), e.bits // 8
    if itemsize < 4:
        width, words, part_words, sign_word = itemsize, 0, 1, 0
        full = (1 << e.bits) - 1
        sign = full & ~((1 << (8 * part - 1)) if not e.swap else 0x80) if part else full
    else:
        width, words = 0, itemsize // 4
        part_words = part // 4 if part else words
        sign_word = (0 if e.swap else part_words - 1) if part else 0
        sign = (0xFFFFFF7F if e.swap else 0x7FFFFFFF) if part else 0xFFFFFFFF
    return dict(count=e.size, rank=len(e.shape), pass_=pass_, width=width, words=words, part_words=part_words,
                sign_word=sign_word, sign=sign, total=total)


def refuse_unindexable(op: str, n: int) -> None:
    """The kernel indexes the data's elements with u32: data of 2^32 elements
    or more is refused (the plan asks before it counts the elements)."""
    if n >= 1 << 32:
        raise OpError(f"{op}: the data has {n} elements; the device indexes at most 2^32 - 1")


def nonzero_indices(gpu: Gpu, e: Data, onnx_name: str, total: int, sink: Callable[[memoryview], None], *,
                    op: str = "NonZero", max_groups_per_dim: int | None = None) -> int:
    """Stream the (rank, total) int64 coordinates of the non-zero elements of ``e`` (its ``strides`` those of
    its storage, in elements; of ONNX type ``onnx_name``) into ``sink``; the bytes written."""
    n, rank = e.size, len(e.shape)
    refuse_unindexable(op, n)
    nbytes = rank * total * 8
    if e.source.nbytes < e.nbytes:
        raise OpError(f"{op}: the data holds {e.source.nbytes} bytes, not {e.nbytes}")
    fits(gpu, e.nbytes, "the data", op)
    fits(gpu, nbytes, "the output", op)
    if nbytes == 0:
        return 0
    max_dim = dispatch_limit(gpu, max_groups_per_dim)
    groups = -(-n // KERNEL.schedule.wg)
    with gpu.lock:  # one call at a time on the device's pipelines and queue (device.py)
        bufs = Buffers(gpu)
        try:
            with gpu.errors(f"{op} on the device"):
                data = bufs.upload("data", e.source, e.nbytes)
                counts = bufs.new("counts", groups * 4, U.STORAGE | U.COPY_SRC | U.COPY_DST)
                out = bufs.new("nonzero", nbytes, U.STORAGE | U.COPY_SRC)
                axes = bufs.holding("axes", AXIS.layout.pack_rows(
                    {"dim": d, "stride": s} for d, s in zip(e.shape, e.strides)) or bytes(16))
                resources = [data, counts, out, None, axes]
                launch(bufs, KERNEL, n, 1, max_dim, "nonzero params", _fields(e, onnx_name, 0, total), resources)
                found = struct.unpack(f"<{groups}I", read_small(gpu, bufs, counts, groups * 4))
                starts = list(accumulate(found, initial=0))  # each group's first output position, then the total
                if starts[-1] != total:
                    raise GpuError(f"{op}: the device counted {starts[-1]} non-zero elements, the host {total}")
                gpu.queue.write_buffer(counts, 0, struct.pack(f"<{groups}I", *starts[:-1]))
                launch(bufs, KERNEL, n, 1, max_dim, "nonzero params", _fields(e, onnx_name, 1, total), resources)
                read_through(gpu, out, None, nbytes, sink)  # host bytes to any sink, as NonZero always gave
                return nbytes
        finally:
            bufs.release()

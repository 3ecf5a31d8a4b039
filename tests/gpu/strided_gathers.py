"""The strided gather kernel's test pieces (tests/gpu/test_gather*.py): numpy's view of a buffer as an
Access, the kernel run on a source's own bytes (output poisoned), numpy's row-major little-endian
bytes, the views of a 3-D array by kind, Fortran and big-endian layouts, ONNX's packed 2- and 4-bit
types, and the dtypes and hypothesis settings the files share."""

from __future__ import annotations

from unittest import mock

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, settings
from onnx import numpy_helper

from onnxop_cli.gpu import Access, gather_through_kernel, tiling
from onnxop_cli.gpu.buffers import WORD, can_map, round_up
from onnxop_cli.gpu.gather import MAPPED_BAND, make_plan
from onnxop_cli.core.tensor import MemoryBytes, swap_unit

POISON = 0xA5
# one dtype per element size, and both byte orders where it matters
ITEMSIZE_DTYPES = ["u1", "<u2", "<f4", "<f8", "<c16"]
BIG_ENDIAN = [">u2", ">i2", ">f2", ">f4", ">i4", ">u4", ">f8", ">i8", ">u8", ">c8", ">c16"]
PACKED = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.float4_e2m1fn]
SETTINGS = settings(
    max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# A forced binding makes bands and windows of that many bytes. Drawn at 16 (one word) for a view of 2,000
# 16-byte elements, it made 2,000 bands of one element each, about 2.5 CPU ms of dispatches, maps and
# submits apiece: what is tested is where the band and window edges fall in the view's structure, not how
# many there are, so a property raises its drawn binding to the bytes that cut the output and the source
# into at most MAX_PIECES bands and windows (the drawn one is kept wherever they are small enough).
MAX_PIECES = 24


def forced_binding(binding: int | None, view: Access, bits: int) -> int | None:
    """``binding`` bytes, or more where the view's output or the source range it reads would take more than
    MAX_PIECES of them; None stays None (the adapter's own limit)."""
    if binding is None:
        return None
    lo, hi = view.span()
    largest = (max(view.size, hi - lo + 1) * bits + 7) // 8
    return max(binding, round_up(-(-largest // MAX_PIECES), WORD))


def run_costs(gpu, source_nbytes: int, view: Access, bits: int, binding: int | None) -> list[int]:
    """tiling.RUN_COST, then 0 (packed runs wherever a box has a unit-stride axis, to run that path on small
    data) where the gather's plan differs under it. The plan is all a gather's work: the same bands, uploads
    and dispatches under both costs are the same bytes read into the same kernel calls (at the adapter's own
    binding a band's whole source range is one window, and the cost is never weighed)."""
    def bands(cost: int) -> list | None:
        with mock.patch.object(tiling, "RUN_COST", cost):
            own = MAPPED_BAND if can_map(gpu) else None  # gather_through_kernel's own choice
            plan, band_bytes, window_bytes = make_plan(gpu, source_nbytes, view, bits, 0, binding or own)
            return None if plan is None else [list(plan.bands()), band_bytes, window_bytes]

    return [tiling.RUN_COST] + [0] * (bands(0) != bands(tiling.RUN_COST))


def view_of(base: np.ndarray, v: np.ndarray) -> Access:
    """The Access (in elements) by which numpy's ``v`` reads ``base``'s buffer."""
    size = base.dtype.itemsize
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return Access(v.shape, tuple(s // size for s in v.strides), offset // size)


def gather(gpu, source: np.ndarray, view: Access, bits: int | None = None, **kw) -> bytes:
    """Run the kernel on ``source``'s own bytes (any byte order)."""
    out = bytearray()
    written = gather_through_kernel(
        gpu, MemoryBytes(source), out.extend, view=view, bits=bits or source.dtype.itemsize * 8,
        swap=swap_unit(source.dtype), poison=POISON, **kw,
    )
    assert written == len(out)
    return bytes(out)


def reference(array: np.ndarray) -> bytes:
    """Row-major little-endian bytes, by numpy."""
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def views(a: np.ndarray) -> dict[str, np.ndarray]:
    """numpy's views of a 3-D array, one per kind of layout change."""
    return {
        "transpose": a.transpose(2, 0, 1),
        "reversed": a[::-1, ::-2, 1:],
        "slice": a[1:, 1:4:2, ::-1],
        "broadcast": np.broadcast_to(a[:, :1, :], (2,) + a.shape[:1] + (5,) + a.shape[2:]),
        # two zero-stride axes around a real one; two copies along each show it as three did, at 2/3 the bands
        "tile": np.broadcast_to(a[None, :, None], (2, a.shape[0], 2) + a.shape[1:]),
        "depth_to_space": a.reshape(a.shape[0], 2, a.shape[1] // 2, a.shape[2]).transpose(2, 0, 3, 1),
        "scalar": a[1, 2, 3, ...],
        "empty": a[:, 2:2],
    }


def fortran(gpu, array: np.ndarray, **kw) -> bytes:
    raw = array.T if not array.flags.c_contiguous else array
    view = Access.fortran(array.shape) if not array.flags.c_contiguous else Access.row_major(array.shape)
    return gather(gpu, np.ascontiguousarray(raw), view, **kw)


def packed(values: np.ndarray) -> bytes:
    """ONNX's own packing (low bits first), by onnx.numpy_helper."""
    return numpy_helper.from_array(np.ascontiguousarray(values)).raw_data


def bits_of(dtype) -> int:
    return 2 if np.dtype(dtype).name.endswith("2") else 4


def random_packed(rng, shape, dtype) -> np.ndarray:
    return rng.integers(0, 1 << bits_of(dtype), shape, dtype=np.uint8).view(dtype)

"""Compress as a Gather (ops/compress.py: the condition's kept positions as
the indices of Gather's table and kernels, gpu/indexed.py) and as a piece
per run, byte for byte against onnx.reference on random bits. Every call
asserts which path ran: the gather kernels leave their transfer counts in
``gpu.cache[ix.LAST]``, the pieces do not. The thresholds are forced
(``GATHER_BELOW``, ``GATHER_ABOVE``) to run each path on small inputs; the
default rule is checked on the cases it is set by (benchmarks/ops_speed.py).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnxop_cli import compress
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import compress as compress_op

from conftest import random_array
from tensor_refs import reference, same

TYPES = ["?", "u1", "<i2", "<f2", ml_dtypes.bfloat16, "<f4", "<i8", "<f8", "<c16"]


@pytest.fixture(params=["gather", "pieces"])
def path(request, monkeypatch) -> str:
    if request.param == "gather":
        monkeypatch.setattr(compress_op, "GATHER_BELOW", 1 << 40)
    else:
        monkeypatch.setattr(compress_op, "GATHER_BELOW", 0)
        monkeypatch.setattr(compress_op, "GATHER_ABOVE", 1 << 40)
    return request.param


def check(backend, gpu, x, cond, axis, gathers: bool, opset: int = 28) -> None:
    """Compress against onnx.reference, byte for byte; ``gathers``: whether
    the gather kernels (not the pieces) must have made it."""
    attrs = {} if axis is None else {"axis": axis}
    want = reference("Compress", max(opset, 11), [x, cond], attrs)[0]
    want = want.astype(want.dtype.newbyteorder("<"))  # onnxop writes little-endian
    gpu.cache.pop(ix.LAST, None)
    got = compress(x, condition=cond, axis=axis, opset=opset, backend=backend)
    assert same(got, want), (x.dtype, x.shape, axis, cond.tolist())
    assert (ix.LAST in gpu.cache) == gathers, (x.dtype, x.shape, axis, cond.tolist())


def test_every_type_either_path(backend, gpu, rng, path):
    """Every width the op takes (bool .. complex128), along an inner axis (a
    negative one too) and flattened, the condition as long as the axis or
    shorter, on both paths."""
    for t in TYPES:
        x = random_array(rng, (3, 6, 5), np.dtype(t))
        for axis, n in ((None, 37), (1, 4), (-1, 5)):
            cond = rng.integers(0, 2, n).astype(bool)
            cond[0] = True  # something kept: an empty output runs no kernel
            check(backend, gpu, x, cond, axis, path == "gather")


def test_layouts_and_opset_9(backend, gpu, rng, path):
    """Column-major and big-endian inputs (flattened column-major: one lookup
    per axis, GatherND's table) and opset 9's non-negative axes."""
    for x in (np.asfortranarray(random_array(rng, (4, 3, 7), "<f4")), random_array(rng, (4, 3, 7), ">f8"),
              np.asfortranarray(random_array(rng, (5, 9), ">i2"))):
        for axis in (None, 0, 1, -1):
            length = x.size if axis is None else x.shape[axis]
            cond = rng.integers(0, 2, length).astype(bool)
            cond[-1] = True
            check(backend, gpu, x, cond, axis, path == "gather")
    x = random_array(rng, (6, 10), "<f2")
    check(backend, gpu, x, rng.integers(0, 2, 9).astype(bool) | np.eye(1, 9, 0, bool)[0], 1, path == "gather", 9)


def test_nothing_kept(backend, gpu, rng, path):
    """An all-false (or empty) condition: a zero-size output of the input's type."""
    x = random_array(rng, (3, 4), "<f8")
    for axis, cond in ((None, np.zeros(5, bool)), (0, np.zeros(0, bool)), (1, np.zeros(4, bool))):
        check(backend, gpu, x, cond, axis, False)


def test_a_scalar_flattens_to_its_one_element(backend, gpu, rng, path):
    """Compress without an axis of a rank-0 input selects from its flattened (1,): the pieces' boxes had no
    axis to start one on, 'generator raised StopIteration', an internal error, for every type the gather
    does not take (strings) and on the pieces' path for the others."""
    for x in (random_array(rng, (), "<f4"), random_array(rng, (), "<i8"), np.array(True)):
        for cond in (np.array([True]), np.array([True, False]), np.array([False]), np.zeros(0, bool)):
            check(backend, gpu, x, cond, None, path == "gather" and bool(cond.any()))
    assert compress(np.array("text", dtype=object), condition=[True], backend=backend).tolist() == ["text"]


def test_the_rule(backend, gpu, rng):
    """The default thresholds: short runs gather (the benchmark's case, and
    a few runs of a few bytes); a few long runs keep the pieces; many long
    runs gather."""
    x = random_array(rng, (8, 72), "<f4")
    keep = np.ones(72, bool)
    keep[rng.choice(72, 9, replace=False)] = False
    check(backend, gpu, x, keep, 1, True)  # runs of ~8 floats
    check(backend, gpu, x, np.array([1, 0, 1], bool), 1, True)  # 2 runs of 4 bytes
    check(backend, gpu, x, np.ones(40, bool), 1, False)  # 1 run of 160 bytes a row
    check(backend, gpu, x, np.arange(8) != 3, 0, False)  # 2 runs of whole rows
    check(backend, gpu, x, np.arange(72 * 8) % 20 < 18, None, False)  # 29 runs of 72 bytes
    check(backend, gpu, x, np.arange(72 * 8) % 16 < 15, None, True)  # 36 runs of 60 bytes
    y = random_array(rng, (16, 72), "<f4")
    check(backend, gpu, y, np.arange(72 * 16) % 24 < 20, None, True)  # 48 runs of 80 bytes: more than 32
    z = random_array(rng, (80, 2, 2), "<f4")
    check(backend, gpu, z, np.arange(80) % 2 == 0, 0, True)  # 40 runs of one 16-byte slice
    assert gpu.cache[ix.LAST].get("slabs") == 1  # int64 indices: the vec4 kernel reads those


def test_above_one_binding(backend, gpu, rng, shrink_binding):
    """Inputs and outputs larger than one storage binding (shrunk to 4 KiB):
    the gather's bands and windows, along an inner axis and flattened."""
    shrink_binding(4096)
    x = random_array(rng, (40, 50), "<f8")  # 16000 bytes
    cond = rng.integers(0, 2, 50).astype(bool)
    cond[:2] = (True, False)
    check(backend, gpu, x, cond, 1, True)
    cond = rng.integers(0, 2, 1500).astype(bool)  # ~750 kept: 6 KB out, 3 KB of int32 indices
    cond[:2] = (True, False)
    check(backend, gpu, x, cond, None, True)
    y = random_array(rng, (300, 4, 2), "<f4")  # slices of 32 bytes: the vec4 slabs, in windows
    cond = rng.integers(0, 2, 300).astype(bool) | (np.arange(300) % 7 == 0)
    check(backend, gpu, y, cond, 0, True)
    assert gpu.cache[ix.LAST].get("slabs") == 1  # int64 indices: the vec4 kernel reads those

"""The transpose kernels (shaders/transpose_tiled.wgsl for GPUs,
shaders/transpose_blocked.wgsl for CPU adapters; gpu/tiled.py chooses),
byte for byte against numpy, on every adapter.

Each adapter chooses one of them by its type (docs/performance-adapters.md),
so the GPU tests force each with $ONNXOP_GATHER and check that it wrote the
dispatches they expect.
Random bits (NaN payloads, -0.0), poisoned output, every element width:
whole-word ones through the tiled kernel, sub-word ones through gather.wgsl
(asserted), big-endian and Fortran sources, reversed axes, shapes that are
not multiples of the tile, bands and packed runs from a small binding, and
mutations of the kernel that a test must catch.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.gpu import View, choose, gather_through_kernel, shaders, tiled, tiling
from onnxop_cli.gpu.gather import ENV_GATHER, SHADER as GATHER_SHADER, VARIANTS, variants
from onnxop_cli.gpu.buffers import grid
from onnxop_cli.gpu.tiling import Dispatch, Plan
from onnxop_cli.core.tensor import MemoryBytes, swap_unit

POISON = 0xA5
WORD_DTYPES = ["<u4", "<f4", "<f8", "<i8", "<c8", "<c16", ">f4", ">i4", ">f8", ">c8", ">c16"]
SUB_WORD = ["u1", "<u2", ">f2", "bool", ml_dtypes.bfloat16]
CASES = {  # shape, perm: the innermost axis moves in each
    "2-D": ((37, 70), (1, 0)),
    "3-D 2,1,0": ((9, 33, 41), (2, 1, 0)),
    "3-D 0,2,1": ((3, 40, 65), (0, 2, 1)),
    "4-D 3,1,0,2": ((4, 3, 50, 20), (3, 1, 0, 2)),
    "one tile": ((32, 32), (1, 0)),
    "thin": ((8, 97), (1, 0)),
    "short rows": ((8, 3, 97), (2, 0, 1)),
}


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv(ENV_GATHER, "tiled")


def view_of(base: np.ndarray, v: np.ndarray) -> View:
    size = base.dtype.itemsize
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return View(v.shape, tuple(s // size for s in v.strides), offset // size)


def reference(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def gather(gpu, source: np.ndarray, view: View, bits: int | None = None, **kw) -> tuple[bytes, dict]:
    out = bytearray()
    written = gather_through_kernel(
        gpu, MemoryBytes(source), out.extend, view=view, bits=bits or source.dtype.itemsize * 8,
        swap=swap_unit(source.dtype), poison=POISON, **kw,
    )
    assert written == len(out)
    return bytes(out), dict(gpu.cache["gather-last"])


def random_of(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    return random_array(rng, shape, dtype.newbyteorder("<")).astype(dtype)


# ------------------------------------------------------------ on the adapters


@pytest.mark.parametrize("dtype", WORD_DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_transposes_go_through_the_tiled_kernel_exactly(gpu, rng, forced, dtype, case):
    shape, perm = CASES[case]
    a = random_of(rng, shape, dtype)
    v = a.transpose(perm)
    out, counts = gather(gpu, a, view_of(a, v))
    assert out == reference(v)
    assert counts["tiled"] == counts["dispatches"] >= 1


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<c16"])
def test_a_fortran_source_is_tiled(gpu, rng, forced, dtype):
    f = np.asfortranarray(random_of(rng, (45, 3, 38), dtype))
    out, counts = gather(gpu, np.ascontiguousarray(f.T), View.fortran(f.shape))
    assert out == reference(f)
    assert counts["tiled"] >= 1


@pytest.mark.parametrize("dtype", ["<f4", ">c8", "<f8"])
def test_reversed_and_sliced_transposes(gpu, rng, forced, dtype):
    """Source stride -1 along the read axis, an offset, steps along the others."""
    a = random_of(rng, (9, 50, 45), dtype)
    for v, tiles in [
        (a[::-1, ::-1].transpose(2, 1, 0), True),
        (a[1:, 3:47:2, 2:].transpose(0, 2, 1), True),
        (a[:, ::-1, ::3].transpose(1, 2, 0), False),  # no axis of stride 1: gather.wgsl
    ]:
        out, counts = gather(gpu, a, view_of(a, v))
        assert out == reference(v)
        assert (counts["tiled"] >= 1) is tiles


@pytest.mark.parametrize(
    "kernel, dtype, shape, binding",
    [
        ("tiled", "<f4", (9, 64, 40), 40000),
        ("tiled", ">f8", (9, 64, 40), 40000),
        ("tiled", "<f4", (16, 64, 64), 160000),
        ("blocked", "<f4", (12, 64, 40), 80000),
        ("blocked", ">f4", (16, 64, 64), 160000),
    ],
)
def test_bands_and_packed_runs_from_a_small_binding(gpu, rng, monkeypatch, kernel, dtype, shape, binding):
    """Bands smaller than the tensor, whose boxes read packed runs (some taken
    by the transpose kernel) and windows that reach outside the upload (kept
    for gather.wgsl)."""
    monkeypatch.setattr(tiling, "RUN_COST", 0)
    monkeypatch.setenv(ENV_GATHER, kernel)
    a = random_of(rng, shape, dtype)
    v = a.transpose(2, 1, 0)
    out, counts = gather(gpu, a, view_of(a, v), binding_bytes=binding)
    assert out == reference(v)
    assert 1 <= counts["tiled"] <= counts["dispatches"] and counts["dispatches"] > 1


@pytest.mark.parametrize("dtype", SUB_WORD)
def test_sub_word_elements_stay_with_the_gather_kernel(gpu, rng, forced, dtype):
    """Neighbours share output words, which only gather.wgsl assembles (the
    packed 2- and 4-bit types are refused the same way: bits < 32, below)."""
    a = random_of(rng, (9, 40, 36), dtype)
    v = a.transpose(2, 1, 0)
    out, counts = gather(gpu, a, view_of(a, v))
    assert out == reference(v)
    assert counts["tiled"] == 0 and counts["dispatches"] >= 1


def test_the_transpose_question_picks_the_kernel(gpu, rng, monkeypatch):
    """The transpose question's answer (gpu/choose.py: as measured for this
    adapter, then each one forced) takes a 2-D transpose: blocked where the
    extents are multiples of 4 (one of 70 goes to gather.wgsl), tiled both,
    generic neither."""
    monkeypatch.delenv(ENV_GATHER, raising=False)
    for forced in (None, "blocked", "tiled", "generic"):
        if forced is not None:
            monkeypatch.setenv(choose.ENV_SCHEDULE, f"transpose={forced}")
        name = choose.answer(gpu, "transpose")
        assert name == (forced or name) and name in ("blocked", "tiled", "generic")
        for shape, fours in [((40, 72), True), ((40, 70), False)]:
            a = random_of(rng, shape, "<f4")
            out, counts = gather(gpu, a, view_of(a, a.T))
            assert out == reference(a.T)
            taken = {"blocked": fours, "tiled": True, "generic": False}[name]
            assert counts["tiled"] == (counts["dispatches"] if taken else 0), (name, shape)


# Each mutation breaks a kernel in a way the tests above must see.
MUTATIONS = {
    "tiled: write column": ("tiled", "tile[ll * PITCH + (al << lg) + qq]", "tile[ll * TILE + (al << lg) + qq]"),
    "tiled: no word flip": ("tiled", "src[(s << lg) + (q ^ flip)]", "src[(s << lg) + q]"),
    "tiled: outer offset": ("tiled", "db = db + i * inner;", "db = db + i * inner_a;"),
    "tiled: edge": ("tiled", "if (ja < da && jl < dl) {", "if (ja < da) {"),
    "blocked: rows swapped": ("blocked", "vec4<u32>(r0.y, r1.y, r2.y, r3.y)", "vec4<u32>(r0.y, r2.y, r1.y, r3.y)"),
    "blocked: row step": ("blocked", "dst[d + 3u * ia4]", "dst[d + 3u]"),
    "blocked: no swap": ("blocked", "r2 = bswap(r2);", "r2 = r2;"),
    "blocked: outer offset": ("blocked", "sb = sb + i * view_axis(params.at + j).stride_lo;", "sb = sb + i;"),
}
# (Dropping the blocked kernel's partial-row guard is not caught: the extra
# rows land where a later workgroup or dispatch writes the right values, and
# llvmpipe runs workgroups in order. On a GPU, whose order is free, they race.)


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_mutated_kernel_fails(gpu, rng, monkeypatch, mutation):
    kernel, old, new = MUTATIONS[mutation]
    monkeypatch.setenv(ENV_GATHER, kernel)
    shader = VARIANTS[kernel]
    text = shaders.shader_source(shader)
    assert text.count(old) == 1
    real = shaders.shader_source
    monkeypatch.setattr(shaders, "shader_source", lambda name: text.replace(old, new) if name == shader else real(name))
    key = f"{shader}:on:{GATHER_SHADER}"
    saved = gpu._pipelines.pop(key, None)
    try:
        a = random_of(rng, (4, 8, 36, 44), ">f4" if kernel == "blocked" else ">f8")
        v = a[..., :42].transpose(3, 0, 2, 1)  # 42: the blocked kernel's last block is partial
        out, counts = gather(gpu, a, view_of(a, v))
        assert counts["tiled"] >= 1
        assert out != reference(v)
    finally:
        gpu._pipelines.pop(key, None)
        if saved is not None:
            gpu._pipelines[key] = saved


# ------------------------------------------------------------ the blocked kernel (CPU adapters)

BLOCKED_CASES = {  # every extent and stride a multiple of 4
    "2-D": ((36, 72), (1, 0)),
    "3-D 2,1,0": ((8, 36, 44), (2, 1, 0)),
    "3-D 0,2,1": ((3, 40, 64), (0, 2, 1)),
    "4-D 3,1,0,2": ((4, 4, 48, 20), (3, 1, 0, 2)),
    "one block row": ((4, 16), (1, 0)),
}


@pytest.fixture
def blocked(monkeypatch):
    monkeypatch.setenv(ENV_GATHER, "blocked")


@pytest.mark.parametrize("dtype", ["<u4", "<f4", ">f4", ">i4"])
@pytest.mark.parametrize("case", list(BLOCKED_CASES))
def test_transposes_go_through_the_blocked_kernel_exactly(gpu, rng, blocked, dtype, case):
    shape, perm = BLOCKED_CASES[case]
    a = random_of(rng, shape, dtype)
    v = a.transpose(perm)
    out, counts = gather(gpu, a, view_of(a, v))
    assert out == reference(v)
    assert counts["tiled"] == counts["dispatches"] >= 1


@pytest.mark.parametrize("dtype", ["<f4", ">f4"])
def test_a_fortran_source_is_blocked(gpu, rng, blocked, dtype):
    f = np.asfortranarray(random_of(rng, (44, 3, 36), dtype))
    out, counts = gather(gpu, np.ascontiguousarray(f.T), View.fortran(f.shape))
    assert out == reference(f)
    assert counts["tiled"] >= 1


@pytest.mark.parametrize(
    "dtype, make, taken",
    [
        ("<f4", lambda a: a.transpose(2, 1, 0), True),
        ("<f4", lambda a: a[:, :, 4:].transpose(2, 1, 0), True),  # an offset of whole words
        ("<f4", lambda a: a[:, :, 1:37].transpose(2, 1, 0), False),  # an offset inside a word
        ("<f4", lambda a: a[:, :, ::-1].transpose(2, 1, 0), False),  # read axis reversed
        ("<f4", lambda a: a[:, :, :42].transpose(2, 1, 0), True),  # read extent 42: a partial last block
        ("<f4", lambda a: a[:, :, :41][:, :, ::-1][:, :, ::-1].transpose(2, 1, 0), True),  # 41
        ("<f4", lambda a: a[:, :, :3].transpose(2, 1, 0), True),  # only a partial block
        ("<f4", lambda a: a[:6].transpose(2, 1, 0), False),  # innermost extent 6
        ("<f4", lambda a: a[:, ::-1, :].transpose(2, 1, 0), True),  # an outer axis reversed
        ("<f8", lambda a: a.transpose(2, 1, 0), False),  # 8-byte elements
        ("<u2", lambda a: a.transpose(2, 1, 0), False),  # sub-word elements
    ],
)
def test_what_the_blocked_kernel_takes_and_leaves(gpu, rng, blocked, dtype, make, taken):
    a = random_of(rng, (8, 36, 44), dtype)
    v = make(a)
    out, counts = gather(gpu, a, view_of(a, v))
    assert out == reference(v)
    assert (counts["tiled"] >= 1) is taken


# ------------------------------------------------------------ the choice (no GPU)


def _dispatch(shape, strides, keep=False):
    v = View(shape, strides)
    box = next(tiling.boxes(v, 0, v.size))
    return Dispatch(box, v.strides[box.axis :], 0, keep)


@pytest.mark.parametrize(
    "shape, strides, bits, swap, keep, tiled_axis",
    [
        ((64, 64), (1, 64), 32, 0, False, 0),  # 2-D transpose: read along axis 0
        ((64, 64, 9), (1, 64, 4096), 64, 8, False, 0),  # 3-D 2,1,0 of big-endian 8-byte
        ((3, 64, 64), (4096, 1, 64), 128, 0, False, 1),  # 0,2,1 of 16-byte
        ((64, 64), (1, 64), 16, 0, False, None),  # sub-word: gather.wgsl
        ((64, 64), (1, 64), 64, 2, False, None),  # a swap inside a word
        ((64, 64), (1, 64), 32, 0, True, None),  # reaches outside the upload
        ((64, 64), (64, 1), 32, 0, False, None),  # row-major: the innermost axis does not move
        ((64, 64), (1, 0), 32, 0, False, None),  # broadcast along the innermost axis
        ((64, 64), (1, 2), 32, 0, False, None),  # innermost reads 8 bytes apart: lines shared
        ((64, 64), (3, 192), 32, 0, False, None),  # no unit-stride axis
        ((64, 64), (-1, 64), 32, 0, False, 0),  # reversed read axis
        ((64, 4), (1, 64), 32, 0, False, None),  # innermost extent 4: most of each tile idle
    ],
)
def test_which_dispatches_are_tiled(shape, strides, bits, swap, keep, tiled_axis):
    t = tiled.plan(_dispatch(shape, strides, keep), shape, bits, swap)
    assert (t.a if t else None) == tiled_axis


def test_the_tile_grid_covers_the_box():
    d = _dispatch((5, 70, 33), (1, 5, 350))  # a 3-D transpose, read axis 0
    t = tiled.plan(d, (5, 70, 33), 64, 0)
    per_a = tiled.TILE // 2
    assert (t.tiles_a, t.tiles_l) == (-(-5 // per_a), -(-33 // tiled.TILE))
    assert t.groups == 70 * t.tiles_a * t.tiles_l
    params, groups = tiled.record(t, d, 3, 64, 0, at=0, max_dim=4)
    gx, gy = grid(groups, 4)
    assert len(params) == 64 and groups == t.groups and gx * gy >= t.groups and gx <= 4


def test_the_host_tile_matches_the_shader():
    from onnxop_cli.gpu.kernels import shader_const

    assert shader_const(tiled.SHADER, "TILE") == tiled.TILE
    assert shader_const(tiled.SHADER, "WG") == shader_const(tiled.SHADER, "TILE") * shader_const(tiled.SHADER, "ROWS")


def test_the_choice_by_answer_and_override(monkeypatch):
    """The transpose question's answer picks the kernel, $ONNXOP_GATHER
    overrides it; a view with no unit-stride axis but the last (a slice),
    or sub-word elements, never asks (FakeGpu could not answer)."""

    class FakeGpu:
        schedules_used: dict = {}

    plan = Plan(View((4, 4), (1, 4)), 32, 16, 16, 4, 16, 64)
    monkeypatch.delenv(ENV_GATHER, raising=False)
    for answer, taken in [("blocked", ["blocked"]), ("tiled", ["tiled"]), ("generic", [])]:
        monkeypatch.setenv(choose.ENV_SCHEDULE, f"transpose={answer}")
        assert [n for n, _ in variants(plan, FakeGpu)] == taken
    monkeypatch.setenv(ENV_GATHER, "generic")
    assert variants(plan, FakeGpu) == []
    monkeypatch.setenv(ENV_GATHER, "tiled")
    assert [n for n, _ in variants(plan, FakeGpu)] == ["tiled"]
    assert variants(Plan(View((4, 4), (1, 4)), 8, 16, 16, 4, 16, 16), FakeGpu) == []
    monkeypatch.delenv(ENV_GATHER)
    monkeypatch.delenv(choose.ENV_SCHEDULE)
    assert variants(Plan(View((4, 4), (8, 1)), 32, 16, 16, 4, 16, 64), FakeGpu) == []


@pytest.mark.parametrize(
    "shape, strides, bits, swap, base, taken",
    [
        ((64, 64), (1, 64), 32, 0, 0, True),
        ((64, 64), (1, 64), 32, 4, 0, True),  # big-endian 4-byte
        ((64, 64), (1, 64), 32, 0, 2, False),  # the box starts inside a word of the source
        ((64, 62), (1, 64), 32, 0, 0, False),  # an extent of 62
        ((64, 64), (1, 66), 32, 0, 0, False),  # a stride of 66
        ((64, 64), (1, -64), 32, 0, 0, False),  # l reversed
        ((64, 64), (1, 64), 64, 0, 0, False),  # 8-byte elements
    ],
)
def test_which_dispatches_are_blocked(shape, strides, bits, swap, base, taken):
    v = View(shape, strides)
    box = next(tiling.boxes(v, 0, v.size))
    d = Dispatch(box, v.strides[box.axis :], base, False)
    assert (tiled.blocked_plan(d, shape, bits, swap) is not None) is taken

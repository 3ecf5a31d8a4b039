"""The transpose kernels as properties, byte for byte against numpy's transpose
(onnx.reference's Transpose is numpy's) on random bits (NaN
payloads, -0.0) with poisoned output: random structures (ranks 2 to 4,
random perms that move the innermost axis, extents around the block's
edges, reversed and sliced axes, offsets inside and outside a
word, Fortran and big-endian sources) and the old hand-picked ones x each
kernel of gpu/choose.py's transpose question forced (the blocked and the
generic kernels of gpu/render/strided.py), by $ONNXOP_GATHER and by $ONNXOP_SCHEDULE x every
element width. One tally per property asserts each case ran the kernel
meant for it (every dispatch, some, or none) and that each variant came up.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from properties import Tally

from onnxop_cli.core.sources import FileBytes
from onnxop_cli.core.tensor import MemoryBytes, swap_unit
from onnxop_cli.gpu import Access, choose, gather_through_kernel, tiling
from onnxop_cli.gpu import gather as g
from onnxop_cli.gpu.program import Program
from onnxop_cli.gpu.render.transpose import MIN_STRIDE_BYTES

POISON = 0xA5
WIDTHS = ["<u4", "<f4", ">f4", ">i4", "<f8", ">f8", "<i8", "<c8", ">c8", "<c16", ">c16",
          "u1", "<u2", ">f2", "bool", ml_dtypes.bfloat16]
ODD = (5, 7, 9, 31, 33, 41, 65)  # never whole blocks (4)
FOURS = (4, 8, 12, 16, 20, 32, 36, 44, 64)
KERNELS = ("blocked", "generic")


# hand-picked (shape, slice, perm, blocked takes): the innermost axis moves in each
S = slice(None)
R = slice(None, None, -1)
FIXED = [
    ((37, 70), (), (1, 0), False), ((9, 40, 36), (), (2, 1, 0), False),
    ((9, 33, 41), (), (2, 1, 0), False),
    ((3, 40, 65), (), (0, 2, 1), False), ((4, 3, 50, 20), (), (3, 1, 0, 2), False),
    ((32, 32), (), (1, 0), True), ((8, 97), (), (1, 0), False), ((8, 3, 97), (), (2, 0, 1), False),
    ((8, 36, 44), (), (2, 1, 0), True), ((36, 72), (), (1, 0), True),
    ((3, 40, 64), (), (0, 2, 1), True), ((4, 4, 48, 20), (), (3, 1, 0, 2), True),
    ((4, 16), (), (1, 0), True), ((40, 72), (), (1, 0), True), ((40, 70), (), (1, 0), False),
    ((9, 50, 45), (R, R), (2, 1, 0), False),
    ((9, 50, 45), (slice(1, None), slice(3, 47, 2), slice(2, None)), (0, 2, 1), False),
    ((9, 50, 45), (S, R, slice(None, None, 3)), (1, 2, 0), False),  # no axis of stride 1
    ((8, 36, 44), (S, S, slice(4, None)), (2, 1, 0), True),  # an offset of whole words
    ((8, 36, 44), (S, S, slice(1, 37)), (2, 1, 0), False),  # an offset inside a word
    ((8, 36, 44), (S, S, R), (2, 1, 0), False),  # read axis reversed
    ((8, 36, 44), (S, S, slice(None, 42)), (2, 1, 0), True),  # a partial last block
    ((8, 36, 44), (S, S, slice(40, None, -1)), (2, 1, 0), False),  # 41, reversed
    ((8, 36, 44), (S, S, slice(None, 41)), (2, 1, 0), True),
    ((8, 36, 44), (S, S, slice(None, 3)), (2, 1, 0), True),  # only a partial block
    ((8, 36, 44), (slice(None, 6),), (2, 1, 0), False),  # innermost extent 6
    ((8, 36, 44), (S, R, S), (2, 1, 0), True),  # an outer axis reversed
]


def schedules(k: int, item: int, rank: int, full: bool) -> list[tuple[str | None, str]]:
    """The kernels case ``k`` runs on, forced by $ONNXOP_GATHER (elements of 4 bytes and less) or $ONNXOP_SCHEDULE
    in turn (both, and the adapter's own choice, for the transpose question's 2-D cases): elements of other than 4
    bytes, which the blocked kernel leaves to the generic gather, on one in turn; 4 bytes on the blocked one, the
    generic one every third case (float32: every case)."""
    kernels = [KERNELS[k % 2]] if item != 4 else ["blocked"] + ["generic"] * (k % 3 == 0 or full)
    env = [(g.ENV_GATHER, n) if item <= 4 or (k + j) % 2 else (choose.ENV_SCHEDULE, f"transpose={n}")
           for j, n in enumerate(kernels)]
    question = item == 4 and k in (13, 14)  # (40, 72) and (40, 70): blocked where the extents are whole blocks
    both = [(choose.ENV_SCHEDULE, f"transpose={n}") for n in KERNELS] * question
    return env + both + [(None, "chosen")] * (question or rank == 2 and k % 4 == 1)


def little(v: np.ndarray) -> bytes:
    """numpy's transpose (the reference: onnx.reference's Transpose is numpy's), little-endian."""
    return np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<")).tobytes()


def view_of(base: np.ndarray, v: np.ndarray) -> Access:
    size = base.dtype.itemsize
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return Access(v.shape, tuple(s // size for s in v.strides), offset // size)


def gather(gpu, source, view: Access, **kw) -> tuple[bytes, str, str]:
    """(bytes, the variant asked, every/some/none of the dispatches it took)."""
    asked = []
    real = g.variants
    g.variants = lambda plan, gpu: asked.append(real(plan, gpu)) or asked[-1]
    out = bytearray()
    dtype = source.dtype
    try:
        written = gather_through_kernel(gpu, kw.pop("bytes", None) or MemoryBytes(source), out.extend, view=view,
                                        bits=dtype.itemsize * 8, swap=swap_unit(dtype), poison=POISON, **kw)
    finally:
        g.variants = real
    assert written == len(out)
    c = gpu.cache["gather-last"]
    name = ",".join(asked[0]) if asked and asked[0] else "generic"
    return bytes(out), name, "every" if c["blocked"] == c["dispatches"] >= 1 else "some" if c["blocked"] else "none"


def structures(rng, dtype):
    """(source, its slice, perm, blocked takes, Fortran): the fixed
    ones, then random ones of ranks 2 to 4 (extents multiples of 4 for the
    blocked kernel and not), then Fortran sources (float32 both orders, >f8, <c16)."""
    item = np.dtype(dtype).itemsize
    for j, (shape, cut, perm, b) in enumerate(FIXED):
        if item != 4 and (9 <= j < 15 or item < 4 and j > 8 or cut and (shape[0] == 8 or item != 8)):
            continue  # the blocked kernel's edges for its 4 bytes, slices for 4 and 8
        a = random_array(rng, shape, np.dtype(dtype).newbyteorder("<")).astype(dtype)
        yield a, a[cut], perm, b, False
    for k in range(2):
        rank = 2 + k % 3
        shape = tuple(int(d) for d in rng.choice(FOURS if k % 2 else ODD, rank))
        while np.prod(shape) > 6000:  # small enough for one band
            shape = tuple(int(d) for d in rng.choice(FOURS if k % 2 else ODD, rank))
        perm = tuple(int(p) for p in rng.permutation(rank))
        while perm[-1] == rank - 1:
            perm = tuple(int(p) for p in rng.permutation(rank))
        a = random_array(rng, shape, np.dtype(dtype).newbyteorder("<")).astype(dtype)
        yield a, a, perm, bool(k % 2), False
    for shape in ((45, 3, 38), (44, 3, 36)) if np.dtype(dtype).str in ("<f4", ">f4", ">f8", "<c16") else ():
        f = np.asfortranarray(random_array(rng, shape, np.dtype(dtype).newbyteorder("<")).astype(dtype))
        yield f, f, (0, 1, 2), shape[0] % 4 == 0, True


def meant(kernel: str, dtype, view: Access, blocks: bool) -> str:
    item = np.dtype(dtype).itemsize
    if kernel == "generic" or item != 4:
        return "none"  # the blocked kernel moves 4-byte elements only
    n, stride = view.shape[-1], view.strides[-1]
    for d, s in zip(view.shape[-2::-1], view.strides[-2::-1]):  # axes that run on as one
        if s != stride * n:
            break
        n *= d
    if n < 4 or abs(stride) * item < MIN_STRIDE_BYTES:
        return "none"  # not a whole block, or the innermost reads share cache lines
    return "every" if blocks else "none"


@pytest.mark.parametrize("dtype", WIDTHS, ids=str)
def test_transposes_match_the_reference(gpu, rng, monkeypatch, dtype):
    tally = Tally()
    monkeypatch.delenv(g.ENV_GATHER, raising=False)
    for k, (a, cut, perm, blocks, fortran) in enumerate(structures(rng, dtype)):
        want = little(cut.transpose(perm))
        v = cut.transpose(perm)
        source, view = (np.ascontiguousarray(v.T), Access.fortran(v.shape)) if fortran else (a, view_of(a, v))
        for env, value in schedules(k, np.dtype(dtype).itemsize, a.ndim, dtype == "<f4"):
            kernel = choose.answer(gpu, "transpose") if env is None else value.split("=")[-1]
            with monkeypatch.context() as m:
                if env is not None:
                    m.setenv(env, value)
                out, name, ran = gather(gpu, source, view)
            label = f"case {k}: {a.shape} {np.dtype(dtype).str} view {view}, {env}={value}"
            assert out == want, label
            tally.add(label, (kernel, meant(kernel, dtype, view, blocks)), (name, ran) if ran != "none" else (kernel, ran))
    item = np.dtype(dtype).itemsize
    tally.check(*[("blocked", "every")] * (item == 4), ("generic", "none"))


HEADER = 128  # bytes before the data in the file sources, as a .npy header
# (kernel, dtype, shape, binding bytes, its dispatches taken or from a file): bands smaller than the tensor, whose boxes read
# packed runs (some taken by the transpose kernel) and windows that reach outside the upload (kept for the generic gather)
BANDED = [("generic", ">f8", (9, 64, 40), 40000, "none"),
          ("blocked", "<f4", (16, 64, 64), 160000, "every"), ("blocked", "<f4", (12, 64, 40), 80000, "some"),
          ("blocked", ">f4", (16, 64, 64), 160000, "every"), ("chosen", "<f4", (12, 40, 36), 8192, "file"),
          ("chosen", "<f4", (9, 33, 41), 8192, "file"), ("chosen", "<f4", (64, 48), 8192, "file")]


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "staged"])
def test_bands_of_a_small_binding(gpu, rng, tmp_path, monkeypatch, mapped):
    """Bands of memory and of a file read as packed runs (FileBytes.readruns),
    through the gather's mapped buffers (where the adapter maps storage
    buffers) and its staged ones: more than one dispatch, some by the kernel
    forced where the file's are any the adapter chose."""
    if mapped and not g.can_map(gpu):
        pytest.skip("no mapped storage buffers on this engine and adapter")
    if not mapped:
        monkeypatch.setattr(g, "can_map", lambda gpu: False)
    tally = Tally()
    for k, (kernel, dtype, shape, binding, taken) in enumerate(BANDED):
        perm, from_file = tuple(range(len(shape)))[::-1], taken == "file"
        a = random_array(rng, shape, np.dtype(dtype).newbyteorder("<")).astype(dtype)
        source = None
        if from_file:
            path = tmp_path / f"data{k}.bin"
            path.write_bytes(b"\x00" * HEADER + a.tobytes())
            source = FileBytes(path, HEADER, a.nbytes)
        with monkeypatch.context() as m:
            if kernel != "chosen":  # packed runs however short
                m.setenv(g.ENV_GATHER, kernel)
                m.setattr(tiling, "RUN_COST", 0)
            out, _, ran = gather(gpu, a, view_of(a, a.transpose(perm)), binding_bytes=binding, bytes=source)
        if source is not None:
            source.close()
        c = gpu.cache["gather-last"]
        label = f"case {k}: {shape} {dtype} {perm}, {kernel}, binding {binding}, file {from_file}"
        assert out == little(a.transpose(perm)), label
        assert c["mapped"] is mapped and c["dispatches"] > 1, label
        tally.add(label, taken, "file" if from_file else ran)
    tally.check("some", "every")


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "staged"])
def test_mapped_bands_are_twice_the_staged_ones(gpu, rng, monkeypatch, mapped):
    """Two mapped buffers hold what four staged ones do: the mapped path's
    bands are MAPPED_BAND, the staged path's DEFAULT_BAND (both made small)."""
    if mapped and not g.can_map(gpu):
        pytest.skip("no mapped storage buffers on this engine and adapter")
    if not mapped:
        monkeypatch.setattr(g, "can_map", lambda gpu: False)
    monkeypatch.setattr(g, "DEFAULT_BAND", 4096)
    monkeypatch.setattr(g, "MAPPED_BAND", 8192)
    bands = []
    real = g.Run.drain
    monkeypatch.setattr(g.Run, "drain", lambda self, sink, n: bands.append(n) or real(self, sink, n))
    a = random_array(rng, (16, 32, 48), np.dtype("<f4"))  # 96 KiB
    out, _, _ = gather(gpu, a, view_of(a, a.transpose(2, 1, 0)))
    assert out == little(a.transpose(2, 1, 0))
    assert max(bands) == (8192 if mapped else 4096) and sum(bands) == a.nbytes


# Each mutation breaks a kernel in a way the property must see (dropping the blocked kernel's partial-row
# guard is not caught: the extra rows land where a later workgroup or dispatch writes the right values, and
# llvmpipe runs workgroups in order; on a GPU, whose order is free, they race).
MUTATIONS = {
    "blocked: rows swapped": ("blocked", "vec4<u32>(r0.y, r1.y, r2.y, r3.y)", "vec4<u32>(r0.y, r2.y, r1.y, r3.y)"),
    "blocked: row step": ("blocked", "dst[d + 3u * ia4]", "dst[d + 3u]"),
    "blocked: no swap": ("blocked", "r2 = bswap(r2);", "r2 = r2;"),
    "blocked: outer offset": ("blocked", "sb = sb + i * view_axis(params.at + j).stride_lo;", "sb = sb + i;"),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_mutated_kernel_fails(gpu, rng, monkeypatch, mutation):
    kernel, old, new = MUTATIONS[mutation]
    monkeypatch.setenv(g.ENV_GATHER, kernel)
    program = g.VARIANTS[kernel]
    assert program.code.count(old) == 1
    # its own label: its own pipeline, never the real kernel's
    monkeypatch.setitem(g.VARIANTS, kernel, Program(f"{program.shader} mutated: {mutation}", program.kinds,
                                                    code=program.code.replace(old, new)))
    a = random_array(rng, (4, 8, 36, 44), np.dtype("<f4"))
    a = a.astype(a.dtype.newbyteorder(">"))
    cut = a[..., :42]  # 42: the blocked kernel's last block is partial
    out, name, ran = gather(gpu, a, view_of(a, cut.transpose(3, 0, 2, 1)))
    assert (name, ran) == (kernel, "every")
    assert out != little(cut.transpose(3, 0, 2, 1))

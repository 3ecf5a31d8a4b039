"""Concat, Split, Where and Pad on the GPU against onnx.reference and
onnxruntime, byte for byte, on random bits (NaN payloads, -0.0), and the
invalid half. Kernel behaviour (bands, windows, grids, packed types, layouts)
is tested on every backend; the shape rules once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnxop_cli import OpError, concat, pad, split, where
from onnxop_cli.errors import UsageError

from conftest import random_array
from tensor_refs import ort, quiet, reference, same

TYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.int64, np.bool_, np.complex64,
         np.complex128, np.uint64]


# ------------------------------------------------------------ Concat


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_matches_references(backend, rng, dtype, axis):
    shapes = [(3, 2, 5), (3, 1, 5), (3, 0, 5), (3, 4, 5)] if axis == 1 else None
    if axis == 0:
        shapes = [(2, 3, 5), (1, 3, 5), (0, 3, 5), (4, 3, 5)]
    if axis == -1:
        shapes = [(3, 2, 5), (3, 2, 1), (3, 2, 0), (3, 2, 7)]
    xs = [random_array(rng, s, dtype) for s in shapes]
    got = concat(*xs, axis=axis, backend=backend)
    assert same(got, reference("Concat", 13, xs, {"axis": axis})[0])
    want = ort("Concat", 13, xs, {"axis": axis})
    if want is not None:
        assert same(got, want[0])


@pytest.mark.parametrize("count", [9, 33, 300])
@pytest.mark.parametrize("axis", [0, 1])
def test_concat_many_inputs(backend, rng, count, axis):
    """More inputs than any binding limit, on axis 0 and on an inner axis with outer dims > 1."""
    xs = [random_array(rng, (int(rng.integers(0, 3)), 3) if axis == 0 else (3, int(rng.integers(0, 3))), np.uint8)
          for _ in range(count)]
    got = concat(*xs, axis=axis, backend=backend)
    assert same(got, np.concatenate(xs, axis=axis))


def test_concat_same_input_many_times(backend, rng):
    x = random_array(rng, (2, 3), np.float32)
    assert same(concat(*[x] * 40, axis=1, backend=backend), np.concatenate([x] * 40, axis=1))


def test_concat_small_bands_and_windows(backend, rng, monkeypatch):
    """Outputs of many bands and inputs read through many windows (the binding forced small)."""
    import onnxop_cli.gpu.pieces as pieces

    monkeypatch.setattr(pieces, "DEFAULT_BAND", 96)
    for dtype in (np.uint8, np.float16, np.float32, np.complex128):
        xs = [random_array(rng, (5, k, 7), dtype) for k in (3, 1, 4)]
        assert same(concat(*xs, axis=1, backend=backend), np.concatenate(xs, axis=1))


def test_concat_fortran_and_big_endian(backend, rng):
    a = np.asfortranarray(random_array(rng, (3, 4, 2), np.float32))
    b = random_array(rng, (3, 5, 2), np.float32).astype(">f4")
    c = np.asfortranarray(random_array(rng, (3, 1, 2), np.float32).astype(">f4"))
    want = np.concatenate([a, b.astype("<f4"), c.astype("<f4")], axis=1)
    assert same(concat(a, b, c, axis=1, backend=backend), want)


def test_concat_rules():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(OpError, match=r"input inputs_1 has shape \(3, 3\), which does not match \(2, 3\)"):
        concat(x, np.zeros((3, 3), np.float32), axis=1)
    with pytest.raises(OpError, match=r"axis 2 is out of range \[-2, 1\]"):
        concat(x, x, axis=2)
    assert same(concat(x, x, axis=-1, opset=4), np.concatenate([x, x], axis=-1))  # as onnx.reference, onnxruntime
    with pytest.raises(OpError, match="must have the same type"):
        concat(x, x.astype(np.float64), axis=0)
    with pytest.raises(OpError, match=r"Concat-1.*does not allow int8; int8 was added in Concat-4"):
        concat(x.astype(np.int8), axis=0, opset=3)
    with pytest.raises(OpError, match="scalars"):
        concat(np.float32(1), np.float32(2), axis=0)
    with pytest.raises(UsageError, match="Concat-4 needs --axis"):
        from onnxop_cli.cli.tensor_ops import build
        from onnxop_cli.ops import SPECS

        build(SPECS["Concat"], 4, {})


# ------------------------------------------------------------ Split


@pytest.mark.parametrize("dtype", TYPES + [ml_dtypes.bfloat16])
def test_split_matches_references(backend, rng, dtype):
    x = random_array(rng, (4, 7, 3), np.dtype(dtype))
    for opset, attrs, split_in, sizes in [
        (13, {"axis": 1}, np.array([2, 0, 5], np.int64), 3),
        (11, {"axis": -1, "split": [1, 2]}, None, 2),
        (18, {"axis": 1, "num_outputs": 3}, None, 3),
        (18, {"axis": 0, "num_outputs": 2}, None, 2),
    ]:
        params = {k: v for k, v in attrs.items()}
        if split_in is not None:
            params["split"] = split_in
        if dtype == ml_dtypes.bfloat16 and opset < 13:
            continue
        got = split(x, backend=backend, opset=opset, **params)
        inputs = [x] + ([split_in] if split_in is not None else [])
        want = reference("Split", opset, inputs, attrs, sizes)
        assert len(got) == len(want) and all(same(g, w) for g, w in zip(got, want)), (opset, attrs)
        theirs = ort("Split", opset, inputs, attrs, sizes)
        if theirs is not None:
            assert all(same(g, w) for g, w in zip(got, theirs))


@pytest.mark.parametrize("count", [9, 100])
def test_split_many_outputs(backend, rng, count):
    x = random_array(rng, (3, count * 2 + 1), np.int16)
    sizes = [2] * (count - 1) + [3]
    got = split(x, axis=1, split=sizes, backend=backend)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=1)
    assert len(got) == count and all(same(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("dim, parts", [(1, 2), (3, 4), (2, 3), (0, 3)])
def test_split_num_outputs_above_the_length_ends_in_an_empty_part(backend, rng, dim, parts):
    """Split-18's num_outputs above the axis's length: parts of ceil(dim/parts) = 1 and an empty last one
    ([1, 0] for 1 into 2), as onnx's shape inference, onnxruntime and onnx.reference make it; onnxop
    refused every such split (found by scripts/fuzz_graphs.py)."""
    x = random_array(rng, (2, dim, 3), np.dtype("uint16"))
    attrs = {"axis": 1, "num_outputs": parts}
    got = split(x, backend=backend, opset=18, **attrs)
    want = reference("Split", 18, [x], attrs, parts)
    assert [g.shape[1] for g in got] == [w.shape[1] for w in want] and all(same(g, w) for g, w in zip(got, want))
    theirs = ort("Split", 18, [x], attrs, parts)
    assert theirs is None or all(same(g, w) for g, w in zip(got, theirs))


def test_split_rules():
    x = np.zeros((5, 2), np.float32)
    with pytest.raises(OpError, match=r"split \[2, 2\] must be non-negative and sum to 5"):
        split(x, split=[2, 2])
    with pytest.raises(OpError, match="give split or num_outputs, not both"):
        split(x, split=[2, 3], num_outputs=2)
    with pytest.raises(OpError, match=r"cannot be cut into 4 parts of ceil\(2/4\)"):
        split(x, axis=1, num_outputs=4)
    with pytest.raises(OpError, match=r"give split \(the part sizes; --split\), or num_outputs \(--num-outputs\) "
                                      "from opset 18"):
        split(x, axis=0, opset=13)
    with pytest.raises(UsageError, match="has no num_outputs"):
        split(x, num_outputs=5, opset=13)


def test_a_models_split_makes_as_many_parts_as_its_node_has_outputs():
    """In a model the node's outputs are the parts (onnxruntime refuses others): a split of 2 sizes for
    3 outputs raised KeyError 'c'; for 1 output, or num_outputs 4 for 2, the parts past them were dropped."""
    from onnx import helper

    from onnxop_cli.backend import run_node

    x, two = np.arange(12, dtype=np.int32).reshape(3, 4), np.array([1, 3])
    for outputs, inputs, attrs, opset, message in [
            ("abc", [x, two], {}, 13, r"split \[1, 3\] makes 2 parts, but the node has 3 outputs$"),
            ("a", [x, two], {}, 13, r"split \[1, 3\] makes 2 parts, but the node has 1 output$"),
            ("ab", [x], {"num_outputs": 4}, 18, r"num_outputs 4 makes 4 parts, but the node has 2 outputs$")]:
        with pytest.raises(OpError, match=message):
            run_node(helper.make_node("Split", ["x", "s"][:len(inputs)], list(outputs), axis=1, **attrs), inputs,
                     opset=opset)
    out = run_node(helper.make_node("Split", ["x"], ["a", "", "c"], axis=1, num_outputs=3), [x], opset=18)
    assert [o.shape for o in out] == [(3, 2), (3, 0)]  # a part left out by an empty name is still a part


# ------------------------------------------------------------ Where


@pytest.mark.parametrize("dtype", TYPES + [ml_dtypes.bfloat16])
def test_where_matches_references(backend, rng, dtype):
    for cs, xs, ys in [((3, 1, 5), (4, 1), (1, 4, 5)), ((), (), ()), ((2, 0), (1,), (2, 1)), ((6,), (6,), ())]:
        c = rng.integers(0, 2, cs).astype(bool)
        x, y = random_array(rng, xs, np.dtype(dtype)), random_array(rng, ys, np.dtype(dtype))
        got = where(c, x, y, backend=backend)
        assert same(got, reference("Where", 16, [c, x, y])[0]), (cs, xs, ys)
        theirs = ort("Where", 16, [c, x, y])
        if theirs is not None:
            assert same(got, theirs[0])


def test_where_rank_8_and_layouts(backend, rng):
    c = np.asfortranarray(rng.integers(0, 2, (2, 1, 2, 1, 2, 1, 2, 3)).astype(bool))
    x = random_array(rng, (2, 2, 1, 2, 1, 2, 1), np.float64).astype(">f8")
    y = np.asfortranarray(random_array(rng, (1, 2, 2, 2, 2, 2, 2, 1), np.float64))
    assert same(where(c, x, y, backend=backend), np.where(c, x.astype("<f8"), y))


def test_where_rules():
    with pytest.raises(OpError, match=r"do not broadcast"):
        where(np.ones(3, bool), np.zeros(2, np.float32), np.zeros(3, np.float32))
    with pytest.raises(OpError, match="must have the same type"):
        where(np.ones(3, bool), np.zeros(3, np.float32), np.zeros(3, np.float64))
    with pytest.raises(OpError, match="does not allow float32 for input condition"):
        where(np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(OpError, match="bfloat16 was added in Where-16"):
        where(np.ones(3, bool), np.zeros(3, ml_dtypes.bfloat16), np.zeros(3, ml_dtypes.bfloat16), opset=15)


# ------------------------------------------------------------ Pad


MODES = ["constant", "edge", "reflect", "wrap"]



@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, np.float16, np.bool_, np.complex128])
def test_pad_matches_references(backend, rng, mode, dtype):
    x = random_array(rng, (3, 4, 2), dtype)
    for pads in ([1, 2, 0, 2, 1, 3], [0, 0, 1, 0, 0, 1], [2, 3, 1, 3, 7, 5], [0, 9, 0, 0, 8, 0]):
        if mode == "reflect" and any(p >= d for p, d in zip(pads, (3, 4, 2, 3, 4, 2))):
            continue  # beyond the axis: below (numpy keeps mirroring; onnxruntime refuses)
        p = np.array(pads, np.int64)
        inputs = [x, p] if mode != "constant" else [x, p, random_array(rng, (), dtype)]
        got = pad(*inputs, mode=mode, backend=backend)
        assert same(got, reference("Pad", 19, inputs, {"mode": mode})[0]), pads
        theirs = ort("Pad", 19, inputs, {"mode": mode})
        if dtype == np.float16 and mode == "constant" and np.isnan(inputs[2]):
            theirs = None  # onnxruntime's float16 fill goes through float: a NaN fill loses its payload
        if theirs is not None:
            assert same(quiet(got), quiet(theirs[0])), pads


@pytest.mark.parametrize("mode", ["reflect", "wrap", "edge"])
def test_pad_beyond_the_axis_length(backend, rng, mode):
    """numpy's (the reference's) reflect and wrap keep going past the axis length; edge on size-1 axes."""
    x = random_array(rng, (1, 3, 2), np.float32)
    for pads in ([5, 7, 3, 4, 11, 9], [0, 2, 0, 0, 5, 1], [1, 40, 1, 1, 40, 1]):
        want = reference("Pad", 19, [x, np.array(pads, np.int64)], {"mode": mode})[0]
        assert same(pad(x, pads=pads, mode=mode, backend=backend), want)


def test_pad_negative_pads_crop(backend, rng):
    x = random_array(rng, (4, 5), np.float32)
    for mode in MODES:
        for pads in ([-1, 2, 1, -2], [-2, -1, -1, -3], [1, -4, 0, 2]):
            got = pad(x, pads=pads, mode=mode, backend=backend)
            # onnxruntime refuses reflect on an axis cropped to one element; numpy (the reference) repeats it
            theirs = ort("Pad", 19, [x, np.array(pads, np.int64)], {"mode": mode}) if mode == "constant" else None
            crop = x[max(0, -pads[0]):4 - max(0, -pads[2]), max(0, -pads[1]):5 - max(0, -pads[3])]
            want = np.pad(crop, [(max(0, pads[0]), max(0, pads[2])), (max(0, pads[1]), max(0, pads[3]))], mode=mode)
            assert same(got, want), (mode, pads)
            if theirs is not None and mode == "constant":
                assert same(got, theirs[0]), (mode, pads)


def test_pad_crops_past_the_other_end_keep_nothing(backend):
    """A crop past the other end (begin 3, end -3 on an axis of 2) leaves nothing of the input: constant
    mode is all fill, the others are refused (as onnxruntime); edge gave x[0], reflect a GPU error."""
    x = np.array([1, 2], np.int32)
    for pads in ([3, -3], [-4, 3]):
        assert same(pad(x, pads=pads, backend=backend), np.zeros(pads[0] + pads[1] + 2, np.int32))
        for mode in ("edge", "reflect", "wrap"):
            with pytest.raises(OpError, match=f"mode {mode} cannot pad axis 0: it has no elements after cropping"):
                pad(x, pads=pads, mode=mode, backend=backend)
    empty = np.zeros((2, 0), np.int32)  # an end of -1 on an axis of length 0, the begin grows it to 2
    want = ort("Pad", 19, [empty, np.array([0, 3, 0, -1], np.int64)], {"mode": "constant"})
    assert want is not None and same(pad(empty, pads=[0, 3, 0, -1], backend=backend), want[0])
    with pytest.raises(OpError, match=r"mode reflect cannot pad axis 1: it has no elements \(length 0\)"):
        pad(empty, pads=[0, 3, 0, -1], mode="reflect", backend=backend)


def test_pad_constant_value_bits(backend):
    """NaN payloads, -0.0, float8 and the packed types keep their bits as the fill."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for bits in (0x7FC00123, 0xFFA00001, 0x80000000):
        value = np.array(bits, np.uint32).view(np.float32)
        got = pad(x, pads=[1, 0, 0, 1], constant_value=value, backend=backend)
        assert same(got, reference("Pad", 19, [x, np.array([1, 0, 0, 1]), value], {"mode": "constant"})[0])
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, ml_dtypes.uint4,
                  ml_dtypes.float4_e2m1fn, ml_dtypes.uint2, ml_dtypes.int2):
        raw = np.random.default_rng(5).integers(0, 4, (3, 5)).astype(dtype)
        value = np.array(1, dtype=dtype)
        for pads in ([0, 1, 1, 2], [1, 0, 0, 0], [0, 0, 0, 1]):  # odd last dims
            got = pad(raw, pads=pads, constant_value=value, backend=backend)
            want = reference("Pad", 25, [raw, np.array(pads, np.int64), value], {"mode": "constant"})[0]
            assert same(got, want), (dtype, pads)
            for mode in ("edge", "wrap", "reflect"):
                got = pad(raw, pads=pads, mode=mode, backend=backend)
                want = reference("Pad", 25, [raw, np.array(pads, np.int64)], {"mode": mode})[0]
                assert same(got, want), (dtype, pads, mode)


def test_pad_strings_on_the_host():
    x = np.array([["a", "bc"], ["déf", ""]], dtype=object)
    got = pad(x, pads=[0, 1, 1, 0], constant_value=np.array("z", dtype=object))
    want = np.pad(x, [(0, 1), (1, 0)], constant_values="z")
    assert got.tolist() == want.tolist()
    got = pad(x, pads=[1, 0, 0, 2], mode="reflect")
    assert got.tolist() == np.pad(x, [(1, 0), (0, 2)], mode="reflect").tolist()


def test_pad_axes_and_old_opsets(backend, rng):
    x = random_array(rng, (2, 3, 4), np.float32)
    axes = np.array([-1, 0], np.int64)
    p = np.array([1, 0, 2, 1], np.int64)
    want = reference("Pad", 18, [x, p, None, axes], {"mode": "edge"})[0]
    assert same(pad(x, pads=p, axes=axes, mode="edge", backend=backend), want)
    want = reference("Pad", 2, [x], {"pads": [0, 1, 0, 1, 0, 1], "value": 2.5})[0]
    assert same(pad(x, pads=[0, 1, 0, 1, 0, 1], value=2.5, opset=2, backend=backend), want)
    want = reference("Pad", 1, [x], {"paddings": [0, 1, 0, 1, 0, 1], "mode": "reflect"})[0]
    assert same(pad(x, paddings=[0, 1, 0, 1, 0, 1], mode="reflect", opset=1, backend=backend), want)


def test_pad_rank_8_and_zero_size(backend, rng):
    x = random_array(rng, (2, 1, 2, 1, 2, 1, 2, 3), np.int8)
    pads = [0, 1, 0, 2, 0, 0, 1, 0] + [1, 0, 0, 0, 1, 0, 0, 1]
    for mode in MODES:
        want = reference("Pad", 19, [x, np.array(pads, np.int64)], {"mode": mode})[0]
        assert same(pad(x, pads=pads, mode=mode, backend=backend), want), mode
    z = np.zeros((0, 3), np.float32)
    assert same(pad(z, pads=[1, 1, 2, 0], backend=backend), np.pad(z, [(1, 2), (1, 0)]))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_segments_index_what_numpy_pads(mode):
    """The plan alone (no GPU): the segments of an axis, expanded, are numpy's
    pad of the index range, for lengths 1..6 and pads up to 7 times the length."""
    from onnxop_cli.ops.pad import segments

    rng = np.random.default_rng(3)
    for n in range(1, 7):
        for _ in range(30):
            b, e = (int(v) for v in rng.integers(0, 7 * n + 2, 2))
            got = np.full(n + b + e, -1)
            for start, src, axes in segments(mode, n, b, e):
                index = np.full([c for c, _, _ in axes], start)
                source = np.full(index.shape, src)
                for k, (count, dstep, sstep) in enumerate(axes):
                    shape = [1] * len(axes)
                    shape[k] = count
                    index = index + (np.arange(count) * dstep).reshape(shape)
                    source = source + (np.arange(count) * sstep).reshape(shape)
                assert (got[index.reshape(-1)] == -1).all(), "segments overlap"
                got[index.reshape(-1)] = source.reshape(-1)
            assert got.tolist() == np.pad(np.arange(n), (b, e), mode=mode).tolist(), (n, b, e)
    assert len(segments("reflect", 3, 1000, 1000)) < 12  # periodic runs fold into repeat axes


def test_pad_rules():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(OpError, match=r"pads \[1, 2\] has 2 values; it needs 2 x 2"):
        pad(x, pads=[1, 2])
    with pytest.raises(OpError, match="crop axis 0 of length 2 below zero"):
        pad(x, pads=[-2, 0, -1, 0])
    with pytest.raises(OpError, match="mode reflect cannot pad axis 0: it has no elements"):
        pad(np.zeros((0, 3), np.float32), pads=[1, 0, 0, 0], mode="reflect")
    with pytest.raises(OpError, match="wrap needs opset 19"):
        pad(x, pads=[1, 0, 0, 0], mode="wrap", opset=18)
    with pytest.raises(OpError, match="constant_value must be one element"):
        pad(x, pads=[1, 0, 0, 0], constant_value=np.zeros(2, np.float32))
    with pytest.raises(OpError, match="int4 was added in Pad-21"):
        pad(np.zeros(3, ml_dtypes.int4), pads=[1, 0], opset=19)
    with pytest.raises(OpError, match="must have the same type"):
        pad(x, pads=[1, 0, 0, 0], constant_value=np.float64(1))


# ------------------------------------------------------------ the kernel's limits


def test_pieces_grid_folding_and_poison(gpu, rng):
    """More workgroups than one grid dimension takes, and a poisoned dst: every element written."""
    from onnxop_cli.gpu.pieces import Source, run_pieces
    from onnxop_cli.ops.tensor_op import Piece
    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.core.region import c_strides, load

    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        x = random_array(rng, (700, 5), dtype)
        out = bytearray()
        shape = (700, 10)
        pieces = [Piece((700, 5), c_strides(shape), 0, load(0, (700, 5), (5, 1))),
                  Piece((700, 5), c_strides(shape), 5, load(0, (700, 5), (5, -1), 4))]
        run_pieces(gpu, [Source(MemoryBytes(x))], out.extend, pieces=pieces, count=7000,
                   bits=x.dtype.itemsize * 8, max_groups_per_dim=2, poison=0xA5)
        want = np.concatenate([x, x[:, ::-1]], axis=1)
        assert bytes(out) == want.tobytes()


def test_pieces_past_one_binding_and_65535_workgroups(backend, gpu):
    """An output larger than one storage binding (several bands), each band's
    piece more than 65,535 workgroups of one dimension: no forced limits."""
    limit = int(gpu.limits.get("max-storage-buffer-binding-size", 128 << 20))
    n = limit // 4 + (1 << 20)
    x = np.random.default_rng(7).integers(0, 2**32, n, dtype=np.uint32)
    got = pad(x, pads=[3, 5], mode="edge", backend=backend)
    assert got.nbytes > limit
    assert got[:4].tolist() == [x[0]] * 4 and got[-6:].tolist() == [x[-1]] * 6
    assert got[3:-5].tobytes() == x.tobytes()

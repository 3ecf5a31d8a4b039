"""Trilu, CenterCropPad, Compress, OneHot, BitCast, EyeLike, ConstantOfShape,
Shape and Size against onnx.reference (and onnxruntime where it has the
kernel), byte for byte on random bits, and their refusals."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, numpy_helper

from onnxop_cli import (OpError, bit_cast, center_crop_pad, compress, constant_of_shape, eye_like, one_hot,
                        shape, size, trilu)

from conftest import random_array
from tensor_refs import ort, quiet, reference, same

TYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int64, np.bool_, np.complex64, ml_dtypes.bfloat16]


@pytest.mark.parametrize("dtype", TYPES)
def test_trilu(backend, rng, dtype):
    x = random_array(rng, (2, 3, 4, 5), np.dtype(dtype))
    for upper in (0, 1):
        for k in (0, 2, -1, -7, 9, 2**40):
            want = reference("Trilu", 14, [x, np.array(k, np.int64)], {"upper": upper})[0]
            got = trilu(x, k=np.array(k, np.int64), upper=upper, backend=backend)
            assert same(got, want), (upper, k)
            theirs = ort("Trilu", 14, [x, np.array(k, np.int64)], {"upper": upper}) if abs(k) < 100 else None
            if theirs is not None:
                assert same(quiet(got), quiet(theirs[0]))


def test_trilu_small_bands_and_layouts(backend, rng, monkeypatch):
    import onnxop_cli.gpu.pieces as pieces

    monkeypatch.setattr(pieces, "DEFAULT_BAND", 48)  # triangles cut across bands and windows
    x = np.asfortranarray(random_array(rng, (3, 7, 9), np.float32)).astype(">f4")
    for upper, k in ((1, 1), (0, -2), (1, -3)):
        got = trilu(x, k=np.array(k, np.int64), upper=upper, backend=backend)
        want = np.triu(x.astype("<f4"), k) if upper else np.tril(x.astype("<f4"), k)
        assert same(got, want), (upper, k)


def test_trilu_strings_and_rules():
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    assert trilu(x).tolist() == [["a", "b"], ["", "d"]]
    with pytest.raises(OpError, match="rank 2 or more"):
        trilu(np.zeros(3, np.float32))
    with pytest.raises(OpError, match="k must be one integer"):
        trilu(np.zeros((2, 2), np.float32), k=np.array([1, 2], np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.complex128, np.bool_])
def test_center_crop_pad(backend, rng, dtype):
    x = random_array(rng, (5, 4, 3), dtype)
    for target, axes in (([3, 7, 3], None), ([2, 6], [0, -1]), ([8], [1]), ([0, 1], [1, 2])):
        attrs = {} if axes is None else {"axes": axes}
        want = reference("CenterCropPad", 18, [x, np.array(target, np.int64)], attrs)[0]
        got = center_crop_pad(x, shape=np.array(target, np.int64), axes=axes, backend=backend)
        assert same(got, want), (target, axes)
    with pytest.raises(OpError, match=r"shape \[1\] has 1 values for 3 axes"):
        center_crop_pad(x, shape=[1])


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64, np.float64])
def test_compress(backend, rng, dtype):
    x = np.asfortranarray(random_array(rng, (4, 5, 3), dtype))
    for axis in (None, 0, 1, -1):
        length = x.size if axis is None else x.shape[axis]
        for n in (length, length - 2, 0):
            cond = rng.integers(0, 2, n).astype(bool)
            attrs = {} if axis is None else {"axis": axis}
            want = reference("Compress", 11, [x, cond], attrs)[0]
            assert same(compress(x, condition=cond, axis=axis, backend=backend), want), (axis, n)
            theirs = ort("Compress", 11, [x, cond], attrs)
            if theirs is not None:
                assert same(compress(x, condition=cond, axis=axis, backend=backend), theirs[0])
    with pytest.raises(OpError, match="condition has 6 values, more than the 5 slices along axis 1 it selects "
                       "from, and value 5 is true"):
        compress(x, condition=np.ones(6, bool), axis=1)
    # false values past the end select nothing, as in onnx.reference and onnxruntime
    for axis, extra in ((1, 3), (None, 2)):
        length = x.size if axis is None else x.shape[axis]
        cond = np.concatenate([rng.integers(0, 2, length).astype(bool), np.zeros(extra, bool)])
        attrs = {} if axis is None else {"axis": axis}
        want = reference("Compress", 11, [x, cond], attrs)[0]
        assert same(compress(x, condition=cond, axis=axis, backend=backend), want), (axis, extra)
        theirs = ort("Compress", 11, [x, cond], attrs)
        if theirs is not None:
            assert same(want, theirs[0])
    assert same(compress(x, condition=np.ones(2, bool), axis=-1, opset=9), x[..., :2])  # as onnxruntime


@pytest.mark.parametrize("vtype", [np.float32, np.int64, np.float16, np.complex64])
def test_one_hot(backend, rng, vtype):
    indices = rng.integers(-6, 8, (3, 4)).astype(np.int64)
    # onnx.reference computes off + hot * (on - off): exact only for finite values, and it turns an
    # off of -0.0 into 0.0. onnxop writes the values' own bits (checked with a NaN-payload on below).
    values = (rng.standard_normal(2) * 100).astype(vtype) + 1
    for axis in (-1, 0, 1, -3):
        want = reference("OneHot", 11, [indices, np.array(5, np.int64), values], {"axis": axis})[0]
        got = one_hot(indices, depth=np.array(5, np.int64), values=values, axis=axis, backend=backend)
        if np.dtype(vtype).kind not in "fc":  # (in floats, off + (on - off) can round away from on)
            assert same(got, want), axis
        hot = (np.where(indices < 0, indices + 5, indices)[..., None] == np.arange(5))
        assert same(got, np.moveaxis(np.where(hot, values[1], values[0]), -1, axis)), axis
        theirs = ort("OneHot", 11, [indices, np.array(5, np.int64), values], {"axis": axis})
        if theirs is not None:
            assert same(got, theirs[0]), axis
    bits = random_array(rng, (2,), vtype)
    got = one_hot(indices, depth=np.array(5, np.int64), values=bits, backend=backend)
    assert same(got, np.where(hot, bits[1], bits[0]))
    with pytest.raises(OpError, match="values must be"):
        one_hot(indices, depth=np.array(5), values=np.zeros(3, np.float32))


def test_one_hot_depth_that_is_no_number_is_refused():
    """A float depth is truncated (2.9 is 2), but NaN and the infinities have no integer: int() of them
    was a ValueError (NaN) or OverflowError (inf) out of the plan, not a refusal."""
    for depth in (np.float32(np.nan), np.float16(-np.inf), np.float64(np.inf)):
        with pytest.raises(OpError, match=rf"^OneHot: depth -?(nan|inf) must be a finite number of at least 1$"):
            one_hot(np.array([1]), depth=np.array(depth), values=np.array([0, 1]))


def test_bit_cast(backend, rng):
    x = random_array(rng, (3, 4), np.float32)
    for to, np_to in ((TensorProto.INT32, np.int32), (TensorProto.UINT32, np.uint32)):
        want = reference("BitCast", 26, [x], {"to": to}, out_types=[to])[0]
        assert same(bit_cast(x, to=to, backend=backend), want)
        assert same(bit_cast(np.asfortranarray(x).astype(">f4"), to=to, backend=backend), x.view(np_to))
    h = random_array(rng, (5,), np.float16)
    assert same(bit_cast(h, to=TensorProto.BFLOAT16, backend=backend), h.view(ml_dtypes.bfloat16))
    with pytest.raises(OpError, match="differ in width"):
        bit_cast(x, to=TensorProto.INT64)
    with pytest.raises(OpError, match="cannot cast to string"):
        bit_cast(x, to=TensorProto.STRING)


def test_eye_like_and_constant_of_shape(backend, rng):
    x = random_array(rng, (3, 5), np.int8)
    for k in (0, 2, -1, 9):
        for dtype in (None, TensorProto.FLOAT, TensorProto.BOOL):
            attrs = {"k": k} | ({"dtype": dtype} if dtype else {})
            types = [dtype] if dtype else None
            want = reference("EyeLike", 22, [x], attrs, out_types=types)[0]
            assert same(eye_like(x, backend=backend, **attrs), want), attrs
    for value in (np.array([np.uint32(0x7FC00123).view(np.float32)]), np.array([-3], np.int16),
                  np.array([3], ml_dtypes.int4), np.array([1], ml_dtypes.float8_e5m2), np.array([True])):
        tensor = numpy_helper.from_array(value)
        want = reference("ConstantOfShape", 25, [np.array([2, 3], np.int64)], {"value": tensor},
                         out_types=[tensor.data_type])[0]
        assert same(constant_of_shape(np.array([2, 3], np.int64), value=value, backend=backend), want), value.dtype
    assert same(constant_of_shape(np.array([0, 4], np.int64)), np.zeros((0, 4), np.float32))
    with pytest.raises(OpError, match="negative dimension"):
        constant_of_shape(np.array([2, -1], np.int64))
    with pytest.raises(OpError, match=r"^EyeLike: dtype string is not one EyeLike makes \(it makes bfloat16, "):
        eye_like(x, dtype=TensorProto.STRING)  # (it said 'dtype object', numpy's name for the strings' array)


def test_shape_and_size_are_metadata():
    from onnxop_cli.core.apply_tensors import apply_node
    from onnxop_cli.ops import op_version
    from onnxop_cli.ops.base import Node
    from onnxop_cli.core.tensor import Tensor

    x = np.zeros((2, 0, 3, 4), np.float16)
    for start, end in ((None, None), (1, None), (-2, None), (0, -1), (-9, 9), (3, 1)):
        attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
        assert same(shape(x, **attrs), reference("Shape", 15, [x], attrs, out_types=[TensorProto.INT64])[0])
    assert same(size(x), np.array(0, np.int64))
    assert same(size(np.zeros((3, 5), ml_dtypes.int4)), np.array(15, np.int64))
    result = apply_node(Node(op_version("Shape", 25), {}), [Tensor.from_numpy(x)])
    assert result.adapter == "host" and result.plans[0].kernel == "none"
    with pytest.raises(OpError, match="int4 was added in Size-21"):
        size(np.zeros(2, ml_dtypes.int4), opset=19)

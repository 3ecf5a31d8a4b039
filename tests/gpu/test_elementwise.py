"""The integer elementwise operators (ops/arithmetic.py, ops/logic.py,
ops/cast.py, ops/range_op.py) on the generated kernel, against onnx.reference
on random data over op x type x broadcast shape, with every type's extremes
(INT64_MIN, INT64_MAX, the 2**32 boundaries) planted among the values;
int64 arithmetic also against Python's exact integers. Division by zero and
float inputs are refused; bands, big-endian inputs and device-resident
intermediates take the same kernel."""

from __future__ import annotations

import numpy as np
import pytest

import onnxop_cli
from tensor_refs import reference
from onnxop_cli.errors import OpError, OutOfScope
from onnxop_cli.ops import OPERATORS

SIGNED = [np.int8, np.int16, np.int32, np.int64]
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
INTS = SIGNED + UNSIGNED
# (A, B) shapes: equal, trailing and leading broadcast, a scalar, both broadcast, empty, odd lengths
SHAPES = [((3, 5), (3, 5)), ((2, 3, 4), (4,)), ((), (7,)), ((2, 1, 3), (4, 1)), ((0, 3), (3,)), ((37,), (1,))]
BINARY = ["Add", "Sub", "Mul", "Div", "Mod", "Min", "Max"]
COMPARE = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


def _extremes(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    edges = [info.min, info.min + 1, -1, 0, 1, 2, info.max - 1, info.max,
             2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, -(2**31), -(2**32), -(2**32) - 1, 2**63 - 1]
    return np.array([v for v in edges if info.min <= v <= info.max], dtype=dtype)


def _values(rng, dtype, shape) -> np.ndarray:
    """Random values over the whole range, the type's extremes planted among them."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    edges = _extremes(dtype)
    k = min(flat.size, edges.size)
    flat[rng.choice(flat.size, k, replace=False)] = rng.choice(edges, k, replace=False) if k else []
    return x


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want), (got, want)


def _run(op: str, *inputs, backend, **params):
    spec = next(s for s in onnxop_cli.ops.SPECS.values() if s.op_type == op)
    return getattr(onnxop_cli, spec.api_name)(*inputs, backend=backend, **params)


@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_binary_ops_match_onnx_reference(backend, op):
    rng = np.random.default_rng(sum(map(ord, op)))
    allowed = OPERATORS[op][-1].allowed_types()
    for dtype in INTS:
        if np.dtype(dtype).name not in allowed:
            continue
        for sa, sb in SHAPES:
            a, b = _values(rng, dtype, sa), _values(rng, dtype, sb)
            if op in ("Div", "Mod"):
                b[b == 0] = 1
            attrs = [{"fmod": 0}, {"fmod": 1}] if op == "Mod" else [{}]
            for attr in attrs:
                inputs = [a, b]
                with np.errstate(all="ignore"):
                    out_types = [9] if op in COMPARE else None  # bool
                    want = reference(op, 13 if op in ("Mod", "Min", "Max") else 14 if op not in COMPARE else 16,
                                     inputs, attr, out_types=out_types)[0]
                params = {"b": b} if op not in ("Min", "Max") else {}
                got = _run(op, *(inputs if op in ("Min", "Max") else [a]), backend=backend, **params, **attr)
                _same(got, want)


def test_int64_arithmetic_against_exact_integers(backend):
    """Every pair of int64 and uint64 extremes, against Python's exact
    integers wrapped to 64 bits (Div truncated toward zero)."""
    for dtype in (np.int64, np.uint64):
        edges = _extremes(dtype)
        a, b = np.meshgrid(edges, edges, indexing="ij")
        bits, signed = 64, dtype is np.int64

        def wrap(v: int) -> int:
            v &= (1 << bits) - 1
            return v - (1 << bits) if signed and v >> 63 else v

        def trunc_div(x: int, y: int) -> int:
            q = abs(x) // abs(y)
            return q if (x < 0) == (y < 0) else -q

        rules = {"Add": lambda x, y: x + y, "Sub": lambda x, y: x - y, "Mul": lambda x, y: x * y,
                 "Div": trunc_div}
        for op, rule in rules.items():
            bb = np.where(b == 0, 1, b).astype(dtype) if op == "Div" else b
            want = np.array([wrap(rule(int(x), int(y))) for x, y in zip(a.reshape(-1), bb.reshape(-1))],
                            dtype=dtype).reshape(a.shape)
            _same(_run(op, a, backend=backend, b=bb), want)


@pytest.mark.parametrize("op", ["Neg", "Abs", "Not"])
def test_unary_ops_match_onnx_reference(backend, op):
    rng = np.random.default_rng(7)
    allowed = OPERATORS[op][-1].allowed_types()
    for dtype in INTS + [np.bool_]:
        if np.dtype(dtype).name not in allowed:
            continue
        for shape in [(3, 5), (), (0,), (33,)]:
            x = rng.integers(0, 2, size=shape).astype(bool) if dtype is np.bool_ else _values(rng, dtype, shape)
            with np.errstate(all="ignore"):
                want = reference(op, 13 if op != "Not" else 1, [x])[0]
            _same(_run(op, x, backend=backend), want)


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Equal"])
def test_logic_of_bool_tensors(backend, op):
    rng = np.random.default_rng(3)
    for sa, sb in SHAPES:
        a, b = rng.integers(0, 2, size=sa).astype(bool), rng.integers(0, 2, size=sb).astype(bool)
        want = reference(op, 7 if op != "Equal" else 19, [a, b], out_types=[9])[0]
        _same(_run(op, a, backend=backend, b=b), want)


def test_a_bool_byte_other_than_0_and_1_is_true(backend):
    """A numpy bool array can hold any byte (a view of uint8s: 2, 128, 255), which numpy and onnx.reference read
    as True: Cast of it to an integer made 2 and 255 where the reference makes 1, and Equal to True said false.
    The kernel reads a bool's byte as 0 or 1; a copy keeps the bytes (Transpose, BitCast)."""
    c = np.array([2, 0, 1, 255, 128, 0, 3], np.uint8).view(np.bool_)
    ones = np.ones(7, bool)
    for to in (np.int32, np.int64, np.uint8, np.bool_):
        from onnxop_cli.core.tensor import dtype_of_numpy

        t = dtype_of_numpy(np.dtype(to)).onnx_type
        _same(_run("Cast", c, backend=backend, to=t), reference("Cast", 21, [c], {"to": t}, out_types=[t])[0])
    for op in ("Equal", "Xor", "And"):
        _same(_run(op, c, backend=backend, b=ones), reference(op, 19 if op == "Equal" else 7, [c, ones], out_types=[9])[0])
    assert onnxop_cli.transpose(c, backend=backend).view(np.uint8).tolist() == [2, 0, 1, 255, 128, 0, 3]


def test_min_max_of_one_to_three_inputs(backend):
    rng = np.random.default_rng(5)
    for dtype in (np.int8, np.uint32, np.int64, np.uint64):
        xs = [_values(rng, dtype, s) for s in ((2, 3, 4), (4,), (3, 1))]
        for op in ("Min", "Max"):
            for n in (1, 2, 3):
                _same(_run(op, *xs[:n], backend=backend), reference(op, 13, xs[:n])[0])
    with pytest.raises(OpError, match="one to three inputs"):
        _run("Min", *xs, xs[0], backend=backend)


def test_cast_between_every_integer_and_bool_type(backend):
    rng = np.random.default_rng(11)
    from onnxop_cli.core.tensor import dtype_of_numpy

    for src in INTS + [np.bool_]:
        x = rng.integers(0, 2, size=(5, 7)).astype(bool) if src is np.bool_ else _values(rng, src, (5, 7))
        for dst in INTS + [np.bool_]:
            to = dtype_of_numpy(np.dtype(dst)).onnx_type
            want = reference("Cast", 21, [x], {"to": to}, out_types=[to])[0]
            _same(_run("Cast", x, backend=backend, to=to), want)
            like = np.zeros((1,), dtype=dst)
            _same(_run("CastLike", x, backend=backend, target_type=like), want)


def test_cast_of_integers_to_floats_rounds_to_nearest_even(backend):
    """Every integer type and bool to float16, float32 and float64, bit for
    bit: the halfway cases above each type's exact range (2**11 + 1,
    2**24 + 1, 2**53 + 1 and their odd neighbours), float16's overflow to
    infinity from 65520, and each type's extremes."""
    rng = np.random.default_rng(13)
    ties = [2**k + d for k in (11, 24, 53) for d in (1, 3, 5)] + [65504, 65519, 65520, 2**62 + 2**38]
    for src in INTS + [np.bool_]:
        if src is np.bool_:
            x = np.array([True, False, True])
        else:
            info = np.iinfo(src)
            planted = np.array([v * s for v in ties for s in (1, -1) if info.min <= v * s <= info.max], dtype=src)
            x = np.concatenate([_values(rng, src, (40,)), planted])
        for to in (10, 1, 11):  # float16, float32, float64
            with np.errstate(all="ignore"):
                want = reference("Cast", 21, [x], {"to": to}, out_types=[to])[0]
            got = _run("Cast", x, backend=backend, to=to)
            assert got.dtype == want.dtype and got.shape == want.shape
            width = f"u{want.itemsize}"
            assert np.array_equal(got.view(width), want.view(width)), (src, to, x[got.view(width) != want.view(width)])


def test_cast_of_floats_to_integers_truncates_values_in_range(backend):
    """float16, float32 and float64 to every integer type, against
    onnx.reference where the type holds the value: truncated toward zero,
    -0.5 and -0.0 to 0, the extremes a float can hold exactly (INT64_MIN,
    the largest float below 2**64). NaN, infinities and values outside the
    type (numpy's result there is the platform's) are refused naming the element."""
    from onnxop_cli.core.tensor import dtype_of_numpy

    rng = np.random.default_rng(17)
    for src in (np.float16, np.float32, np.float64):
        top = float(np.finfo(src).max)
        for dst in INTS:
            info = np.iinfo(dst)
            lo, hi = max(float(info.min), -top), min(float(info.max), top)
            x = np.concatenate([rng.uniform(lo, hi, 40), rng.uniform(-300, 300, 20), [0.5, -0.0, 1.99, 0.0]])
            x = x.astype(src)
            edges = [info.min, np.nextafter(np.float64(min(info.max + 1.0, top)), 0).astype(src)]
            x = np.concatenate([x, np.array([e for e in edges if lo <= float(e) <= hi], src)])
            if info.min < 0:
                x = np.concatenate([x, np.array([-0.5, -1.99], src)])
            x = x[(x.astype(np.float64) > info.min - 1) & (x.astype(np.float64) < info.max + 1)]
            to = dtype_of_numpy(np.dtype(dst)).onnx_type
            with np.errstate(all="ignore"):
                want = reference("Cast", 21, [x], {"to": to}, out_types=[to])[0]
            _same(_run("Cast", x, backend=backend, to=to), want)
    for bad, dst in ((np.nan, 7), (np.inf, 6), (-np.inf, 3), (300.0, 2), (-1.0, 12), (2.0**63, 7), (2.0**64, 13)):
        x = np.array([[1.0, 2.0], [3.0, bad]], np.float64)
        with pytest.raises(OpError, match=r"Cast: the input is NaN, infinite or outside \w+ at output element \(1, 1\)"):
            _run("Cast", x, backend=backend, to=dst)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_range_matches_onnx_reference(backend, dtype):
    info = np.iinfo(dtype)
    for start, limit, delta in [(0, 10, 3), (10, -7, -4), (5, 5, 1), (3, 1, 1), (-2, 40, 1),
                                (info.max - 10, info.max, 3), (info.min + 9, info.min, -2)]:
        s, l, d = (np.array(v, dtype=dtype) for v in (start, limit, delta))
        _same(_run("Range", s, backend=backend, limit=l, delta=d), reference("Range", 11, [s, l, d])[0])
    with pytest.raises(OpError, match="delta is 0"):
        _run("Range", np.array(1, dtype), backend=backend, limit=np.array(4, dtype), delta=np.array(0, dtype))


def test_division_by_zero_names_the_element(backend):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = np.array([3, 1, 0, 2], dtype=np.int32)
    for op, attr in (("Div", {}), ("Mod", {"fmod": 0}), ("Mod", {"fmod": 1})):
        with pytest.raises(OpError, match=r"division by zero: B is 0 at output element \(0, 2\)"):
            _run(op, a, backend=backend, b=b, **attr)
    with pytest.raises(OpError, match=r"element \(1, 0\)"):
        _run("Div", np.ones((2, 3), np.int64), backend=backend, b=np.array([[5, 5, 5], [0, 0, 0]], np.int64))


def test_float_inputs_are_out_of_scope(backend):
    x = np.ones(3, np.float32)
    for op in ("Add", "Div", "Less"):
        with pytest.raises(OutOfScope, match="float32: onnxop runs .* integer and bool tensors only"):
            _run(op, x, backend=backend, b=x)


def test_opsets_before_broadcasting(backend):
    a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.array([1, 2, 3], np.int32)
    _same(_run("Add", a, b=a, opset=6, backend=backend), a + a)
    with pytest.raises(OpError, match="must have one shape"):
        _run("Add", a, b=b, opset=6, backend=backend)
    with pytest.raises(OpError, match="broadcast=1"):
        _run("Add", a, b=b, opset=6, broadcast=1, backend=backend)
    with pytest.raises(OpError, match=r"does not allow int64; int64 was added in Max-12"):
        _run("Max", a.astype(np.int64), b.astype(np.int64), opset=7, backend=backend)


def test_big_endian_and_fortran_inputs(backend):
    rng = np.random.default_rng(2)
    for dtype in (">i2", ">i4", ">i8", ">u8"):
        a = _values(rng, np.dtype(dtype).newbyteorder("="), (4, 6)).astype(dtype)
        b = np.asfortranarray(_values(rng, np.dtype(dtype).newbyteorder("="), (4, 6)))
        want = (a.astype(b.dtype) + b)
        got = _run("Add", a.astype(b.dtype).astype(dtype), backend=backend, b=b.astype(dtype))
        assert np.array_equal(got, want)


def test_bands_poisoned_output(backend):
    """Outputs of several bands (a binding of 1 KiB), the output buffer
    poisoned first: every element written, every band's window right."""
    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.gpu import get_gpu
    from onnxop_cli.gpu.elementwise import LAST, run_elementwise
    from onnxop_cli.gpu.render.elementwise import Elementwise, Operand
    from onnxop_cli.gpu.pieces import Source

    gpu = get_gpu(backend)
    rng = np.random.default_rng(9)
    for dtype, out in ((np.int8, "int8"), (np.int64, "int64"), (np.int16, "bool")):
        a, b = _values(rng, dtype, (40, 61)), _values(rng, dtype, (1, 61))
        op = "Less" if out == "bool" else "Sub"
        kernel = Elementwise(op, (Operand(np.dtype(dtype).name), Operand(np.dtype(dtype).name)), out)
        chunks: list[bytes] = []
        with gpu.lock:
            run_elementwise(gpu, kernel, [Source(MemoryBytes(a)), Source(MemoryBytes(b))],
                            lambda m: chunks.append(bytes(m)), shape=(40, 61), strides=((61, 1), (0, 1)),
                            binding_bytes=1024, poison=0xA5)
        assert gpu.cache[LAST]["bands"] > 2
        with np.errstate(all="ignore"):
            want = (a < b) if out == "bool" else (a - b)
        _same(np.frombuffer(b"".join(chunks), dtype=want.dtype).reshape(want.shape), want)

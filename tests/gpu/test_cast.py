"""Cast and CastLike (ops/cast.py) between every two numeric and bool types
on the elementwise kernel's ``Convert`` (gpu/render/convert.py's FORMATS,
shaders/lib/float_convert.wgsl), bit for bit against onnx.reference: random
bit patterns with every special value planted (NaN with payloads, quiet and
signalling, of both signs; infinities; -0.0; the smallest and largest
subnormals and normals; each target's halfway rounding cases and their
neighbours), over sizes that end inside a word of the packed, 8-bit and
16-bit types and the empty tensor; saturate on and off for the float8
targets, the three round modes of float8e8m0. A float the integer type of 8
bits or more cannot hold is refused naming the element (numpy's result is
the platform's); int4, uint4, int2 and uint2 take 0 there, as ml_dtypes
does."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import onnxop_cli
from onnxop_cli.core.tensor import dtype_of_numpy
from onnxop_cli.errors import OpError, OutOfScope, UsageError
from tensor_refs import reference

INTS = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "int4", "uint4", "int2", "uint2"]
FLOATS = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
          "float8_e5m2fnuz", "float4_e2m1fn", "float8_e8m0fnu"]
TYPES = INTS + FLOATS
FLOAT8 = FLOATS[4:8]
SIZES = (0, 1, 3, 17)  # the empty tensor; ends inside a 32-bit word for 2-, 4-, 8- and 16-bit elements


def _dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) and not hasattr(np, name) else np.dtype(name)


def _bits(name: str) -> int:
    return {"bool": 8, "int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4_e2m1fn": 4}.get(
        name, _dtype(name).itemsize * 8)


def _word(x: np.ndarray) -> np.ndarray:
    """The values' bit patterns, for a byte-exact comparison."""
    return np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")


def _specials(name: str) -> np.ndarray:
    """Every bit pattern of the types of 8 bits or fewer; else the special
    values and the halfway cases of every narrower float, as patterns."""
    bits = _bits(name)
    if bits <= 8:
        return np.arange(1 << bits, dtype=np.uint64)
    info = ml_dtypes.finfo(_dtype(name))
    mant, top = info.nmant, bits - 1
    sign, expo = 1 << top, ((1 << (bits - 1 - mant)) - 1) << mant
    quiet = 1 << (mant - 1)
    pats = [0, 1, (1 << mant) - 1, 1 << mant, expo, expo | 1, expo | quiet, expo | quiet | 1, expo | (quiet >> 1),
            expo | ((1 << mant) - 1), expo - 1, expo - (1 << mant)]
    wide = _dtype(name)
    for narrow in FLOATS:
        if _bits(narrow) >= bits or narrow == "float8_e8m0fnu":
            continue
        n = ml_dtypes.finfo(_dtype(narrow))
        grid = [float(n.max), float(n.tiny), float(n.smallest_subnormal), 1.0, 1.5, 3.0]
        for v in grid:
            ulp = v * 2.0 ** -n.nmant if v >= float(n.tiny) else float(n.smallest_subnormal)
            for x in (v + ulp / 2, v + 3 * ulp / 2, v / 2, v + ulp):
                with np.errstate(all="ignore"):
                    w = np.array([x], np.float64).astype(wide)
                p = int(_word(w)[0])
                pats += [p, p + 1, p - 1]
    pats = [p & ((1 << bits) - 1) for p in pats]
    return np.array(pats + [p | sign for p in pats], dtype=np.uint64)


def _values(rng, name: str, n: int) -> np.ndarray:
    """``n`` values of type ``name``: random bit patterns (bool: 0 or 1), the specials planted."""
    dt, bits = _dtype(name), _bits(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    raw = rng.integers(0, 1 << min(bits, 63), n, dtype=np.uint64) | (
        rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63) if bits == 64 else np.uint64(0))
    special = _specials(name) if name in FLOATS else np.array([], np.uint64)
    k = min(n, special.size)
    raw[rng.choice(n, k, replace=False)] = rng.choice(special, k, replace=False) if k else []
    if name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
        if name.startswith("int"):  # sign-extend the pattern, ml_dtypes stores one value per byte
            raw = ((raw.astype(np.int64) ^ (1 << (bits - 1))) - (1 << (bits - 1))).astype(np.uint64)
            return raw.astype(np.int64).astype(dt)
        if name.startswith("uint"):
            return raw.astype(dt)
        return raw.astype(np.uint8).view(dt)
    return raw.astype(f"u{dt.itemsize}").view(dt)


def _modes(target: str) -> list[dict]:
    if target in FLOAT8:
        return [{"saturate": 1}, {"saturate": 0}]
    if target == "float8_e8m0fnu":
        return [{"saturate": s, "round_mode": r} for s in (1, 0) for r in ("up", "nearest", "down")]
    return [{}]


def _reference(x: np.ndarray, to: int, attrs: dict) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return reference("Cast", 25, [x], {"to": to, **attrs}, out_types=[to])[0]


def _holds(x: np.ndarray, target: str) -> np.ndarray:
    """Where a float's value, truncated, is one the integer type of 8 bits or more holds."""
    info = np.iinfo(_dtype(target))
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
    # float64 cannot say 2**63 - 1 or 2**64 - 1: a value that rounds up to 2**63 (2**64) is outside
    return np.isfinite(t) & (t >= float(info.min)) & (t < float(info.max) + 1)


@pytest.mark.parametrize("source", TYPES)
def test_cast_of_every_pair_is_onnx_reference_bit_for_bit(backend, rng, source):
    x_all = _values(rng, source, sum(SIZES) + 400)
    widths = set()  # the target widths whose short tails this source has met
    for target in TYPES:
        if target == source:
            continue
        # A tail that ends inside an output word is the packing's, which depends on the two element widths,
        # not on the conversion: the short sizes go to the first target of each width, the other targets
        # take the empty tensor and the long one (1,822 casts a backend, where short sizes on every pair
        # made 3,520, each a submit and a readback: most of the suite's longest file)
        sizes = (0,) if _bits(target) in widths else SIZES
        widths.add(_bits(target))
        to = dtype_of_numpy(_dtype(target)).onnx_type
        faults = source in FLOATS and target in INTS and target != "bool" and _bits(target) >= 8
        x_use = x_all
        if faults:  # the values the type holds, and more of them than random bit patterns give
            info = np.iinfo(_dtype(target))
            with np.errstate(all="ignore"):
                spread = np.concatenate([rng.uniform(float(info.min), float(info.max), 200),
                                         rng.uniform(-300.0, 300.0, 100)]).astype(x_all.dtype)
            x_use = np.concatenate([x_all[_holds(x_all, target)], spread[_holds(spread, target)]])
        for attrs in _modes(target):
            start = 0
            for n in sizes + (x_use.size - sum(sizes),):
                x = x_use[start:start + n]
                start += n
                want = _reference(x, to, attrs)
                got = onnxop_cli.cast(x, to=to, opset=25, backend=backend, **attrs)
                assert got.dtype == want.dtype and got.shape == want.shape, (source, target)
                bad = _word(got) != _word(want)
                assert not bad.any(), (source, target, attrs, [hex(int(v)) for v in _word(x)[bad][:4]],
                                       _word(got)[bad][:4], _word(want)[bad][:4])
        if faults and not _holds(x_all, target).all():
            first = int(np.argmin(_holds(x_all, target)))
            with pytest.raises(OpError, match=rf"Cast: the input is NaN, infinite or outside {target} at output "
                                              rf"element \({first}\)"):
                onnxop_cli.cast(x_all, to=to, opset=25, backend=backend)


def test_cast_like_takes_the_target_tensors_type_and_the_attributes(rng):
    """CastLike is Cast to the second input's type; its round_mode (opset 24+),
    which onnx.reference's CastLike does not take, against Cast's."""
    x = _values(rng, "float32", 300)
    for target in ("bfloat16", "float8_e4m3fn", "float8_e8m0fnu", "int4"):
        like = np.zeros(3, _dtype(target))
        to = dtype_of_numpy(like.dtype).onnx_type
        for attrs in _modes(target):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if "round_mode" in attrs:
                    want = _reference(x, to, attrs)
                else:
                    want = reference("CastLike", 25, [x, like], attrs, out_types=[to])[0]
            got = onnxop_cli.cast_like(x, target_type=like, opset=25, **attrs)
            assert got.dtype == want.dtype and np.array_equal(_word(got), _word(want)), (target, attrs)


def test_strings_cast_on_the_host_as_onnx_reference_casts_them(rng):
    """Strings to and from bool, the integers and numpy's floats: numpy's
    astype, as onnx.reference (str() of a float is its shortest repr;
    "1e40" to float32 is inf; "0" to bool is True). The other types are
    refused as out of scope, as onnx.reference cannot cast them either; a
    text that is no number of the type is an error naming the element."""
    numbers = np.array(["1.5", "-0.0", "NaN", "-INF", "0.1", "3.4028235e38", "1e40", "7", "65519"], dtype=object)
    texts = {"bool": np.array(["", "0", "x", "True"], dtype=object), "float16": numbers, "float32": numbers,
             "float64": numbers}
    for target in ["bool", *INTS[1:9], "float16", "float32", "float64"]:
        x = texts.get(target, np.array(["12", "-3", "0", "+7"], dtype=object))
        if target.startswith("uint"):
            x = x[[0, 2]]
        to = dtype_of_numpy(_dtype(target)).onnx_type
        got, want = onnxop_cli.cast(x, to=to), _reference(x, to, {})
        assert got.dtype == want.dtype and np.array_equal(_word(got), _word(want)), target
        y = _values(rng, target, 40)
        got, want = onnxop_cli.cast(y, to=8), _reference(y, 8, {})
        assert got.tolist() == want.tolist(), target
    for target in ("bfloat16", "float8_e4m3fn", "int4"):
        to = dtype_of_numpy(_dtype(target)).onnx_type
        with pytest.raises(OutOfScope, match=f"string to {target} is not in its scope"):
            onnxop_cli.cast(np.array(["1"], dtype=object), to=to)
        with pytest.raises(OutOfScope, match=f"{target} to string is not in its scope"):
            onnxop_cli.cast(np.zeros(2, _dtype(target)), to=8)
    with pytest.raises(OpError, match=r"Cast: input input element \(1, 0\) is '1\.5', which int8 cannot take"):
        onnxop_cli.cast(np.array([["1", "2"], ["1.5", "x"]], dtype=object), to=3)


def test_string_is_a_type_name(cwd, capsys):
    """'string', ONNX's name of the type, names the target as 8 does (it was refused as 'not a type name', so only
    the number could ask for a cast the operator runs); numpy's 'object' still names none."""
    from conftest import cli, error_of

    x = np.array([1.5, -0.0], np.float32)
    assert onnxop_cli.cast(x, to="string").tolist() == onnxop_cli.cast(x, to=8).tolist() == ["1.5", "-0.0"]
    assert onnxop_cli.cast(x, to="STRING").tolist() == ["1.5", "-0.0"]
    with pytest.raises(UsageError, match="to must be a type name, a numpy dtype or a TensorProto number, got 'object'"):
        onnxop_cli.cast(x, to="object")
    np.save("x.npy", x)
    code, out, err = cli(capsys, "cast", "x.npy", "--to", "string")
    assert code == 0 and "['1.5', '-0.0']" in out, out + err
    code, _, err = cli(capsys, "cast", "x.npy", "--to", "object")
    assert code == 2 and error_of(err).startswith("Cast: --to must be a type name or a TensorProto number, got 'object'")


def _packed(x: np.ndarray, bits: int) -> bytes:
    """ONNX's packing of 2- and 4-bit elements: the first in the low bits."""
    v = np.ascontiguousarray(x).view(np.uint8).astype(np.uint32) & ((1 << bits) - 1)
    v = np.concatenate([v, np.zeros(-v.size % (8 // bits), np.uint32)]).reshape(-1, 8 // bits)
    return (v << (np.arange(8 // bits, dtype=np.uint32) * bits)).sum(axis=1).astype(np.uint8).tobytes()


def test_cast_bands_and_big_endian_inputs(backend, rng):
    """Outputs of several bands (a binding of 1 KiB), poisoned first, from
    and to packed types (a band's window of int4 starts mid-byte nowhere);
    big-endian float16, float32 and float64 inputs are swapped on load."""
    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.gpu import get_gpu
    from onnxop_cli.gpu.elementwise import LAST, run_elementwise
    from onnxop_cli.gpu.render.elementwise import Elementwise, Operand
    from onnxop_cli.gpu.pieces import Source

    gpu = get_gpu(backend)
    for source, target in (("float32", "int4"), ("int4", "float32"), ("float64", "float8_e4m3fn"),
                           ("bfloat16", "uint2"), ("float16", "bfloat16")):
        x = _values(rng, source, 2001)
        to = dtype_of_numpy(_dtype(target)).onnx_type
        want = _reference(x, to, {"saturate": 1} if target in FLOAT8 else {})
        raw = _packed(x, _bits(source)) if _bits(source) < 8 else x.tobytes()
        kernel = Elementwise("Convert", (Operand(source),), target, saturate=True)
        chunks: list[bytes] = []
        with gpu.lock:
            run_elementwise(gpu, kernel, [Source(MemoryBytes(np.frombuffer(raw, np.uint8)))],
                            lambda m: chunks.append(bytes(m)), shape=(x.size,), strides=((1,),),
                            binding_bytes=1024, poison=0xA5)
        assert gpu.cache[LAST]["bands"] > 2
        expect = _packed(want, _bits(target)) if _bits(target) < 8 else want.tobytes()
        assert b"".join(chunks) == expect, (source, target)
    for source in ("float16", "float32", "float64"):
        x = _values(rng, source, 300)
        for target in ("bfloat16", "float8_e5m2", "float16", "float64", "int4"):
            if target == source:
                continue
            to = dtype_of_numpy(_dtype(target)).onnx_type
            got = onnxop_cli.cast(x.astype(x.dtype.newbyteorder(">")), to=to, backend=backend)
            assert np.array_equal(_word(got), _word(_reference(x, to, {}))), (source, target)

"""Upsample (opsets 7 and 9) byte for byte: whole scales against onnx.reference
(np.repeat: no arithmetic, so random bits, NaN payloads and -0.0 included),
the other scales against onnxruntime, which onnx.reference cannot run; the
refusals in one line. The kernels are Gather's (tests/gpu/test_gather.py): the
plan is what is tested here, on the first backend."""

from __future__ import annotations

import numpy as np
import pytest

import onnxop_cli as api
from commands import run_commands
from conftest import random_array
from onnxop_cli.errors import OpError, OutOfScope
from tensor_refs import ort, reference, same

ONE_BACKEND = True
DTYPES = ("<f4", "<f2", "<f8", "u1", "i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<c8", "<c16", "?")


def node(opset: int, scales: np.ndarray) -> tuple[list, dict]:
    """The reference's inputs and attributes: scales an attribute at 7, an input at 9."""
    return ([], {"scales": [float(s) for s in scales]}) if opset == 7 else ([scales], {})


@pytest.mark.parametrize("opset", [7, 9])
def test_whole_scales_repeat_the_references_elements_bit_for_bit(backend, rng, opset):
    for k, dtype in enumerate(DTYPES):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 5))))
        scales = rng.integers(1, 4, size=len(shape)).astype(np.float32)
        x = random_array(rng, shape, dtype)
        if k % 3 == 0:
            x = np.asfortranarray(x)
        want = reference("Upsample", 9, [x, scales], {"mode": "nearest"})[0]  # its Upsample takes no attribute
        got = api.upsample(x, scales=scales.tolist(), opset=opset, backend=backend)
        assert same(got, want), (dtype, shape, scales.tolist())


def test_strings_are_picked_as_the_numbers_are(backend):
    words = np.array([["a", "bb"], ["ccc", "d\n"]], dtype=object)
    got = api.upsample(words, scales=[2.0, 1.5], opset=9, backend=backend)
    assert got.tolist() == [["a", "a", "bb"], ["a", "a", "bb"], ["ccc", "ccc", "d\n"], ["ccc", "ccc", "d\n"]]


def test_other_scales_are_onnxruntimes(backend, rng):
    """Scales between whole numbers: output size floor(size * scale), element i the input's floor(i / scale)."""
    compared = 0
    for opset in (7, 9):
        for dtype in ("<f4", "<i4", "i1", "u1"):
            shape = tuple(int(d) for d in rng.integers(1, 7, size=3))
            scales = rng.choice([1.0, 1.25, 1.5, 1.7, 2.5, 3.3], size=3).astype(np.float32)
            x = random_array(rng, shape, dtype)
            extra, attrs = node(opset, scales)
            want = ort("Upsample", opset, [x, *extra], {"mode": "nearest", **attrs})
            if want is None:
                continue
            assert same(api.upsample(x, scales=scales.tolist(), opset=opset, backend=backend), want[0]), (
                opset, dtype, shape, scales.tolist())
            compared += 1
    assert compared >= 4  # onnxruntime has Upsample for float, int32, int8 and uint8


def test_upsample_1_scales_height_and_width_as_onnxruntimes_upsample_7(backend, rng):
    """Upsample-1 (opsets 1-6, which neither reference runs): Upsample-7 with scales (1, 1, h, w)."""
    for dtype in ("<f4", "<i4"):
        x = random_array(rng, (2, 3, 4, 5), dtype)
        want = ort("Upsample", 7, [x], {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 1.5]})[0]
        got = api.upsample(x, height_scale=2.0, width_scale=1.5, opset=6, backend=backend)
        assert same(got, want), dtype


@pytest.mark.parametrize("opset,params,error,message", [
    (6, {"height_scale": 2.0, "width_scale": 0.5}, OpError, "Upsample: scales [1.0, 1.0, 2.0, 0.5] must all be at "
                                                            "least 1"),
    (1, {"height_scale": 2.0, "width_scale": 2.0, "mode": "bilinear"}, OutOfScope, "Upsample: mode 'bilinear' is "
                                                                                   "arithmetic"),
    (9, {"scales": [1.0, 0.5]}, OpError, "Upsample: scales [1.0, 0.5] must all be at least 1"),
    (7, {"scales": [2.0]}, OpError, "Upsample: scales [2.0] has 1 values for 2 resized axes; it needs one per axis"),
    (9, {"scales": [1.0, float("nan")]}, OpError, "Upsample: scales [1.0, nan] must all be positive and finite"),
    (9, {"scales": [1.0, 2.0], "mode": "linear"}, OutOfScope, "Upsample: mode 'linear' is arithmetic"),
    (9, {"scales": [1.0, 2.0], "mode": "cubic"}, OpError, "Upsample: mode 'cubic' is not one of nearest, linear"),
    (10, {"scales": [1.0, 2.0]}, OpError, "Upsample: ONNX deprecated Upsample at opset 10"),
])
def test_bad_inputs_are_refused_with_their_values(opset, params, error, message):
    with pytest.raises(error) as e:
        api.upsample(np.zeros((1, 1, 2, 3) if opset < 7 else (2, 3), np.float32), **params, opset=opset)
    assert e.value.message.startswith(message)


def test_upsample_1_takes_only_4d_inputs():
    with pytest.raises(OpError) as e:
        api.upsample(np.zeros((2, 3), np.float32), height_scale=2.0, width_scale=2.0, opset=1)
    assert e.value.message == "Upsample: input X has shape (2, 3); Upsample-1 takes 4-D (N, C, H, W) inputs"


def test_the_cli_takes_fractional_scales_at_both_opsets_and_refuses_opset_10_in_one_line(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    np.save(tmp_path / "x.npy", x)
    seven, nine, latest = run_commands([
        (tmp_path, ["upsample", "x.npy", "--scales", "1,1,2,1.5", "--opset", "7", "-o", "y7.npy"]),
        (tmp_path, ["upsample", "x.npy", "--scales", "1,1,2,1.5", "--opset", "9", "-o", "y9.npy"]),
        (tmp_path, ["upsample", "x.npy", "--scales", "1,1,2,2", "-o", "y.npy"]),
    ])
    assert seven.returncode == 0 and nine.returncode == 0, (seven.stderr, nine.stderr)
    want = ort("Upsample", 9, [x, np.array([1, 1, 2, 1.5], np.float32)], {"mode": "nearest"})[0]
    assert same(np.load(tmp_path / "y7.npy"), want) and same(np.load(tmp_path / "y9.npy"), want)
    assert latest.returncode == 2 and latest.stderr == (
        "onnxop: error: x.npy: Upsample: ONNX deprecated Upsample at opset 10 (its checker and onnxruntime refuse "
        "it); use Resize, or opset 9 (--opset 9)\n")
    assert not (tmp_path / "y.npy").exists()

"""--full streams the text line by line (fulltext.py); every line must be
what numpy's array2string prints for the whole array (render.format_values
with full=True, itself array2string with threshold above the size)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.render import fulltext
from onnxop_cli.render.values import format_values

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

SHAPES = [(1,), (7,), (40,), (3, 30), (2, 3, 17), (2, 1, 3, 9), (1, 200), (5, 4, 3, 2), (300,)]
TYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "uint64", "bool",
         "complex64", "complex128"]


def same(values: np.ndarray) -> None:
    expected = format_values(values, full=True)
    got = "\n".join(fulltext.lines(values))
    assert got == expected


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", TYPES)
def test_random_bits_print_as_numpy_prints_them(rng, name, shape):
    same(random_array(rng, shape, name))


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", [
    [0.5, 1.5, -2.25], [1e-7, 1.0], [1e9, 1.0], [np.nan, 1.0], [np.inf, -np.inf, 2.5], [-0.0, 0.0, 1.0],
    [-0.0, 3.0], [np.nan], [np.inf, np.nan], [0.0, 0.0], [123456.78, 0.001, -5.0], [1e-30, 1e30],
])
def test_special_values(name, case):
    with np.errstate(over="ignore"):  # 1e9 and 1e30 are inf in float16: a case of their own
        values = np.array(case, dtype=name)
    for shape in [(values.size,), (values.size, 1), (1, values.size, 1)]:
        same(values.reshape(shape))
    same(np.tile(values, 40).reshape(4, -1))


def test_medium_arrays_across_slices(rng, monkeypatch):
    monkeypatch.setattr(fulltext, "SLICE", 37)  # many slices: witnesses and rows cross their edges
    same(rng.normal(size=(6, 500)).astype(np.float32))
    same(np.arange(3000, dtype=np.float64).reshape(10, 300) / 8)
    same(rng.integers(-(10**6), 10**6, size=(7, 11, 13)))
    values = np.arange(2000, dtype=np.float32) / 4
    values[1234] = -0.0
    values[1500] = np.nan
    same(values.reshape(20, 100))


@pytest.mark.parametrize("t", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.float4_e2m1fn])
def test_ml_dtypes(rng, t):
    same(rng.normal(size=(3, 40)).astype(np.float32).astype(t) if t is not ml_dtypes.int4
         else rng.integers(-8, 8, size=(3, 40)).astype(t))


def test_strings_scalars_and_empty_arrays_are_left_to_numpy():
    for values in [np.array(3.5, np.float32), np.zeros((0, 3), np.int8), np.array(["a", "bc"] * 60, dtype=object)]:
        same(values)


def test_lines_are_produced_before_the_end(rng):
    values = rng.normal(size=(1000, 20)).astype(np.float32)
    first = next(iter(fulltext.lines(values)))
    assert first == format_values(values, full=True).split("\n")[0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", ["float16", "float32"])
@pytest.mark.parametrize("scientific", [False, True])
def test_digit_bounds_never_hide_the_widest_value(monkeypatch, name, seed, scientific):
    """Without sampling, the widest value is found through ``_groups``' bounds.
    The extremes (picked anyway) have few digits; the widest values are k/8
    (exact decimals: bounded), beside k/100 (inexact: not bounded) that must
    not hide them; 1e-5 turns on scientific notation."""
    monkeypatch.setattr(fulltext, "SAMPLE", 0)
    monkeypatch.setattr(fulltext, "SLICE", 1000)
    rng = np.random.default_rng(seed)
    values = np.concatenate([[-7.0, 7.0, 0.5], rng.integers(51, 100, 20) / 100, rng.integers(5, 56, 3) / 8,
                             [1e-5] if scientific else []]).astype(name)
    rng.shuffle(values)
    same(values)


def test_print_mode_full_streams_numpys_text(backend, cwd, capsys, rng):
    from conftest import cli

    x = rng.normal(size=(3, 40, 5)).astype(np.float32)
    np.save(cwd / "x.npy", x)
    code, out, err = cli(capsys, "flatten", "x.npy", "--axis", "1", "--full", "-b", backend)
    assert code == 0, err
    shown_out = "\n".join("    " + line if line else "" for line in format_values(x.reshape(3, 200), full=True).split("\n"))
    shown_in = "\n".join("    " + line if line else "" for line in format_values(x, full=True).split("\n"))
    assert out == (
        "Node:\n  Flatten(x) -> (output)\n\nAttributes:\n  axis = 1\n\nInputs:\n  x: shape=(3, 40, 5), dtype=float32\n" + shown_in
        + "\n\nOutputs:\n  output: shape=(3, 200), dtype=float32\n" + shown_out + "\n"
    )

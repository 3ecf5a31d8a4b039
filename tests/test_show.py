"""onnxop show: the docs' layout, statistics against numpy, every read path."""

from __future__ import annotations

import json
import sys

import ml_dtypes
import numpy as np
import pytest

from conftest import cli, random_array
from onnxop_cli import show
from onnxop_cli.errors import ExitCode
from onnxop_cli.tensor import dtype_by_name, dtype_of_numpy
from test_pipes import FakeStdin, npy_bytes


def test_show_prints_the_docs_layout_with_statistics(cwd, capsys):
    np.save(cwd / "t.npy", np.array([[1.5, -2.0, 0.25], [4.0, 5.0, -0.0]], np.float32))
    code, out, err = cli(capsys, "show", "t.npy")
    assert code == 0 and err == ""
    assert out == (
        "t.npy:\n"
        "  t: shape=(2, 3), dtype=float32  (min=-2.0, max=5.0, mean=1.45833)\n"
        "    [[ 1.5 , -2.  ,  0.25],\n"
        "     [ 4.  ,  5.  , -0.  ]]\n"
    )


def test_show_summarises_large_tensors_and_full_prints_them(cwd, capsys):
    np.save(cwd / "big.npy", np.arange(300, dtype=np.int16).reshape(3, 100))
    code, out, _ = cli(capsys, "show", "big.npy")
    assert code == 0
    assert out == (
        "big.npy:\n"
        "  big: shape=(3, 100), dtype=int16  (min=0, max=299, mean=149.5)\n"
        "    [[  0,   1,   2, ...,  97,  98,  99],\n"
        "     [100, 101, 102, ..., 197, 198, 199],\n"
        "     [200, 201, 202, ..., 297, 298, 299]]\n"
    )
    code, out, _ = cli(capsys, "show", "big.npy", "--full")
    assert code == 0 and "..." not in out and ", 150, 151," in out


def test_show_several_files_and_stdin(cwd, capsys, monkeypatch):
    np.save(cwd / "a.npy", np.array([True, False, True]))
    np.save(cwd / "c.npy", np.array([1 + 2j, 3 - 1j], np.complex64))
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(np.array([7, -3], np.int64))))
    code, out, err = cli(capsys, "show", "a.npy", "-", "c.npy")
    assert code == 0, err
    assert out == (
        "a.npy:\n  a: shape=(3,), dtype=bool\n    [ True, False,  True]\n\n"
        "stdin:\n  stdin: shape=(2,), dtype=int64  (min=-3, max=7, mean=2)\n    [ 7, -3]\n\n"
        "c.npy:\n  c: shape=(2,), dtype=complex64\n    [1.+2.j, 3.-1.j]\n"
    )


def test_show_reads_fortran_order_correctly(cwd, capsys):
    values = np.arange(6, dtype=np.uint8).reshape(2, 3)
    np.save(cwd / "f.npy", np.asfortranarray(values))
    code, out, _ = cli(capsys, "show", "f.npy")
    assert code == 0
    assert out == (
        "f.npy:\n  f: shape=(2, 3), dtype=uint8  (min=0, max=5, mean=2.5; Fortran order)\n"
        "    [[0, 1, 2],\n     [3, 4, 5]]\n"
    )


def test_show_json_has_the_statistics_and_no_values(cwd, capsys):
    np.save(cwd / "n.npy", np.array([np.nan, np.inf, 1.0, -np.inf, np.nan], np.float64))
    np.save(cwd / "e.npy", np.zeros((0, 4), np.float32))
    code, out, err = cli(capsys, "show", "n.npy", "e.npy", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert doc["command"] == "show" and doc["status"] == "ok" and doc["exit_code"] == 0
    (n,) = doc["files"][0]["tensors"]
    assert doc["files"][0]["path"] == "n.npy"
    assert n == {
        "name": "n", "shape": [5], "dtype": "float64", "order": "C",
        "stats": {"min": "-inf", "max": "inf", "mean": "nan", "nan": 2, "count": 5},
    }
    (e,) = doc["files"][1]["tensors"]
    assert e["stats"] == {"min": None, "max": None, "mean": None, "nan": 0, "count": 0}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["show", "missing.npy"], "missing.npy: no such file"),
        (["show", "t.txt"], "t.txt: unknown format (.txt); onnxop reads and writes .npy"),
        (["show", "t.npy", "bad.npy"], "bad.npy: not a .npy file"),
    ],
)
def test_show_errors_come_before_any_output(cwd, capsys, argv, message):
    np.save(cwd / "t.npy", np.ones(3, np.float32))
    (cwd / "t.txt").write_text("x")
    (cwd / "bad.npy").write_bytes(b"not numpy at all")
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE
    assert out == ""
    assert err.startswith(f"onnxop: error: {message}") and err.count("\n") == 1


# ----------------------------------------------------------------- statistics


NUMPY_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_stats_match_numpy_on_random_bits(rng, name):
    values = random_array(rng, (7, 13), name)
    got = show.stats(values, dtype_by_name(name))
    floating = values.dtype.kind == "f"
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64) if floating else values
        nan = np.isnan(wide) if floating else np.zeros(values.shape, bool)
        kept = wide[~nan]
        expected_mean = float(np.mean(kept.astype(np.float64)))
    assert got["count"] == values.size and got["nan"] == int(nan.sum())
    assert got["min"] == kept.min() and got["max"] == kept.max()
    if np.isfinite(expected_mean):
        assert got["mean"] == pytest.approx(expected_mean, rel=1e-12)
    if not floating:
        assert type(got["min"]) is int  # exact, even for uint64 above 2**63


def test_stats_are_computed_in_slices(monkeypatch, rng):
    values = rng.normal(size=1000).astype(np.float32)
    values[::97] = np.nan
    whole = show.stats(values, dtype_by_name("float32"))
    monkeypatch.setattr(show, "SLICE", 7)
    sliced = show.stats(values, dtype_by_name("float32"))
    assert sliced["min"] == whole["min"] and sliced["max"] == whole["max"] and sliced["nan"] == whole["nan"] == 11
    assert sliced["mean"] == pytest.approx(whole["mean"], rel=1e-12)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float4_e2m1fn"])
def test_stats_for_ml_dtypes(name):
    dtype = dtype_by_name(name)
    values = np.array([-1.5, 0.5, 3.0, 2.0] if "float" in name else [1, 7, 0, 3], dtype=dtype.numpy)
    if name == "int4":
        values = np.array([-8, 7, 0, 3], dtype=dtype.numpy)
    got = show.stats(values, dtype)
    ref = values.astype(np.float64)
    assert got["min"] == ref.min() and got["max"] == ref.max() and got["mean"] == pytest.approx(ref.mean())
    assert show.stats_note(got, dtype).startswith(f"min={show._value(got['min'], dtype)}, max=")


def test_non_numeric_types_have_no_statistics():
    for name in ["bool", "complex64", "complex128"]:
        assert show.stats(np.zeros(3, dtype_by_name(name).numpy), dtype_by_name(name)) is None
    assert show.stats_note(None, dtype_by_name("bool")) == ""


def test_all_nan_and_empty_notes():
    f32 = dtype_by_name("float32")
    assert show.stats_note(show.stats(np.full(4, np.nan, np.float32), f32), f32) == "all 4 values NaN"
    assert show.stats_note(show.stats(np.zeros(0, np.float32), f32), f32) == "empty"
    note = show.stats_note(show.stats(np.array([0.1, np.nan], np.float32), f32), f32)
    assert note == "min=0.1, max=0.1, mean=0.1, 1 NaN"  # float32's own shortest form, not 0.10000000149


def test_ml_dtypes_names_round_trip():
    assert dtype_of_numpy(np.dtype(ml_dtypes.bfloat16)).name == "bfloat16"

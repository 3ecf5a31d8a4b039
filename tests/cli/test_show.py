"""onnxop show: the docs' layout, statistics against numpy, every read path."""

from __future__ import annotations

import json
import sys

import ml_dtypes
import numpy as np
import pytest

from conftest import cli, random_array
from onnxop_cli.render import show
from onnxop_cli.errors import ExitCode
from onnxop_cli.core.tensor import dtype_by_name, dtype_of_numpy
from test_pipes import FakeStdin, npy_bytes


def test_show_prints_the_docs_layout_with_statistics(cwd, capsys):
    np.save(cwd / "t.npy", np.array([[1.5, -2.0, 0.25], [4.0, 5.0, -0.0]], np.float32))
    code, out, err = cli(capsys, "show", "t.npy")
    assert code == 0 and err == ""
    assert out == (
        "t.npy:\n"
        "  t: shape=(2, 3), dtype=float32  (min=-2.0, max=5.0, mean=1.45833, std=2.39973)\n"
        "    [[ 1.5 , -2.  ,  0.25],\n"
        "     [ 4.  ,  5.  , -0.  ]]\n"
    )


def test_show_summarises_large_tensors_and_full_prints_them(cwd, capsys):
    np.save(cwd / "big.npy", np.arange(300, dtype=np.int16).reshape(3, 100))
    code, out, _ = cli(capsys, "show", "big.npy")
    assert code == 0
    assert out == (
        "big.npy:\n"
        "  big: shape=(3, 100), dtype=int16  (min=0, max=299, mean=149.5, std=86.6021)\n"
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
        "stdin:\n  stdin: shape=(2,), dtype=int64  (min=-3, max=7, mean=2.0, std=5.0)\n    [ 7, -3]\n\n"
        "c.npy:\n  c: shape=(2,), dtype=complex64\n    [1.+2.j, 3.-1.j]\n"
    )


def test_show_reads_fortran_order_correctly(cwd, capsys):
    values = np.arange(6, dtype=np.uint8).reshape(2, 3)
    np.save(cwd / "f.npy", np.asfortranarray(values))
    code, out, _ = cli(capsys, "show", "f.npy")
    assert code == 0
    assert out == (
        "f.npy:\n  f: shape=(2, 3), dtype=uint8  (min=0, max=5, mean=2.5, std=1.70783; Fortran order)\n"
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
        "name": "n", "shape": [5], "dtype": "float64", "order": "C", "byteorder": "little",
        "stats": {"min": "-inf", "max": "inf", "mean": "nan", "std": "nan", "nan": 2, "count": 5},
    }
    (e,) = doc["files"][1]["tensors"]
    assert e["stats"] == {"min": None, "max": None, "mean": None, "std": None, "nan": 0, "count": 0}


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
    assert show.stats_note(got, dtype).startswith(f"min={show.value_text(got['min'], dtype)}, max=")


def test_non_numeric_types_have_no_statistics():
    for name in ["bool", "complex64", "complex128"]:
        assert show.stats(np.zeros(3, dtype_by_name(name).numpy), dtype_by_name(name)) is None
    assert show.stats_note(None, dtype_by_name("bool")) == ""


def test_all_nan_and_empty_notes():
    f32 = dtype_by_name("float32")
    assert show.stats_note(show.stats(np.full(4, np.nan, np.float32), f32), f32) == "all 4 values NaN"
    assert show.stats_note(show.stats(np.zeros(0, np.float32), f32), f32) == "empty"
    note = show.stats_note(show.stats(np.array([0.1, np.nan], np.float32), f32), f32)
    assert note == "min=0.1, max=0.1, mean=0.1, std=0.0, 1 NaN"  # float32's own shortest form, not 0.10000000149


def test_ml_dtypes_names_round_trip():
    assert dtype_of_numpy(np.dtype(ml_dtypes.bfloat16)).name == "bfloat16"


# ----------------------------------------------------------------- formatting ()


@pytest.mark.parametrize("name", NUMPY_TYPES + ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "float4_e2m1fn"])
def test_std_matches_numpy(rng, monkeypatch, name):
    dtype = dtype_by_name(name)
    values = random_array(rng, (9, 31), name) if dtype.numpy_native else rng.integers(-6, 6, 279).astype(dtype.numpy)
    monkeypatch.setattr(show, "SLICE", 50)  # the slices' deviations are merged
    got = show.stats(values, dtype)
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64)
        kept = wide[~np.isnan(wide)]
        expected = float(np.std(kept))
    if np.isfinite(expected):
        assert got["std"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("name,values,note", [
    ("bfloat16", [-3.0, 1.0], "min=-3.0, max=1.0, mean=-1.0, std=2.0"),
    ("float4_e2m1fn", [-3.0, 1.0], "min=-3.0, max=1.0, mean=-1.0, std=2.0"),
    ("float8_e4m3fn", [0.1015625, 2.0], "min=0.101562, max=2.0, mean=1.05078, std=0.949219"),  # as ml_dtypes prints it
    ("float32", [-0.0, -0.0], "min=-0.0, max=-0.0, mean=-0.0, std=0.0"),
    ("float16", [-0.0, -0.0, np.nan], "min=-0.0, max=-0.0, mean=-0.0, std=0.0, 1 NaN"),
    ("float32", [-0.0, 1.0], "min=-0.0, max=1.0, mean=0.5, std=0.5"),
    ("float16", [65504.0, 0.1], "min=0.1, max=65504.0, mean=32752.0, std=32752.0"),
    ("bfloat16", [0.1, 1.0], "min=0.100098, max=1.0, mean=0.550049, std=0.449951"),
    ("int8", [7, -3], "min=-3, max=7, mean=2.0, std=5.0"),
])
def test_every_statistic_prints_as_its_type_prints(name, values, note):
    dtype = dtype_by_name(name)
    array = np.array(values, np.float64).astype(dtype.numpy)
    assert show.stats_note(show.stats(array, dtype), dtype) == note


def test_big_endian_is_noted_as_fortran_order_is(cwd, capsys):
    np.save(cwd / "be.npy", np.asfortranarray(np.arange(6, dtype=">i2").reshape(2, 3)))
    code, out, _ = cli(capsys, "show", "be.npy")
    assert code == 0
    assert out.splitlines()[1] == (
        "  be: shape=(2, 3), dtype=int16  (min=0, max=5, mean=2.5, std=1.70783; Fortran order; big-endian)"
    )
    assert out.splitlines()[2:] == ["    [[0, 1, 2],", "     [3, 4, 5]]"]


def test_hist_prints_bins_with_bars(cwd, capsys):
    np.save(cwd / "h.npy", np.array([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, np.nan], np.float32))
    code, out, _ = cli(capsys, "show", "h.npy", "--hist")
    assert code == 0
    assert out.split("\n", 3)[3] == (
        "    histogram of h (13 finite values; 1 NaN or infinite left out):\n"
        "      [0.0, 1.0)   3  ########################################\n"
        "      [1.0, 2.0)   1  #############\n"
        "      [2.0, 3.0)   1  #############\n"
        "      [3.0, 4.0)   1  #############\n"
        "      [4.0, 5.0)   1  #############\n"
        "      [5.0, 6.0)   1  #############\n"
        "      [6.0, 7.0)   1  #############\n"
        "      [7.0, 8.0)   1  #############\n"
        "      [8.0, 9.0)   1  #############\n"
        "      [9.0, 10.0]  2  ###########################\n"
    )


def test_hist_of_float64s_whose_range_overflows(cwd, capsys):
    """max - min past float64's largest (1e308 and -1e308) was an internal error, numpy's 'Too many bins for
    data range': the ten bins are cut from each end's tenth instead, every edge finite and increasing."""
    big = np.finfo(np.float64).max
    np.save(cwd / "h.npy", np.array([big, -big, 0.0, np.nan, 1e308, np.inf], np.float64))
    code, out, err = cli(capsys, "show", "h.npy", "--hist")
    assert code == 0, err
    assert out.split("\n")[4:7] == [
        "    histogram of h (4 finite values; 2 NaN or infinite left out):",
        "      [-1.79769e+308, -1.43815e+308)  1  ########################################",
        "      [-1.43815e+308, -1.07862e+308)  0"]
    from onnxop_cli.render.histogram import histogram

    got = histogram(np.array([1e308, -1e308, 1e308, 0.0]), dtype_by_name("float64"))
    assert got["counts"] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2] and got["other"] == 0
    assert got["edges"][0] == -1e308 and got["edges"][-1] == 1e308 and got["edges"][5] == 0.0
    assert all(np.isfinite(got["edges"])) and all(a < b for a, b in zip(got["edges"], got["edges"][1:]))


@pytest.mark.parametrize("values", [
    np.array([2**63 - 1, 2**63 - 2, 2**63 - 4], np.int64),  # one float64 step: numpy's +-0.5 is nothing there
    np.array([2**64 - 1, 2**64 - 2], np.uint64),
    np.array([1.0, np.nextafter(1.0, 2.0)]),  # two neighbouring float64s
    np.full(3, np.finfo(np.float64).max), np.full(3, -np.finfo(np.float64).max),  # +-0.5 past the largest
    np.full(2, np.finfo(np.float32).max, np.float32), np.full(2, 1e17)])
def test_hist_of_a_range_below_ten_float64_steps(cwd, capsys, values):
    """A range numpy cannot cut into ten increasing float64 edges was an internal error ('Too many bins for
    data range'), or (float64's largest, all equal) edges nan and inf counting 0 of 3 finite values: the
    bins are float64 steps around the range, and every value is counted."""
    from onnxop_cli.render.histogram import histogram

    np.save(cwd / "h.npy", values)
    code, out, err = cli(capsys, "show", "h.npy", "--hist")
    assert code == 0 and err == "", err
    got = histogram(values, dtype_by_name(values.dtype.name))
    edges = got["edges"]
    assert all(np.isfinite(edges)) and all(a < b for a, b in zip(edges, edges[1:]))
    assert sum(got["counts"]) == values.size and got["other"] == 0
    ranges = [line.split(")")[0].split("]")[0] for line in out.split("\n") if line.startswith("      [")]
    assert len(ranges) == 10 and len(set(ranges)) == 10, out  # each label names its own range


def test_hist_labels_take_the_digits_that_tell_the_edges_apart(cwd, capsys):
    """Bins narrower than six digits were printed as ten times '[0.1, 0.1)': a label takes as many digits
    as it needs to differ from the next (six where that is enough)."""
    low = np.float32(0.1)
    np.save(cwd / "h.npy", np.array([low, np.nextafter(low, np.float32(1))], np.float32))
    code, out, _ = cli(capsys, "show", "h.npy", "--hist")
    assert code == 0
    lines = out.split("\n")
    assert lines[4] == "      [0.1000000015, 0.1000000022)  1  ########################################"
    assert lines[13] == "      [0.1000000082, 0.1000000089]  1  ########################################"


def test_hist_of_a_large_file_reads_it_slice_by_slice(cwd, capsys, monkeypatch, rng):
    """--hist read a large file's values through its map (the statistics were read slice by slice for that
    reason, but not with --hist), so every page of the file stayed resident: 10**8 float32s peaked at 554 MB
    RSS, 162 MB without --hist. Its two passes read the file as the statistics do (180 MB)."""
    from onnxop_cli.core import sources
    from onnxop_cli.render import histogram as histograms

    values = rng.normal(size=1000).astype(np.float32)
    values[[3, 500]] = [np.nan, -np.inf]
    np.save(cwd / "big.npy", values)
    monkeypatch.setattr(sources, "MAP_THRESHOLD", 64)
    monkeypatch.setattr(show, "SLICE", 48)  # several slices of one reused buffer
    seen = []
    real = histograms.histogram

    def spy(values, dtype, **kw):
        seen.append(kw.get("parts"))
        return real(values, dtype, **kw)

    monkeypatch.setattr(histograms, "histogram", spy)
    code, out, err = cli(capsys, "--json", "show", "big.npy", "--hist")
    assert code == 0, err
    assert len(seen) == 1 and seen[0] is not None and len(list(seen[0]())) == 21
    got = json.loads(out)["files"][0]["tensors"][0]["histogram"]
    assert got == real(values, dtype_by_name("float32"))
    assert got["other"] == 2 and sum(got["counts"]) == 998


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "float8_e4m3fn"])
@pytest.mark.parametrize("slice_", [1, 2, 1 << 22])
def test_min_and_max_tell_minus_zero_from_zero(monkeypatch, name, slice_):
    """[0.0, -0.0] showed min=-0.0, max=-0.0 and [-0.0, 0.0] min=0.0, max=0.0 (numpy's min and max, and
    Python's across slices, pick either zero): the reader was told every value had one sign. -0.0 is the
    min and 0.0 the max wherever both are there, within a slice and across slices."""
    dtype = dtype_by_name(name)
    monkeypatch.setattr(show, "SLICE", slice_)
    for values, lo, hi in [([0.0, -0.0], "-0.0", "0.0"), ([-0.0, 0.0], "-0.0", "0.0"), ([-0.0, -0.0], "-0.0", "-0.0"),
                           ([0.0, 0.0, 1.0], "0.0", "1.0"), ([-0.0, -1.0, 0.0, np.nan], "-1.0", "0.0"),
                           ([-0.0, 2.0], "-0.0", "2.0"), ([0.0, -2.0, -0.0], "-2.0", "0.0")]:
        got = show.stats(np.array(values, np.float32).astype(dtype.numpy), dtype)
        assert (repr(float(got["min"])), repr(float(got["max"]))) == (lo, hi), values


@pytest.mark.parametrize("slice_", [1, 3, 1 << 22])
def test_mean_and_std_of_float64s_near_the_largest_are_finite(monkeypatch, slice_):
    """Three float64 maxima showed mean=inf, std=inf (their sum overflows), a mean no finite values can have
    (it lies between min and max): such values are read again scaled by 2**-600, within a slice and across
    slices; infinities still make them inf or nan."""
    big = np.finfo(np.float64).max
    monkeypatch.setattr(show, "SLICE", slice_)
    f64 = dtype_by_name("float64")
    got = show.stats(np.array([big, big, big]), f64)
    assert (got["mean"], got["std"]) == (big, 0.0)
    got = show.stats(np.array([1e308, 1e308, -1e308, 1e308, np.nan]), f64)
    assert got["mean"] == pytest.approx(5e307, rel=1e-12) and got["std"] == pytest.approx(8.660254037844386e307)
    assert got["nan"] == 1
    got = show.stats(np.array([-big, -big]), f64)
    assert (got["mean"], got["std"]) == (-big, 0.0)
    got = show.stats(np.array([big, np.inf]), f64)
    assert got["mean"] == np.inf and np.isnan(got["std"])


def test_full_output_streams_equal_the_built_text(cwd, capsys, rng):
    values = rng.normal(size=(40, 30)).astype(np.float32)
    np.save(cwd / "f.npy", values)
    code, out, _ = cli(capsys, "show", "f.npy", "--full")
    assert code == 0
    from onnxop_cli.render.values import format_values

    body = "\n".join("    " + line if line else "" for line in format_values(values, full=True).split("\n"))
    assert out.split("\n", 2)[2] == body + "\n"


@pytest.mark.parametrize("name", ["float32", "float16", "int16", "uint8", "float64"])
def test_histogram_matches_numpy_across_slices(rng, monkeypatch, name):
    from onnxop_cli.render.histogram import histogram

    values = random_array(rng, (11, 17), name)
    monkeypatch.setattr(show, "SLICE", 13)
    got = histogram(values, dtype_by_name(name))
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64).reshape(-1)
    finite = wide[np.isfinite(wide)]
    counts, edges = np.histogram(finite, bins=10)
    assert got == {"edges": edges.tolist(), "counts": counts.tolist(), "other": int(wide.size - finite.size)}

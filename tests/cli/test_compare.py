"""``onnxop compare``: exact bits by default, tolerances and ulps for
floating types, any pair of formats, folders by name, exit 0/1/2, and a
reading in chunks (checked with a chunk smaller than the tensors). The
expected answers come from numpy on the same arrays."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from onnx import numpy_helper

from conftest import cli, error_of, random_array
from onnxop_cli.core import compare as cmp
from onnxop_cli.core.tensor import Tensor, dtype_by_name


def save_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def test_same_values_in_two_formats_are_the_same(cwd, capsys, rng):
    a = random_array(rng, (3, 5, 7), "float32")
    np.save("a.npy", a)
    save_pb(cwd / "a.pb", a, "y")
    code, out, _ = cli(capsys, "compare", "a.npy", "a.pb")
    assert code == 0 and out.startswith("a.npy vs a.pb: same (shape=(3, 5, 7), dtype=float32, 105 elements, exact")


def test_exact_counts_nan_payloads_and_signed_zeros(cwd, capsys):
    a = np.array([np.nan, -0.0, 1.0, 2.0], np.float32)
    b = a.copy()
    b.view(np.uint32)[0] |= 1  # another NaN payload
    b[1] = 0.0
    np.save("a.npy", a)
    np.save("b.npy", b)
    code, out, _ = cli(capsys, "compare", "a.npy", "b.npy")
    assert code == 1
    lines = out.splitlines()
    assert "different: 2 of 4 elements" in lines[0]
    assert lines[1] == "  [0]: nan (0x7fc00000) vs nan (0x7fc00001)"
    assert lines[2] == "  [1]: -0.0 (0x80000000) vs 0.0 (0x00000000)"
    # a tolerance or ulps treat NaN as NaN and -0.0 as 0.0
    assert cli(capsys, "compare", "a.npy", "b.npy", "--ulp", "0")[0] == 0
    assert cli(capsys, "compare", "a.npy", "b.npy", "--atol", "0")[0] == 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_ulp_distance_against_nextafter(tmp_path, dtype):
    dt = dtype_by_name(dtype)
    values = np.array([1.0, -1.5, 0.25, 3.0], dtype=dt.numpy)
    bits = values.view(f"u{dt.numpy.itemsize}").copy()
    steps = np.array([0, 1, 2, 3], dtype=bits.dtype)  # same sign: a code k apart is k ulp apart
    moved = (bits + steps).view(dt.numpy)
    a, b = Tensor.from_numpy(values, "a", dt), Tensor.from_numpy(moved, "b", dt)
    for n, expect in [(0, 3), (1, 2), (2, 1), (3, 0)]:
        pair = cmp.compare_tensors("a", "b", a, b, cmp.Rule(ulp=n))
        assert pair.differing == expect, (n, pair.first)


def test_ulp_across_zero_counts_both_sides(tmp_path):
    tiny = np.array([np.float32(1e-45)], np.float32)  # the smallest subnormal
    a = Tensor.from_numpy(-tiny, "a")
    b = Tensor.from_numpy(tiny, "b")
    assert cmp.compare_tensors("a", "b", a, b, cmp.Rule(ulp=1)).differing == 1
    assert cmp.compare_tensors("a", "b", a, b, cmp.Rule(ulp=2)).differing == 0


def test_tolerance_matches_numpy_isclose(cwd, capsys, rng):
    a = rng.standard_normal(1000).astype(np.float32)
    b = (a * (1 + rng.uniform(-1e-4, 1e-4, a.shape))).astype(np.float32)
    np.save("a.npy", a)
    np.save("b.npy", b)
    code, out, _ = cli(capsys, "compare", "a.npy", "b.npy", "--rtol", "5e-5", "--json")
    doc = json.loads(out)
    expect = int(np.count_nonzero(~np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=5e-5, atol=0)))
    assert expect > 0 and doc["pairs"][0]["differing"] == expect and code == 1
    first = doc["pairs"][0]["first"][0]
    i = first["index"][0]
    assert first["a"] == float(a[i]) and first["a_bits"] == f"0x{int(a.view(np.uint32)[i]):08x}"


def test_read_in_chunks_finds_every_difference(monkeypatch, rng):
    monkeypatch.setattr(cmp, "CHUNK", 7)  # smaller than the tensor: differences in several chunks
    a = random_array(rng, (5, 6, 4), "int16")
    b = a.copy()
    hits = [(0, 0, 0), (2, 3, 1), (4, 5, 3)]
    for h in hits:
        b[h] ^= 1
    ta, tb = Tensor.from_numpy(a), Tensor.from_numpy(np.asfortranarray(b))  # and another layout
    pair = cmp.compare_tensors("a", "b", ta, tb, cmp.Rule(), first=10)
    assert pair.differing == 3 and [d.index for d in pair.first] == hits


def test_packed_and_string_types(cwd, capsys):
    a = np.array([1, -2, 3, 7, -8], dtype=ml_dtypes.int4)
    b = a.copy()
    b[3] = -1
    save_pb(cwd / "a.pb", a, "q")
    save_pb(cwd / "b.pb", b, "q")
    code, out, _ = cli(capsys, "compare", "a.pb", "b.pb")
    assert code == 1 and out.splitlines()[1] == "  [3]: 7 vs -1"
    np.save("s.npy", np.array(["ab", "cd"]))
    np.save("t.npy", np.array(["ab", "ce"]))
    code, out, _ = cli(capsys, "compare", "s.npy", "t.npy")
    assert code == 1 and out.splitlines()[1] == "  [1]: 'cd' vs 'ce'"


def test_shapes_and_dtypes_that_differ_are_reported(cwd, capsys):
    np.save("a.npy", np.zeros((2, 3), np.float32) + 1)
    np.save("b.npy", np.zeros((3, 2), np.float32) + 1)
    np.save("c.npy", np.zeros((2, 3), np.float64) + 1)
    code, out, _ = cli(capsys, "compare", "a.npy", "b.npy")
    assert code == 1 and "different: shapes differ: (2, 3) and (3, 2)" in out
    code, out, _ = cli(capsys, "compare", "a.npy", "c.npy")
    assert code == 1 and "different: dtypes differ: float32 and float64" in out


def test_npz_member_against_a_file(cwd, capsys, rng):
    a = random_array(rng, (4,), "int32")
    np.savez("ab.npz", x=a, y=a + 1)
    np.save("a.npy", a)
    assert cli(capsys, "compare", "ab.npz", "a.npy", "-m", "x")[0] == 0
    assert cli(capsys, "compare", "ab.npz", "a.npy", "-m", "y")[0] == 1
    code, _, err = cli(capsys, "compare", "ab.npz", "a.npy")
    assert code == 2 and error_of(err) == (
        "compare: ab.npz holds 2 tensors ('x', 'y') and the other side one; choose one with -m NAME"
    )
    code, _, err = cli(capsys, "compare", "ab.npz", "a.npy", "-m", "zz*")
    assert code == 2 and "no tensor matches -m zz*" in error_of(err)


def test_run_folder_against_a_node_test_data_set(cwd, capsys, rng):
    (cwd / "out").mkdir()
    (cwd / "ds").mkdir()
    y = random_array(rng, (2, 3), "float32")
    np.save("out/y.npy", y)
    save_pb(cwd / "ds" / "output_0.pb", y, "y")  # paired by the tensor's name
    save_pb(cwd / "ds" / "input_0.pb", y, "x")  # a node test's input: left out
    code, out, _ = cli(capsys, "compare", "out", "ds")
    assert code == 0, out
    assert out.splitlines()[0].startswith("out/y.npy vs ds/output_0.pb: same")
    np.save("out/z.npy", y)  # no partner: a difference
    code, out, _ = cli(capsys, "compare", "out", "ds", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["only_a"] == ["out/z.npy"] and doc["left_out"] == ["ds/input_0.pb"]


def test_stdin_as_one_side(tmp_path, rng):
    from commands import run_commands

    a = random_array(rng, (3, 3), "float64")
    save_pb(tmp_path / "a.pb", a, "a")
    np.save(tmp_path / "a.npy", a)
    (done,) = run_commands([(tmp_path, ["compare", "-", "a.npy"], (tmp_path / "a.pb").read_bytes())])
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args,message", [
    (["a.npy", "a.npy", "--ulp", "1", "--rtol", "1"], "compare: give --ulp or --rtol/--atol, not both"),
    (["a.npy", "a.npy", "--rtol", "-1"], "compare: --rtol must be a finite number >= 0, got -1.0"),
    (["a.npy", "a.npy", "--ulp", "-2"], "compare: --ulp must be >= 0, got -2"),
    (["a.npy", "a.npy", "--first", "-1"], "compare: --first must be >= 0, got -1"),
    (["a.npy", "missing.npy"], "missing.npy: no such file"),
    (["-", "-"], "compare: stdin can be read once; give - for A or for B, not both"),
    (["a.npy", "empty"], "compare: the folder empty holds no .npy or .pb file"),
])
def test_unusable_inputs_exit_2(cwd, capsys, args, message):
    np.save("a.npy", np.ones(3, np.float32))
    (cwd / "empty").mkdir()
    code, out, err = cli(capsys, "compare", *args)
    assert code == 2 and error_of(err) == message


def test_a_truncated_file_is_unusable_not_different(cwd, capsys):
    np.save("a.npy", np.arange(100, dtype=np.float32))
    raw = (cwd / "a.npy").read_bytes()
    (cwd / "b.npy").write_bytes(raw[:-8])
    code, _, err = cli(capsys, "compare", "a.npy", "b.npy", "--json")
    assert code == 2 and "b.npy" in error_of(err)


def test_files_are_read_in_chunks_never_whole(cwd, capsys, monkeypatch, rng):
    """Neither file's bytes are ever asked for whole: only chunk-sized reads."""
    from onnxop_cli.core import sources

    a = random_array(rng, (64, 33), "float64")
    np.save("a.npy", a)
    np.save("b.npy", a)
    monkeypatch.setattr(cmp, "CHUNK", 100)
    monkeypatch.setattr(sources.FileBytes, "to_array", lambda self: pytest.fail("a whole file was read"))
    reads = []
    real = sources.FileBytes.readinto
    monkeypatch.setattr(sources.FileBytes, "readinto", lambda self, offset, out: (reads.append(len(out)), real(self, offset, out))[1])
    code, _, err = cli(capsys, "compare", "a.npy", "b.npy")
    assert code == 0, err
    assert max(reads) == 100 * 8 and sum(reads) == 2 * a.nbytes


@pytest.mark.parametrize("chunk", [1, 3, 5])
def test_packed_types_in_small_chunks(monkeypatch, rng, chunk):
    monkeypatch.setattr(cmp, "CHUNK", chunk)
    codes = rng.integers(0, 4, 37)
    moved = codes.copy()
    moved[[0, 17, 36]] = (codes[[0, 17, 36]] + 1) % 4
    a, b = codes.astype(ml_dtypes.uint2), moved.astype(ml_dtypes.uint2)
    pair = cmp.compare_tensors("a", "b", Tensor.from_numpy(a), Tensor.from_numpy(b), cmp.Rule(), first=5)
    assert pair.differing == 3 and [d.index for d in pair.first] == [(0,), (17,), (36,)]


def test_largest_distances_are_gathered_over_every_chunk(monkeypatch, rng):
    """The largest |a-b|, relative error and ulp distance of a pair read 7
    elements at a time are those of the whole tensors (the largest sits in a
    late chunk)."""
    monkeypatch.setattr(cmp, "CHUNK", 7)
    a = rng.uniform(1, 2, 60).astype(np.float32)
    b = a.copy()
    b.view(np.uint32)[[3, 50]] += np.array([2, 9], np.uint32)
    pair = cmp.compare_tensors("a", "b", Tensor.from_numpy(a), Tensor.from_numpy(b), cmp.Rule())
    gap = np.abs(a.astype(np.float64) - b)
    d = pair.distance
    assert pair.differing == 2 and d.max_ulp == 9 and d.nan_vs_number == 0
    assert d.max_abs == gap.max() and d.max_rel == (gap / np.abs(b.astype(np.float64))).max()

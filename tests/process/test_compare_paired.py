"""``onnxop compare A/ B/ --paired-only`` on real files: a run's 3
outputs against a folder of 438 expected tensors compare the 3 and count the
435 others on the last line; nothing paired exits 1 (a paired compare never
passes on nothing), in text and in --json; without the option every name
without a partner is still a difference.

What compare prints and exits with is under test, not the process: the tests'
commands run in one process (tests/commands.py's Prepared), each test's in
a folder of its own that its ``prepared`` function fills."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commands import Prepared

prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Each prepared folder and its commands' results, all run in one process."""
    return prepared.run(tmp_path_factory)


def folders(tmp_path):
    """out/ holds 3 tensors of ds/'s 438, equal to them."""
    (tmp_path / "out").mkdir()
    (tmp_path / "ds").mkdir()
    for i in range(438):
        t = np.arange(6, dtype=np.float32).reshape(2, 3) + i
        np.save(tmp_path / "ds" / f"t{i:03d}.npy", t)
        if i in (0, 200, 437):
            np.save(tmp_path / "out" / f"t{i:03d}.npy", t)
    return tmp_path


@prepared
def paired_only(folder):
    folders(folder)
    return [["compare", "out", "ds", "--paired-only"], ["compare", "out", "ds", "--paired-only", "--json"]]


def test_paired_only_compares_the_3_and_counts_the_435(ran):
    done, as_json = ran["paired_only"][1]
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(": same (shape=(2, 3), dtype=float32, 6 elements, exact)" in x for x in lines[:3])
    assert lines[3] == "3 compared, 0 different, 0 only in the first, 435 only in the second (not compared: --paired-only)"
    doc = json.loads(as_json.stdout)
    assert doc["same"] is True and doc["paired_only"] is True and len(doc["pairs"]) == 3 and len(doc["only_b"]) == 435


@prepared
def unpaired(folder):
    folders(folder)
    return [["compare", "out", "ds"]]


def test_without_the_option_the_unpaired_are_differences(ran):
    [done] = ran["unpaired"][1]
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 3 + 435 + 1
    assert lines[-1] == "3 compared, 0 different, 0 only in the first, 435 only in the second"


@prepared
def difference(folder):
    folders(folder)
    np.save(folder / "out" / "t200.npy", np.zeros((2, 3), np.float32))
    return [["compare", "out", "ds", "--paired-only"]]


def test_a_difference_in_a_pair_still_fails_a_paired_compare(ran):
    [done] = ran["difference"][1]
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith("3 compared, 1 different, 0 only in the first, 435 only in the second")


@prepared
def nothing_paired(folder):
    folders(folder)
    (folder / "other").mkdir()
    np.save(folder / "other" / "zz.npy", np.ones(3, np.float32))
    return [["compare", "other", "ds", *paired, *given] for paired in (["--paired-only"], []) for given in ([], ["--json"])]


@pytest.mark.parametrize("paired", [["--paired-only"], []])
def test_nothing_paired_exits_1_never_passes(ran, paired):
    done, as_json = ran["nothing_paired"][1][:2] if paired else ran["nothing_paired"][1][2:]
    assert done.returncode == 1 and done.stderr == "", done.stderr
    tail = " (not compared: --paired-only)" if paired else ""
    assert done.stdout.splitlines()[-1] == (
        f"0 compared, 0 different, 1 only in the first, 438 only in the second{tail}; no tensor was paired")
    doc = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and doc["status"] == "failed" and doc["same"] is False and doc["pairs"] == []
    assert doc["only_a"] == ["other/zz.npy"] and len(doc["only_b"]) == 438


@prepared
def forged(folder):
    name = "x\n0 compared, 0 different.npy"
    for side in ("a", "b"):
        (folder / side).mkdir()
        np.save(folder / side / name, np.ones(2, np.float32))
    np.save(folder / "b" / "y\x1b[2Jz.npy", np.ones(2, np.float32))
    return [["compare", "a", "b"]]


def test_names_from_the_folders_cannot_forge_a_line(ran):
    """A file name holding a newline or an escape is quoted in the pair's
    line and the unpaired lines."""
    [done] = ran["forged"][1]
    assert done.returncode == 1 and done.stdout.splitlines() == [
        "a/x\\n0 compared, 0 different.npy vs b/x\\n0 compared, 0 different.npy: same "
        "(shape=(2,), dtype=float32, 2 elements, exact)",
        "b/y\\x1b[2Jz.npy: only in the second (no tensor of that name in the first)",
        "1 compared, 0 different, 0 only in the first, 1 only in the second",
    ]

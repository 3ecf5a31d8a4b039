"""Options given twice: a list option accumulates, a single value given twice
differently is refused, the same value twice is fine, the environment is
not a second value.

Refusals are checked for their outcome AND for what they left: the folder's
files byte for byte, no output, no temporary file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from batch_folders import refused
from batch_folders import tree  # noqa: F401 (a fixture)
from conftest import cli

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


def test_a_list_option_given_twice_accumulates(backend, tree, capsys):
    code, _, err = cli(capsys, "unsqueeze", "a.npy", "--axes", "0", "--axes", "-1", "-o", "out/one.npy", "-b", backend)
    assert code == 0, err
    code, _, err = cli(capsys, "unsqueeze", "a.npy", "--axes", "0,-1", "-o", "out/two.npy", "-b", backend)
    assert code == 0, err
    one, two = np.load(tree / "out" / "one.npy"), np.load(tree / "out" / "two.npy")
    assert one.shape == two.shape == (1, 2, 3, 4, 1) and one.tobytes() == two.tobytes()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["flatten", "a.npy", "--axis", "1", "--axis", "2"], "--axis given twice, as 1 and 2; give it once"),
        (["flatten", "a.npy", "-a", "1", "--axis", "2"], "--axis given twice, as 1 and 2; give it once"),
        (["flatten", "a.npy", "-o", "out/x.npy", "-o", "out/y.npy"], "--output given twice, as out/x.npy and out/y.npy; give it once"),
        (["flatten", "a.npy", "--opset", "13", "--opset", "11"], "--opset given twice, as 13 and 11; give it once"),
        (["flatten", "a.npy", "-m", "x", "--member", "y"], "--member given twice, as x and y; give it once"),
        (["flatten", "a.npy", "-b", "gl", "-b", "vulkan"], "--backend given twice, as gl and vulkan; give it once"),
        (["--backend", "gl", "flatten", "a.npy", "--backend", "vulkan"], "--backend given twice, as gl and vulkan; give it once"),
        (["--backend", "gl", "--backend", "vulkan", "info"], "--backend given twice, as gl and vulkan; give it once"),
        (["bench", "--repeats", "1", "--repeats", "2"], "--repeats given twice, as 1 and 2; give it once"),
        (["doc-examples", "-n", "a", "--name", "b"], "--name given twice, as a and b; give it once"),
    ],
)
def test_a_single_value_given_twice_differently_is_refused(tree, capsys, argv, message):
    assert refused(capsys, tree, *argv) == message


def test_the_same_value_twice_is_fine(backend, tree, capsys):
    code, _, err = cli(
        capsys, "--backend", backend, "flatten", "a.npy", "--axis", "2", "-a", "2", "-o", "out/o.npy",
        "-o", "out/o.npy", "--backend", backend,
    )
    assert code == 0, err
    assert np.load(tree / "out" / "o.npy").shape == (6, 4)


def test_the_environment_does_not_count_as_a_second_backend(backend, tree, capsys, monkeypatch):
    other = "gl" if backend == "vulkan" else "vulkan"
    monkeypatch.setenv("ONNXOP_BACKEND", other)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "out/o.npy", "--backend", backend, "--json")
    assert code == 0, err
    assert json.loads(out)["backend"] == backend

"""The ``rng`` fixture draws the same values in every process (whatever
Python's hash salt), $ONNXOP_TEST_SEED draws others, and a failing test's
report prints its seed and a command that replays it, which does: each run
is a real pytest process over a small test file that fails on purpose."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

DRAWS = '''
def test_draws(rng):
    print("DRAW", int(rng.integers(0, 2**62)))
    assert False, "on purpose"
'''


def pytest_run(folder: Path, *argv: str, hash_seed: str = "0", seed: str = "") -> subprocess.CompletedProcess:
    """pytest in ``folder`` with tests/conftest.py as a plugin (its fixtures and hooks), and no
    backend: the draws need no GPU (conftest then opens no WebGPU instance). Of the plugins
    installed, only conftest: xdist's and hypothesis's entry points (about 15% of such a process's
    CPU seconds, ~0.25 of 1.6) print and draw nothing here."""
    env = dict(os.environ, PYTHONPATH=str(TESTS), PYTHONHASHSEED=hash_seed, ONNXOP_TEST_BACKENDS="",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("ONNXOP_TEST_SEED", None)
    if seed:
        env["ONNXOP_TEST_SEED"] = seed
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), *argv], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)


def draw(done: subprocess.CompletedProcess) -> str:
    found = re.findall(r"^DRAW (\d+)$", done.stdout, re.M)
    assert done.returncode == 1 and len(found) == 1, done.stdout + done.stderr
    return found[0]


def replay_command(done: subprocess.CompletedProcess) -> str:
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if re.fullmatch(r"-+ random seed -+", line))
    assert "crc32 of the node id" in lines[at + 1], lines[at + 1]
    return lines[at + 2].strip()


def test_a_failing_random_test_prints_a_seed_that_replays_it(tmp_path):
    (tmp_path / "test_draws.py").write_text(DRAWS)
    first = pytest_run(tmp_path, "test_draws.py", hash_seed="1")
    command = replay_command(first)
    assert command == "python -m pytest -p no:cacheprovider test_draws.py::test_draws"
    replayed = pytest_run(tmp_path, *shlex.split(command)[5:], hash_seed="3")  # another salt for str hashes too
    assert draw(replayed) == draw(first)

    other = pytest_run(tmp_path, "test_draws.py", seed="7")
    assert draw(other) != draw(first)
    command = replay_command(other)
    assert command == "ONNXOP_TEST_SEED=7 python -m pytest -p no:cacheprovider test_draws.py::test_draws"
    assert draw(pytest_run(tmp_path, "test_draws.py::test_draws", hash_seed="4", seed="7")) == draw(other)


def test_a_seed_that_is_no_integer_is_refused(tmp_path):
    (tmp_path / "test_draws.py").write_text(DRAWS)
    done = pytest_run(tmp_path, "test_draws.py", seed="abc")
    assert done.returncode == 1 and "$ONNXOP_TEST_SEED must be an integer, got 'abc'" in done.stdout


MODULE_DRAWS = '''
import pytest
from conftest import seeded_rng


@pytest.fixture(scope="module")
def drawn(request):
    return int(seeded_rng(request).integers(0, 2**62))


def test_uses_the_module_draw(drawn):
    print("DRAW", drawn)
    assert False, "on purpose"
'''


def test_a_failing_test_whose_values_a_module_fixture_drew_prints_that_seed(tmp_path):
    """A module fixture that draws for several tests (one process for all their commands) draws
    from the module's node id: a failure prints that seed, and the values are that seed's."""
    import numpy as np

    from conftest import seed_of

    (tmp_path / "test_module_draws.py").write_text(MODULE_DRAWS)
    done = pytest_run(tmp_path, "test_module_draws.py")
    command = replay_command(done)
    assert command == "python -m pytest -p no:cacheprovider test_module_draws.py::test_uses_the_module_draw"
    seed = seed_of("test_module_draws.py", "")
    assert f"rng seed {seed} (crc32 of the node id 'test_module_draws.py')" in done.stdout, done.stdout
    assert draw(done) == str(int(np.random.default_rng(seed).integers(0, 2**62)))

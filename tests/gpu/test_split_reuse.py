"""Several outputs of pieces in one node (Split) share their runs'
buffers (gpu/pieces.Runs, held by core/apply_tensors._outputs): one run is made
per different band and window, each output still byte-identical to numpy
on random bits with dst poisoned before each band (an element an output
fails to write would show the poison or the previous output's bytes), and
the runs released when the node ends, also when it fails."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli import api
from onnxop_cli.gpu import pieces


@pytest.fixture
def made(monkeypatch):
    """Runs made and released, per node."""
    log = {"made": 0, "released": 0}
    real_get, real_release = pieces.Runs.get, pieces.Runs.release

    def get(self, key, make):
        before = self.made
        run = real_get(self, key, make)
        log["made"] += self.made - before
        return run

    def release(self):
        log["released"] += len(self.kept)
        real_release(self)

    monkeypatch.setattr(pieces.Runs, "get", get)
    monkeypatch.setattr(pieces.Runs, "release", release)
    monkeypatch.setenv("ONNXOP_POISON", "0xA5")
    return log


@pytest.mark.parametrize("dtype", ["float32", "uint8", "float16", "int64"])
def test_equal_outputs_share_one_run(backend, rng, made, dtype):
    x = random_array(rng, (6, 40, 7), np.dtype(dtype))
    got = api.split(x, axis=1, num_outputs=8, backend=backend)
    want = np.split(x, 8, axis=1)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    assert [g.shape for g in got] == [w.shape for w in want]
    assert made == {"made": 1, "released": 1}


def test_unequal_outputs_each_get_a_run_of_their_size(backend, rng, made):
    x = random_array(rng, (9, 300), np.dtype("float32"))
    sizes = [250, 3, 47]  # a large output first: the smaller ones after it must not see its bytes
    got = api.split(x, axis=1, split=np.array(sizes, np.int64), backend=backend)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=1)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    assert made["made"] == 3 and made["released"] == 3


def test_the_runs_are_released_when_an_output_fails(backend, rng, made, monkeypatch):
    x = random_array(rng, (4, 16), np.dtype("float32"))
    calls = {"n": 0}
    real = pieces.Run.drain

    def drain(self, sink, nbytes):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the second output fails")
        return real(self, sink, nbytes)

    monkeypatch.setattr(pieces.Run, "drain", drain)
    with pytest.raises(RuntimeError, match="second output"):
        api.split(x, axis=1, num_outputs=4, backend=backend)
    assert made == {"made": 1, "released": 1}

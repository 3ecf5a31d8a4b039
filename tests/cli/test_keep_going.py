"""``--keep-going`` runs the other inputs and lists the refused ones, and
``-o all.npz`` packs a batch into one archive (two results with one member
name refused, a failed pack leaving no archive).
"""

from __future__ import annotations

import json
import os

import numpy as np

from conftest import cli, error_of, random_array
from pb_files import f8_pb, save_pb


def test_keep_going_runs_the_others_and_lists_the_refused(cwd, capsys, rng):
    a = random_array(rng, (3, 4), "float32")
    np.save("a.npy", a)
    f8_pb(cwd / "f8.pb")
    os.mkdir("out")
    code, _, err = cli(capsys, "slice", "a.npy", "f8.pb", "--starts", "1", "--ends", "3", "-o", "out")
    assert code == 2 and os.listdir("out") == []  # without it: the whole batch refused
    assert error_of(err) == "f8.pb: Slice: no opset allows float8_e4m3fn"
    code, out, err = cli(capsys, "slice", "a.npy", "f8.pb", "--starts", "1", "--ends", "3", "-o", "out", "--keep-going")
    assert code == 2
    assert "onnxop: refused, not run: f8.pb: Slice: no opset allows float8_e4m3fn" in err.splitlines()
    assert np.load("out/a.npy").tobytes() == a[1:3].tobytes() and os.listdir("out") == ["a.npy"]
    code, out, _ = cli(capsys, "slice", "a.npy", "f8.pb", "--starts", "1", "--ends", "3", "-o", "out", "-k", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["status"] == "failed" and doc["exit_code"] == 2
    assert doc["refused"] == [{"input": "f8.pb", "output": "out/f8.pb",
                               "message": "f8.pb: Slice: no opset allows float8_e4m3fn"}]
    assert [r["inputs"][0]["path"] for r in doc["runs"]] == ["a.npy"]


def test_keep_going_with_nothing_refused_exits_0(cwd, capsys):
    np.save("a.npy", np.ones((2, 2), np.float32))
    code, _, _ = cli(capsys, "transpose", "a.npy", "--keep-going", "-q")
    assert code == 0


def test_a_batch_packs_into_one_archive(cwd, capsys, rng):
    a, b = random_array(rng, (2, 3), "float32"), random_array(rng, (3,), "int64")
    np.save("a.npy", a)
    save_pb(cwd / "b.pb", b, "bias")
    code, _, err = cli(capsys, "transpose", "a.npy", "b.pb", "-o", "all.npz")
    assert code == 0, err
    got = np.load("all.npz")
    assert list(got) == ["a", "bias"]
    assert got["a"].tobytes() == np.ascontiguousarray(a.T).tobytes() and got["bias"].tobytes() == b.tobytes()


def test_packing_refuses_two_results_with_one_member_name(cwd, capsys):
    os.mkdir("p")
    np.save("a.npy", np.ones(2, np.float32))
    np.save("p/a.npy", np.ones(2, np.float32))
    code, _, err = cli(capsys, "transpose", "a.npy", "p/a.npy", "-o", "all.npz")
    assert code == 2 and error_of(err) == (
        "all.npz: the results of a.npy and p/a.npy would both be member 'a'; rename one input, or write them to a folder"
    )
    assert not os.path.exists("all.npz")
    np.savez("all.npz", x=np.ones(1))
    code, _, err = cli(capsys, "transpose", "a.npy", "all.npz", "-o", "all.npz")
    assert code == 2 and "the archive to pack into is also an input (all.npz)" in error_of(err)


def test_a_failed_pack_leaves_no_archive(cwd, capsys, monkeypatch):
    np.save("a.npy", np.ones(2, np.float32))
    np.save("b.npy", np.ones(2, np.float32))
    from onnxop_cli.core import apply as core

    real, calls = core.apply, []

    def failing(node, tensor, **kw):
        calls.append(tensor.name)
        if len(calls) == 2:
            raise core.OnnxopError("the device went away")
        return real(node, tensor, **kw)

    monkeypatch.setattr(core, "apply", failing)
    code, _, err = cli(capsys, "transpose", "a.npy", "b.npy", "-o", "all.npz")
    assert code == 1 and "the device went away" in error_of(err) and not os.path.exists("all.npz")
    assert [p for p in os.listdir(".") if p.startswith(".onnxop-")] == []

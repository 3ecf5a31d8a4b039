""".onnx models as read-only tensor files (their initializers, -m NAME), and
stdin in any format, recognised by content. Compared with numpy_helper's
reading of the same protos, as people read them today."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from test_pipes import FakeStdin

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]


def save_model(path: Path, arrays: dict[str, np.ndarray], *, external: bool = False) -> None:
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])], inits)
    model = helper.make_model(graph)
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, str(path))


@pytest.fixture
def arrays(rng):
    return {"fc.weight": random_array(rng, (4, 3, 2), "float32"), "fc.bias": random_array(rng, (3,), "int64")}


@pytest.mark.parametrize("external", [False, True])
def test_show_lists_every_initializer(cwd, capsys, arrays, external):
    save_model(cwd / "m.onnx", arrays, external=external)
    code, out, err = cli(capsys, "show", "m.onnx", "--json")
    assert code == 0, err
    tensors = __import__("json").loads(out)["files"][0]["tensors"]
    assert [(t["name"], t["shape"], t["dtype"]) for t in tensors] == [
        ("fc.weight", [4, 3, 2], "float32"), ("fc.bias", [3], "int64")]
    assert tensors[1]["stats"]["min"] == int(arrays["fc.bias"].min())
    code, out, _ = cli(capsys, "show", "m.onnx")
    assert code == 0 and out.startswith("m.onnx:\n  fc.weight: shape=(4, 3, 2), dtype=float32")
    assert "\n  fc.bias: shape=(3,), dtype=int64  (min=" in out


@pytest.mark.parametrize("external", [False, True])
def test_member_selects_an_initializer_as_the_input(backend, cwd, capsys, arrays, external):
    save_model(cwd / "m.onnx", arrays, external=external)
    code, _, err = cli(capsys, "flatten", "m.onnx", "-m", "fc.weight", "--axis", "2", "-o", "w.pb", "-b", backend)
    assert code == 0, err
    got = onnx.load_tensor(str(cwd / "w.pb"))
    want = arrays["fc.weight"].reshape(12, 2)
    assert got.name == "fc.weight" and numpy_helper.to_array(got).tobytes() == want.tobytes()


def test_every_initializer_into_an_npz(backend, cwd, capsys, arrays):
    save_model(cwd / "m.onnx", arrays)
    code, out, err = cli(capsys, "unsqueeze", "m.onnx", "--axes", "0", "-o", "u.npz", "-b", backend)
    assert code == 0, err
    with np.load(cwd / "u.npz") as z:
        assert sorted(z.files) == ["fc.bias", "fc.weight"]
        assert z["fc.weight"].tobytes() == arrays["fc.weight"].tobytes() and z["fc.weight"].shape == (1, 4, 3, 2)


@pytest.mark.parametrize("argv,message", [
    (["flatten", "m.onnx", "-o", "w.npy"],
     "m.onnx holds 2 arrays: 'fc.weight', 'fc.bias'; choose one with --member NAME (or write a .npz to apply the operator to each)"),
    (["flatten", "m.onnx", "-m", "nope"], "m.onnx: no initializer 'nope'; the model holds 2 initializers: 'fc.weight', 'fc.bias'"),
    (["flatten", "m.npy", "-o", "out.onnx"],
     "out.onnx: onnxop reads .onnx models (their initializers) but does not write them; write .npy, .npz, .pb"),
    (["show", "bad.onnx"], "bad.onnx: not an ONNX model"),
])
def test_refusals_are_one_line(cwd, capsys, arrays, argv, message):
    save_model(cwd / "m.onnx", arrays)
    np.save(cwd / "m.npy", arrays["fc.bias"])
    (cwd / "bad.onnx").write_bytes(b"\xff\xff\xff\xff not a model")
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE
    assert error_of(err).startswith(message)
    assert not (cwd / "out.onnx").exists() and not (cwd / "w.npy").exists()


def test_external_data_outside_the_models_folder_is_refused(cwd, capsys, arrays):
    (cwd / "inner").mkdir()
    save_model(cwd / "inner" / "m.onnx", arrays, external=True)
    model = onnx.load(str(cwd / "inner" / "m.onnx"), load_external_data=False)
    for init in model.graph.initializer:
        for entry in init.external_data:
            if entry.key == "location":
                entry.value = "../weights.bin"
    (cwd / "weights.bin").write_bytes((cwd / "inner" / "weights.bin").read_bytes())
    onnx.save_model(model, str(cwd / "inner" / "m.onnx"))
    code, _, err = cli(capsys, "show", "inner/m.onnx")
    assert code == ExitCode.USAGE
    # the folder is the model's (it said 'the .pb's folder', a file there is none of)
    assert error_of(err) == ("inner/m.onnx[fc.weight]: external data location '../weights.bin' must name a file "
                             "inside the file's folder (inner)")


# ----------------------------------------------------------------- stdin, any format


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_stdin_npz_and_pb_are_recognised(backend, cwd, capsys, monkeypatch, rng):
    a, b = random_array(rng, (2, 3, 4), "float16"), random_array(rng, (5,), "uint8")
    monkeypatch.setattr(sys, "stdin", FakeStdin(npz_bytes(a=a, b=b)))
    code, _, err = cli(capsys, "flatten", "-", "-m", "a", "-o", "f.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "f.npy").tobytes() == a.tobytes() and np.load(cwd / "f.npy").shape == (2, 12)

    monkeypatch.setattr(sys, "stdin", FakeStdin(numpy_helper.from_array(a, "p").SerializeToString()))
    code, _, err = cli(capsys, "unsqueeze", "-", "--axes", "0", "-o", "u.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "u.npy").tobytes() == a.tobytes() and np.load(cwd / "u.npy").shape == (1, 2, 3, 4)

    monkeypatch.setattr(sys, "stdin", FakeStdin(npz_bytes(a=a, b=b)))
    code, out, _ = cli(capsys, "show", "-", "--json")
    assert code == 0
    assert [t["name"] for t in __import__("json").loads(out)["files"][0]["tensors"]] == ["a", "b"]


@pytest.mark.parametrize("data,message", [
    (b"hello, not a tensor", "-: stdin is not a .npy, .npz or .pb (ONNX TensorProto) stream"),
    (b"PK\x03\x04 a broken zip", "-: not an .npz file"),
    (b"\x93NUM", "-: not a .npy file"),
])
def test_unrecognised_stdin_is_refused_in_one_line(cwd, capsys, monkeypatch, data, message):
    monkeypatch.setattr(sys, "stdin", FakeStdin(data))
    code, out, err = cli(capsys, "show", "-")
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err).startswith(message)
    assert "onnxop-stdin" not in err  # the temporary file is never named


def test_stdin_npz_from_a_real_pipe_leaves_no_temporary_file(cwd, rng, tmp_path):
    a = random_array(rng, (3, 3), "int32")
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    done = subprocess.run([sys.executable, "-m", "onnxop_cli", "show", "-", "--json"], input=npz_bytes(w=a),
                          capture_output=True, timeout=120, env={**__import__("os").environ, "TMPDIR": str(env_tmp)})
    assert done.returncode == 0, done.stderr
    assert b'"name": "w"' in done.stdout
    assert list(env_tmp.iterdir()) == []

"""Issue 24's frictions, from the CLI: --format for pipes and folders,
--keep-going, -o all.npz, global options on both sides of the command,
empty lists, show's filters, --any-type, the messages that named the wrong
thing, and show --graph. CLI and format tests: one backend (not fanned out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import cli, error_of, random_array

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def save_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def read_pb(path):
    proto = onnx.TensorProto()
    proto.ParseFromString(path.read_bytes())
    return proto


# ------------------------------------------------------------ 2. --format


TYPED = [
    ("bfloat16", ml_dtypes.bfloat16),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
    ("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
    ("int4", ml_dtypes.int4),
    ("uint2", ml_dtypes.uint2),
]


@pytest.mark.parametrize("name,np_type", TYPED + [("string", object)])
def test_a_pb_pipe_carries_every_type(tmp_path, rng, name, np_type):
    if np_type is object:
        x = np.array([[b"a", b"bb", b"\xff"], [b"", b"e", b"ff"]], dtype=object)
    elif "int" in name:  # 2- and 4-bit codes, every one possible
        x = rng.integers(0, 4, (2, 3)).astype(np_type)
    else:  # random bit patterns: NaNs, subnormals and signed zeros included
        x = random_array(rng, (2, 3), f"u{np.dtype(np_type).itemsize}").view(np_type)
    save_pb(tmp_path / "x.pb", x, "x")
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
    first = subprocess.run([*ONNXOP, "transpose", "-", "-o", "-", "--format", "pb"],
                           input=(tmp_path / "x.pb").read_bytes(), capture_output=True, env=env)
    assert first.returncode == 0, first.stderr
    got = onnx.TensorProto()
    got.ParseFromString(first.stdout)
    expect = numpy_helper.from_array(np.ascontiguousarray(x.T), "transposed")
    assert list(got.dims) == [3, 2] and got.data_type == expect.data_type
    if np_type is object:
        assert list(got.string_data) == list(expect.string_data)
    else:
        assert got.raw_data == expect.raw_data  # byte for byte, as onnx packs it
    shown = subprocess.run([*ONNXOP, "show", "-"], input=first.stdout, capture_output=True, env=env)
    assert shown.returncode == 0 and b"shape=(3, 2)" in shown.stdout, shown.stderr


def test_format_npz_on_stdout_keeps_every_member(tmp_path, rng):
    a, b = random_array(rng, (2, 3), "float32"), random_array(rng, (4,), "int16")
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    done = subprocess.run([*ONNXOP, "transpose", "ab.npz", "-o", "-", "--format", "npz"], cwd=tmp_path,
                          capture_output=True, env={**os.environ, "ONNXOP_BACKEND": "vulkan"})
    assert done.returncode == 0, done.stderr
    (tmp_path / "out.npz").write_bytes(done.stdout)
    got = np.load(tmp_path / "out.npz")
    assert sorted(got) == ["a", "b"]
    assert got["a"].tobytes() == np.ascontiguousarray(a.T).tobytes() and got["b"].tobytes() == b.tobytes()


def test_format_writes_a_folder_in_another_format(cwd, capsys, rng):
    a = random_array(rng, (2, 3), "float32")
    np.save("a.npy", a)
    os.mkdir("out")
    code, _, err = cli(capsys, "transpose", "a.npy", "-o", "out", "--format", "pb")
    assert code == 0, err
    proto = read_pb(cwd / "out" / "a.pb")
    assert numpy_helper.to_array(proto).tobytes() == np.ascontiguousarray(a.T).tobytes()
    assert not (cwd / "out" / "a.npy").exists()


@pytest.mark.parametrize("args,message", [
    (["-o", "x.npy", "--format", "pb"], "--format pb and -o x.npy disagree; the file's suffix says its format, drop --format"),
    (["--format", "pb"], "--format pb says how -o writes; give -o - or -o FOLDER"),
    (["-o", "-", "--format", "onnx"], "--format must be one of npy, npz, pb, got 'onnx'"),
])
def test_format_refusals(cwd, capsys, args, message):
    np.save("a.npy", np.ones((2, 2), np.float32))
    code, _, err = cli(capsys, "transpose", "a.npy", *args)
    assert code == 2 and error_of(err) == message


def test_npy_stdout_names_the_way_out_for_packed_types(cwd, capsys):
    save_pb(cwd / "q.pb", np.array([1, 2, 3], dtype=ml_dtypes.int4), "q")
    from onnxop_cli.io import stdio

    stdio.check_stdout = lambda isatty=None: None  # (a pytest capture is no terminal, but says it may be)
    code, _, err = cli(capsys, "transpose", "q.pb", "-o", "-")
    assert code == 2 and error_of(err).endswith("cannot describe int4 (numpy has no such dtype); add --format pb")


# ------------------------------------------------------------ 3. --keep-going, -o all.npz


def f8_pb(path):
    save_pb(path, np.array([1.0, 2.0], dtype=ml_dtypes.float8_e4m3fn), "f8")


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
    from onnxop_cli import core

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


# ------------------------------------------------------------ 6. global options on both sides


@pytest.mark.parametrize("command", [["transpose", "a.npy", "-o", "k.npy"], ["show", "a.npy"],
                                     ["compare", "a.npy", "a.npy"], ["info"]])
def test_every_global_option_works_after_the_command(cwd, capsys, command):
    np.save("a.npy", np.ones((2, 2), np.float32))
    for option in (["--kernel", "storage"], ["--backend", "vulkan"], ["--engine", "wgpu"], ["-q"], ["--debug"]):
        code, _, err = cli(capsys, *command, *option)
        assert code == 0, (option, err)
        code, _, err = cli(capsys, *option, *command)
        assert code == 0, (option, err)
    code, out, _ = cli(capsys, *command, "--json")
    assert code == 0 and json.loads(out)["status"] == "ok"


def test_kernel_after_the_command_is_the_kernel_that_runs(cwd, capsys):
    np.save("a.npy", np.arange(8, dtype=np.float32))
    code, out, _ = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--kernel", "storage", "--json")
    assert code == 0 and json.loads(out)["kernel"] == {"name": "storage", "reason": "forced"}


def test_a_global_option_given_twice_must_agree(cwd, capsys):
    np.save("a.npy", np.ones(2, np.float32))
    code, _, err = cli(capsys, "--kernel", "storage", "transpose", "a.npy", "--kernel", "storage64")
    assert code == 2 and error_of(err) == "--kernel given twice, as storage and storage64; give it once"
    code, _, err = cli(capsys, "--backend", "vulkan", "show", "a.npy", "--backend", "gl")
    assert code == 2 and error_of(err) == "--backend given twice, as vulkan and gl; give it once"


def test_global_options_have_one_definition():
    from onnxop_cli import cli as cli_module
    from onnxop_cli.cli import GLOBALS, app

    for info in app.registered_commands:
        import inspect

        params = inspect.signature(info.callback).parameters
        for name, (annotation, _) in GLOBALS.items():
            assert params[name].annotation is annotation, (info.name, name)  # the one definition, not a copy
    assert cli_module.KernelOpt is GLOBALS["kernel"][0]


# ------------------------------------------------------------ 8. empty lists


def reference(op_type, x, *, inputs=(), **attrs):
    """onnx's reference evaluator on one node: x, then int64 inputs."""
    from onnx.reference import ReferenceEvaluator

    names = ["x"] + [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"x": x} | {f"i{k}": np.array(v, np.int64) for k, v in enumerate(inputs)}
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("command,shape,expect", [
    (["tile", "--repeats", ""], (), lambda x: reference("Tile", x, inputs=([],))),
    # (the reference's Expand multiplies by ones, which quiets a signalling NaN: numpy broadcasts bits)
    (["expand", "--shape", ""], (2, 3), lambda x: np.broadcast_to(x, np.broadcast_shapes(x.shape, ()))),
    (["expand", "--shape", ""], (), lambda x: np.broadcast_to(x, np.broadcast_shapes(x.shape, ()))),
    (["transpose", "--perm", ""], (), lambda x: np.transpose(x, ())),
    (["slice", "--starts", "", "--ends", ""], (2, 3), lambda x: reference("Slice", x, inputs=([], []))),
    (["slice", "--starts", "", "--ends", "", "--axes", "", "--steps", ""], (4,),
     lambda x: reference("Slice", x, inputs=([], [], [], []))),
    (["reshape", "--shape", ""], (1, 1), lambda x: reference("Reshape", x, inputs=([],))),
])
def test_an_empty_list_is_taken_where_the_spec_takes_it(cwd, capsys, rng, command, shape, expect):
    x = random_array(rng, shape, "float32") if shape else np.array(rng.standard_normal(), np.float32)
    np.save("x.npy", x)
    code, _, err = cli(capsys, command[0], "x.npy", *command[1:], "-o", "y.npy")
    assert code == 0, err
    want = expect(x)
    got = np.load("y.npy")
    assert got.shape == want.shape and got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_the_api_and_the_cli_agree_on_empty_lists(cwd, capsys):
    from onnxop_cli import api

    np.save("s.npy", np.array(2.5, np.float32))
    code, _, _ = cli(capsys, "tile", "s.npy", "--repeats", "", "-o", "t.npy")
    assert code == 0 and np.load("t.npy").tobytes() == np.asarray(api.tile(np.array(2.5, np.float32), [])).tobytes()


@pytest.mark.parametrize("command,message", [
    (["tile", "v.npy", "--repeats", ""], "v.npy: Tile: repeats [] has 0 values for an input of rank 2; it needs one per axis"),
    (["transpose", "v.npy", "--perm", ""], "v.npy: Transpose: perm [] is not a permutation of 0..1 for an input of rank 2"),
    (["slice", "v.npy", "--starts", "", "--ends", "1"],
     "v.npy: Slice: starts has 0, ends has 1, axes has 0, steps has 0 values; they must have as many"),
    (["unsqueeze", "v.npy", "--axes", ""], "Unsqueeze: axes must not be empty (example: --axes 0,2)"),
])
def test_an_empty_list_the_rules_refuse_is_refused_by_them(cwd, capsys, command, message):
    np.save("v.npy", np.ones((2, 3), np.float32))
    code, _, err = cli(capsys, *command)
    assert code == 2 and error_of(err) == message

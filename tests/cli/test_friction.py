"""Frictions, from the CLI: --format for pipes and folders,
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

from commands import run_commands
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


def test_a_pb_pipe_carries_every_type(tmp_path, rng):
    """Each type of TYPED and strings (6 cases): a .pb on stdin through transpose to a .pb on
    stdout, then that stream into show: the 12 commands in two processes, stdin a real pipe
    (tests/commands.py)."""
    cases = TYPED + [("string", object)]
    inputs = []
    for name, np_type in cases:
        if np_type is object:
            x = np.array([[b"a", b"bb", b"\xff"], [b"", b"e", b"ff"]], dtype=object)
        elif "int" in name:  # 2- and 4-bit codes, every one possible
            x = rng.integers(0, 4, (2, 3)).astype(np_type)
        else:  # random bit patterns: NaNs, subnormals and signed zeros included
            x = random_array(rng, (2, 3), f"u{np.dtype(np_type).itemsize}").view(np_type)
        inputs.append(x)
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
    firsts = run_commands([(tmp_path, ["transpose", "-", "-o", "-", "--format", "pb"],
                            numpy_helper.from_array(x, "x").SerializeToString()) for x in inputs], text=False, env=env)
    shown = run_commands([(tmp_path, ["show", "-"], first.stdout) for first in firsts], text=False, env=env)
    for (name, np_type), x, first, show in zip(cases, inputs, firsts, shown, strict=True):
        assert first.returncode == 0, (name, first.stderr)
        got = onnx.TensorProto()
        got.ParseFromString(first.stdout)
        expect = numpy_helper.from_array(np.ascontiguousarray(x.T), "transposed")
        assert list(got.dims) == [3, 2] and got.data_type == expect.data_type, name
        if np_type is object:
            assert list(got.string_data) == list(expect.string_data)
        else:
            assert got.raw_data == expect.raw_data, name  # byte for byte, as onnx packs it
        assert show.returncode == 0 and b"shape=(3, 2)" in show.stdout, (name, show.stderr)


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


def test_npy_stdout_names_the_way_out_for_packed_types(cwd, capsys, monkeypatch):
    save_pb(cwd / "q.pb", np.array([1, 2, 3], dtype=ml_dtypes.int4), "q")
    from onnxop_cli.io import stdio

    monkeypatch.setattr(stdio, "check_stdout", lambda isatty=None: None)  # (pytest's capture may say it is a terminal)
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
    from onnxop_cli.cli import app as cli_module
    from onnxop_cli.cli.app import GLOBALS, app

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


# ------------------------------------------------------------ 4. show -m, --brief, --precision, --edgeitems


@pytest.fixture
def layers(cwd):
    rng = np.random.default_rng(7)
    arrays = {f"layer{i}.weight": rng.standard_normal((4, 5)).astype(np.float32) for i in range(3)}
    arrays["step"] = np.arange(3, dtype=np.int64)
    np.savez("m.npz", **arrays)
    return arrays


def test_show_member_globs_pick_tensors(layers, capsys):
    code, out, _ = cli(capsys, "show", "m.npz", "-m", "layer[02]*", "-m", "step")
    assert code == 0
    names = [line.split(":")[0].strip() for line in out.splitlines() if "shape=" in line]
    assert names == ["layer0.weight", "layer2.weight", "step"]
    code, _, err = cli(capsys, "show", "m.npz", "-m", "conv*")
    assert code == 2 and error_of(err) == "-m conv*: no tensor of m.npz has such a name"


def test_show_brief_is_one_line_per_tensor(layers, capsys):
    code, out, _ = cli(capsys, "show", "m.npz", "--brief")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "m.npz:" and lines[1].split() == ["name", "shape", "dtype", "min", "max", "mean"]
    import re

    rows = {line.split()[0]: re.split(r"  +", line.strip()) for line in lines[2:]}
    w = layers["layer1.weight"]
    assert rows["layer1.weight"][3:5] == [str(w.min()), str(w.max())]  # the values, as numpy prints float32
    assert float(rows["layer1.weight"][5]) == pytest.approx(float(w.astype(np.float64).mean()), rel=1e-5)
    assert rows["step"][1:] == ["(3,)", "int64", "0", "2", "1.0"]
    assert len(lines) == 2 + len(layers)


def test_show_precision_and_edgeitems_as_numpy_prints(cwd, capsys):
    x = np.linspace(0, 1, 200, dtype=np.float32).reshape(20, 10)
    np.save("x.npy", x)
    code, out, _ = cli(capsys, "show", "x.npy", "--precision", "2", "--edgeitems", "1")
    body = "\n".join(line[4:] for line in out.splitlines()[2:])
    expect = np.array2string(x, separator=", ", threshold=100, edgeitems=1, precision=2, floatmode="maxprec")
    assert code == 0 and body == expect


@pytest.mark.parametrize("args,message", [
    (["--precision", "2", "--full"], "--precision shapes the summary, and --full prints every value as numpy's "
                                     "defaults do; drop one"),
    (["--edgeitems", "-1"], "--edgeitems must be >= 0, got -1"),
    (["--brief", "--hist"], "--brief prints one line per tensor; drop --hist"),
    (["--graph"], "x.npy: --graph shows an ONNX model's graph; give an .onnx file"),
])
def test_show_option_refusals(cwd, capsys, args, message):
    np.save("x.npy", np.ones(3, np.float32))
    code, _, err = cli(capsys, "show", "x.npy", *args)
    assert code == 2 and error_of(err) == message


# ------------------------------------------------------------ 5. statistics as the values print


@pytest.mark.parametrize("dtype,value,text", [
    ("float8_e4m3fn", 448.0, "448.0"),
    ("float16", 65504.0, "65504.0"),
    ("bfloat16", float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), "3.38953e+38"),
    ("float32", 0.1, "0.1"),
])
def test_show_statistics_agree_with_the_values_under_them(cwd, capsys, dtype, value, text):
    from onnxop_cli.core.tensor import dtype_by_name

    x = np.array([value, -value], dtype=dtype_by_name(dtype).numpy)
    save_pb(cwd / "x.pb", x, "x")
    code, out, _ = cli(capsys, "show", "x.pb")
    assert code == 0 and f"min=-{text}, max={text}," in out
    values_line = out.splitlines()[2]
    if dtype != "float16":  # (numpy prints float16's 65504 as 6.55e+04 inside an array; the statistic stays exact)
        assert text.removesuffix(".0") in values_line, values_line


# ------------------------------------------------------------ 7. --any-type


@pytest.mark.parametrize("command", [
    ["slice", "--starts", "1", "--ends", "3", "--axes", "1"],
    ["tile", "--repeats", "2,1"],
    ["expand", "--shape", "2,2,4"],
])
@pytest.mark.parametrize("np_type", [ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint2])
def test_any_type_runs_the_same_index_map(cwd, capsys, rng, command, np_type):
    x = (random_array(rng, (2, 4), "uint8") & 3).view(np_type) if np.dtype(np_type).itemsize == 1 and \
        np_type is not ml_dtypes.float8_e4m3fn else random_array(rng, (2, 4), "uint8").view(np_type)
    if np_type is ml_dtypes.int4:
        x = rng.integers(-8, 8, (2, 4)).astype(np_type)
    save_pb(cwd / "x.pb", x, "x")
    code, _, err = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb")
    assert code == 2 and "no opset allows" in error_of(err)  # the default stays the spec
    code, out, err = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb", "--any-type")
    assert code == 0, err
    assert "(--any-type: " in out and "type list excludes" in out
    # the same index map on the bytes as on a type the list allows (uint8 codes)
    codes = x.view(np.uint8)
    code, _, err = cli(capsys, command[0], "codes.npy", *command[1:], "-o", "want.npy") if np.save("codes.npy", codes) \
        is None else (None, None, None)
    assert code == 0, err
    want = np.load("want.npy").view(np_type)
    got = numpy_helper.to_array(read_pb(cwd / "y.pb"))
    assert got.shape == want.shape and got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes()
    code, out, _ = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb", "--any-type", "--json")
    assert json.loads(out)["any_type"] is True


def test_any_type_is_not_for_models_or_conformance():
    from onnxop_cli.docs import conformance
    from onnxop_cli.ops import model

    for module in (conformance, model):
        assert "any_type" not in open(module.__file__).read()
    from onnxop_cli.cli.app import app

    run = next(c for c in app.registered_commands if c.name == "run")
    import inspect

    assert "any_type" not in inspect.signature(run.callback).parameters


# ------------------------------------------------------------ 9. messages that name what it is


def node_test(cwd, kind):
    """A node-test folder whose model declares input 0 as ``kind`` (an optional or a sequence)."""
    elem = helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [3])
    typ = helper.make_optional_type_proto(elem) if kind == "optional" else helper.make_sequence_type_proto(elem)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_value_info("x", typ)], [helper.make_value_info("y", typ)])
    os.makedirs(cwd / "t" / "test_data_set_0")
    onnx.save(helper.make_model(graph), str(cwd / "t" / "model.onnx"))
    return cwd / "t" / "test_data_set_0" / "input_0.pb"


def test_an_optional_pb_is_named_an_optional(cwd, capsys):
    path = node_test(cwd, "optional")
    path.write_bytes(numpy_helper.from_optional(np.arange(3, dtype=np.float32), name="opt_in").SerializeToString())
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err) == (
        f"{path}: holds an optional 'opt_in' holding a tensor (an ONNX OptionalProto or SequenceProto), "
        "not a tensor; onnxop reads one TensorProto per .pb"
    )
    (cwd / "alone.pb").write_bytes(path.read_bytes())  # no model to ask: both are named
    code, _, err = cli(capsys, "show", "alone.pb")
    assert code == 2 and "holds an optional (or a sequence of at most one) 'opt_in' holding a tensor" in error_of(err)
    assert "111, 112, 116" not in err


def test_a_sequence_pb_is_named_a_sequence(cwd, capsys):
    path = node_test(cwd, "sequence")
    seq = numpy_helper.from_list([np.ones(3, np.float32), np.zeros(3, np.float32)], name="seq_in")
    path.write_bytes(seq.SerializeToString())
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err).startswith(f"{path}: holds a sequence 'seq_in' of 2 tensors")
    assert "segmented" not in err
    one = numpy_helper.from_list([np.ones(3, np.float32)], name="s")
    path.write_bytes(one.SerializeToString())  # one element: the model says it is a sequence
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err).startswith(f"{path}: holds a sequence 's' of 1 tensors")


def test_a_sequence_on_stdin_is_named_too(tmp_path):
    seq = numpy_helper.from_list([np.ones(3, np.float32), np.zeros(3, np.float32)], name="seq_in")
    done = subprocess.run([*ONNXOP, "show", "-"], input=seq.SerializeToString(), capture_output=True, text=False)
    assert done.returncode == 2 and b"-: holds a sequence 'seq_in' of 2 tensors" in done.stderr


def test_a_real_segmented_tensor_keeps_its_message(cwd, capsys):
    proto = onnx.TensorProto(dims=[2], data_type=1, segment=onnx.TensorProto.Segment(begin=0, end=1))
    (cwd / "x.pb").write_bytes(proto.SerializeToString())
    code, _, err = cli(capsys, "show", "x.pb")
    assert code == 2 and error_of(err) == "x.pb: segmented tensors are not supported"


def test_a_folder_is_named_a_folder(cwd, capsys):
    os.mkdir("data")
    code, _, err = cli(capsys, "show", "data")
    assert code == 2 and error_of(err) == "data: is a folder, not a tensor file; give the files in it (example: data/*.pb)"
    np.save("a.npy", np.ones(2, np.float32))
    code, _, err = cli(capsys, "transpose", "a.npy", "-o", "newdir")
    assert code == 2 and error_of(err) == (
        "newdir: a name without a suffix names no format, and no folder has this name; "
        "give a .npy, .npz, .pb file (or, for -o, an existing folder)"
    )


def test_a_model_with_no_initializers_lists_its_inputs_and_outputs(cwd, capsys):
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, "N"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), "m.onnx")
    code, out, _ = cli(capsys, "show", "m.onnx")
    assert code == 0 and out.splitlines() == [
        "m.onnx: opset 21, 1 node, 0 initializers",
        "  inputs:",
        "    x: shape=(2, 'N'), dtype=float32",
        "  outputs:",
        "    y: shape=('N', 2), dtype=float32",
        "  (no initializers: the model's inputs and outputs)",
    ]
    code, _, err = cli(capsys, "transpose", "m.onnx")  # an operator still needs a tensor
    assert code == 2 and error_of(err) == "m.onnx: the model holds no initializers"


# ------------------------------------------------------------ 10. show --graph


def test_show_graph_lists_inputs_outputs_and_nodes(cwd, capsys):
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0], name="first"),
             helper.make_node("Reshape", ["t", "shape"], ["y"]),
             helper.make_node("Cast", ["y"], ["z"], to=onnx.TensorProto.FLOAT16)]
    shape = numpy_helper.from_array(np.array([-1], np.int64), "shape")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT16, [6])], initializer=[w, shape])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), "m.onnx")
    code, out, _ = cli(capsys, "show", "m.onnx", "--graph")
    assert code == 0 and out.splitlines() == [
        "m.onnx: opset 19, 3 nodes, 2 initializers",
        "  inputs:",
        "    x: shape=(3, 2), dtype=float32",
        "  outputs:",
        "    z: shape=(6,), dtype=float16",
        "  nodes:",
        "    0 'first'  Transpose (opset 19)  x -> t  perm=[1, 0]",
        "    1  Reshape (opset 19)  t, shape -> y",
        "    2  Cast (opset 19)  y -> z  to=10",
    ]
    code, out, _ = cli(capsys, "show", "m.onnx", "--graph", "--json")
    graph_doc = json.loads(out)["files"][0]["graph"]
    assert graph_doc["inputs"] == [{"name": "x", "kind": "tensor", "shape": [3, 2], "dtype": "float32"}]
    assert [n["op"] for n in graph_doc["nodes"]] == ["Transpose", "Reshape", "Cast"]
    assert graph_doc["nodes"][0]["attributes"] == {"perm": [1, 0]} and graph_doc["nodes"][0]["opset"] == 19
    code, _, err = cli(capsys, "show", "m.onnx", "--graph", "--brief")
    assert code == 2 and error_of(err) == "--graph prints a model's graph, not its tensors; drop --brief"


# ------------------------------------------------------------ the JSON documents match their schema


def test_the_new_documents_match_the_schemas(cwd, capsys, rng):
    from test_json import document

    np.save("a.npy", random_array(rng, (3, 4), "float32"))
    np.save("b.npy", random_array(rng, (3, 4), "float32"))
    f8_pb(cwd / "f8.pb")
    os.mkdir("out")
    assert document(cli(capsys, "compare", "a.npy", "b.npy", "--json")[1], "compare")["pairs"][0]["first"]
    doc = document(cli(capsys, "slice", "a.npy", "f8.pb", "--starts", "0", "--ends", "1", "-o", "out", "-k",
                       "--json")[1], "slice")
    assert doc["refused"]
    doc = document(cli(capsys, "slice", "f8.pb", "--starts", "0", "--ends", "1", "-o", "out/s.pb", "--any-type",
                       "--json")[1], "slice")
    assert doc["any_type"] is True
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, "N"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), "m.onnx")
    assert document(cli(capsys, "show", "m.onnx", "--graph", "--json")[1], "show")["files"][0]["graph"]
    assert document(cli(capsys, "show", "m.onnx", "--json")[1], "show")["files"][0]["graph"]["inputs"]


def test_a_kernel_typed_after_the_command_beats_the_environment(cwd, capsys, monkeypatch):
    np.save("a.npy", np.arange(8, dtype=np.float32))
    monkeypatch.setenv("ONNXOP_KERNEL", "storage")
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--kernel", "storage64", "--json")
    assert code == 0, err
    assert json.loads(out)["kernel"]["name"] == "storage64"
    code, out, _ = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--json")
    assert json.loads(out)["kernel"]["name"] == "storage"

"""``show``'s options: member globs, --brief, --precision and --edgeitems as
numpy prints, their refusals, statistics that agree with the values under
them, and --graph's inputs, outputs and nodes.
"""

from __future__ import annotations

import json
import re

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import cli, error_of
from pb_files import save_pb


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


def test_edgeitems_that_would_print_a_big_tensor_at_once_is_refused(cwd, capsys, monkeypatch):
    """--edgeitems as large as a big tensor's axes printed it whole through numpy's array2string, which
    builds the text at once (10**7 float32s with --edgeitems 10000000: 4.6 GB and minutes, stopped): past
    SHOWN_LIMIT values it is refused before anything is read, naming --full, which streams them."""
    from onnxop_cli.cli import show as show_command

    monkeypatch.setattr(show_command, "SHOWN_LIMIT", 500)
    np.save("big.npy", np.arange(2000, dtype=np.float32).reshape(4, 500))
    np.save("small.npy", np.arange(60, dtype=np.float32))
    code, out, err = cli(capsys, "show", "small.npy", "big.npy", "--edgeitems", "200")
    assert code == 2 and out == ""
    assert error_of(err) == ("big.npy: --edgeitems 200 would print 1600 values of big at once (at most 500); "
                             "--full prints every value, streamed")
    code, out, err = cli(capsys, "--json", "show", "big.npy", "--edgeitems", "200")
    assert code == 2 and json.loads(out)["status"] == "error"
    for args in (["--edgeitems", "62"], ["--edgeitems", "200", "--brief"]):  # 496 values; one line
        code, out, err = cli(capsys, "show", "big.npy", *args)
        assert code == 0 and err == ""
    code, out, _ = cli(capsys, "show", "small.npy", "--edgeitems", "1000000000")  # 60 values, printed whole
    assert code == 0 and "59.]" in out


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


def test_show_graph_columns_stay_aligned_past_node_9_99_and_a_long_name(cwd, capsys):
    """The index is right-aligned to the widest and the name and operator
    columns padded, so the operator starts in one column on every row (it
    shifted one place at node 10 and again at 100); a name past 40 characters
    overflows its own row only."""
    long = "n" * 50
    nodes = [helper.make_node("Identity" if i % 2 else "Transpose", [f"t{i}"], [f"t{i + 1}"],
                              name=long if i == 7 else f"n{i}") for i in range(101)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("t101", onnx.TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), "m.onnx")
    code, out, _ = cli(capsys, "show", "m.onnx", "--graph")
    rows = out.splitlines()[6:]
    assert code == 0 and len(rows) == 101
    assert rows[9] == "      9 'n9'    Identity (opset 19)   t9 -> t10"
    assert rows[100] == "    100 'n100'  Transpose (opset 19)  t100 -> t101"
    assert rows[7] == f"      7 '{long}'  Identity (opset 19)   t7 -> t8"
    assert {re.search("Identity|Transpose", r).start() for i, r in enumerate(rows) if i != 7} == {16}
    assert {r.index(" t") for i, r in enumerate(rows) if i != 7} == {37}


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
        "    1          Reshape (opset 19)    t, shape -> y",
        "    2          Cast (opset 19)       y -> z  to=10",
    ]
    code, out, _ = cli(capsys, "show", "m.onnx", "--graph", "--json")
    graph_doc = json.loads(out)["files"][0]["graph"]
    assert graph_doc["inputs"] == [{"name": "x", "kind": "tensor", "shape": [3, 2], "dtype": "float32"}]
    assert [n["op"] for n in graph_doc["nodes"]] == ["Transpose", "Reshape", "Cast"]
    assert graph_doc["nodes"][0]["attributes"] == {"perm": [1, 0]} and graph_doc["nodes"][0]["opset"] == 19
    code, _, err = cli(capsys, "show", "m.onnx", "--graph", "--brief")
    assert code == 2 and error_of(err) == "--graph prints a model's graph, not its tensors; drop --brief"

"""A graph's inputs and outputs by their names (run MODEL): outputs written and printed under the
model's names, inputs given by name or as an .npz's members and their refusals, and a graph output
refused where it is not what the model declares."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from graph_models import chain, i64, make, same_bits


@pytest.mark.one_backend  # the command line of run/conformance, not a kernel
def test_run_writes_outputs_by_their_model_names(backend, cwd, capsys, rng):
    x = random_array(rng, (2, 3, 4, 5), "float32")
    np.save("x.npy", x)
    model = chain()
    onnx.save(model, "m.onnx")
    want = dict(zip(["y", "r"], ReferenceEvaluator(model).run(None, {"x": x})))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "out/", "-b", backend)
    assert code == 0, err
    assert out.splitlines()[0] == "graph of 5 nodes: x (2, 3, 4, 5) float32 -> y (1, 2, 6, 5) float32, wrote out/y.npy"
    assert all(same_bits(np.load(f"out/{n}.npy"), want[n]) for n in want)
    code, _, err = cli(capsys, "run", "m.onnx", "--input", "x=x.npy", "-o", "o.npz", "-b", backend)
    with np.load("o.npz") as z:
        assert code == 0 and list(z.keys()) == ["y", "r"] and all(same_bits(z[n], want[n]) for n in want)
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "one.npy", "-b", backend)
    assert code == ExitCode.USAGE and "the graph has 2 outputs (y, r)" in err and not Path("one.npy").exists()
    code, out, _ = cli(capsys, "run", "m.onnx", "x.npy", "--json", "-b", backend)
    doc = json.loads(out)
    assert doc["op"] == "graph" and [o["name"] for o in doc["runs"][0]["outputs"]] == ["y", "r"]
    assert doc["transfers"] == {"uploaded": x.nbytes, "read_back": sum(a.nbytes for a in want.values())}
    code, out, _ = cli(capsys, "run", "m.onnx", "x.npy", "-b", backend)
    assert code == 0 and "Outputs:\n  y: shape=(1, 2, 6, 5), dtype=float32" in out


@pytest.mark.one_backend  # the command line of run/conformance, not a kernel
def test_a_pb_output_is_named_as_the_model_says(backend, cwd, capsys, rng):
    """The issue's case: -o rs.pb wrote a tensor named 'data' where the model says 'reshaped'."""
    from onnxop_cli.io.tensorproto import read_pb

    model = make([helper.make_node("Reshape", ["data", "shape"], ["reshaped"])], [("data", TP.FLOAT, [2, 3])],
                 [("reshaped", TP.FLOAT)], [i64("shape", [3, 2])])
    onnx.save(model, "m.onnx")
    Path("set").mkdir()
    x = random_array(rng, (2, 3), "float32")
    Path("set/input_0.pb").write_bytes(numpy_helper.from_array(x, "data").SerializeToString())
    code, out, err = cli(capsys, "run", "m.onnx", "set", "-o", "rs.pb", "-b", backend)
    assert code == 0, err
    assert out == "Reshape: data (2, 3) float32 -> reshaped (3, 2) float32, wrote rs.pb\n"
    assert read_pb(Path("rs.pb")).name == "reshaped"


def test_inputs_by_name_and_their_refusals(cwd, capsys):
    onnx.save(chain(), "m.onnx")
    np.save("x.npy", np.ones((2, 3, 4, 5), np.float32))
    for args, message in [
        (["--input", "q=x.npy"], "--input 'q': the model has no such input (its inputs: 'x')"),
        (["--input", "x"], "--input takes NAME=FILE, got 'x'"),
        (["--input", "x=x.npy", "x.npy"], "give the inputs either in order or with --input NAME=FILE, not both"),
        ([], "the model has 1 input(s) (x), 0 file(s) were given"),
    ]:
        code, _, err = cli(capsys, "run", "m.onnx", *args, "-o", "o.npz")
        assert code == ExitCode.USAGE and message in error_of(err), err
    np.save("x.npy", np.ones((2, 3, 4, 6), np.float32))
    code, _, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "o.npz")
    assert code == ExitCode.USAGE and "graph input 'x' is declared with dim 3 = 5, the data has shape (2, 3, 4, 6)" in err
    # a graph input an initializer gives a value (IR 4+: a default onnxruntime lets a caller override) is no input
    # onnxop feeds: the refusal says so, where it said the model had no such input, listing it as a graph input
    model = chain()
    model.graph.input.append(helper.make_tensor_value_info("shape", TP.INT64, [3]))
    onnx.save(model, "d.onnx")
    np.save("x.npy", np.ones((2, 3, 4, 5), np.float32))
    for args, message in [
        (["--input", "x=x.npy", "--input", "shape=x.npy"], "--input 'shape': that graph input has an initializer, "
                                                             "which onnxop runs as the model's constant (its inputs: 'x')"),
        (["x.npy", "x.npy"], "the model has 1 input(s) (x), 2 file(s) were given; 'shape', listed as graph input(s), "
                             "have initializers, which onnxop runs as the model's constants"),
    ]:
        code, _, err = cli(capsys, "run", "d.onnx", *args, "-o", "o.npz")
        assert code == ExitCode.USAGE and message in error_of(err), err
    code, _, err = cli(capsys, "run", "d.onnx", "x.npy", "-o", "o.npz")
    assert code == 0, err
    # an input named 'a=b' was --input 'a': no such input; it splits at the '=' after a graph input's name
    eq = helper.make_graph([helper.make_node("Identity", ["a=b"], ["y"])], "g",
                           [helper.make_tensor_value_info("a=b", TP.FLOAT, [2])], [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    onnx.save(helper.make_model(eq, opset_imports=[helper.make_opsetid("", 17)]), "eq.onnx")
    np.save("v=w.npy", np.array([1.5, -0.0], np.float32))
    code, _, err = cli(capsys, "run", "eq.onnx", "--input", "a=b=v=w.npy", "-o", "y.npy")
    assert code == 0 and np.load("y.npy").tobytes() == np.load("v=w.npy").tobytes(), err


def test_an_npz_gives_the_inputs_its_members_name(cwd, capsys, rng):
    """An .npz of named arrays feeds the graph inputs of those names, given alone for every input or by
    --input NAME=X.npz; it was 'the model has 2 input(s) (a, b), 1 file(s) were given' or 'choose one with
    --member NAME' for each. An archive that lacks an input, or holds a member no input takes, is refused."""
    onnx.save(make([helper.make_node("Concat", ["a", "b"], ["y"], axis=0)], [("a", TP.FLOAT, [2]), ("b", TP.FLOAT, [3])],
                   [("y", TP.FLOAT)]), "m.onnx")
    a, b = random_array(rng, (2,), "float32"), random_array(rng, (3,), "float32")
    np.savez("ba.npz", b=b, a=a)  # not in the graph's order
    np.savez("abc.npz", a=a, b=b, c=a)
    np.savez("a.npz", a=a)
    np.save("b.npy", b)
    want = np.concatenate([a, b]).tobytes()
    for args in (["ba.npz"], ["--input", "a=ba.npz", "--input", "b=ba.npz"], ["--input", "a=abc.npz", "--input", "b=b.npy"],
                 ["ba.npz", "ba.npz"], ["a.npz", "b.npy"], ["--input", "a=a.npz", "--input", "b=ba.npz"]):
        code, _, err = cli(capsys, "run", "m.onnx", *args, "-o", "y.npy")
        assert code == 0, (args, err)
        assert np.load("y.npy").tobytes() == want, args
        Path("y.npy").unlink()
    for args, message in [
        (["a.npz"], "a.npz holds 1 array: 'a' and none named 'b': an archive given for every graph input gives "
                    "each the member of its name"),
        (["abc.npz"], "abc.npz: member(s) 'c' name no graph input given this archive ('a', 'b')"),
        (["--input", "a=abc.npz", "--input", "b=ba.npz", "-m", "a"], "graph input 'b' is declared with dim 0 = 3"),
        (["-m", "a", "ba.npz"], "the model has 2 input(s) (a, b), 1 file(s) were given"),
        (["--input", "a=b.npy", "--input", "b=abc.npz"], "graph input 'a' is declared with dim 0 = 2"),
    ]:
        code, _, err = cli(capsys, "run", "m.onnx", *args, "-o", "y.npy")
        assert code == ExitCode.USAGE and message in error_of(err), (args, err)
        assert not Path("y.npy").exists()
    np.save("x.npy", a)  # a file of one tensor given for two inputs gives it to both
    code, _, err = cli(capsys, "run", "m.onnx", "x.npy", "x.npy", "-o", "y.npy")
    assert code == ExitCode.USAGE and "graph input 'b' is declared with dim 0 = 3, the data has shape (2,)" in err
    onnx.save(make([helper.make_node("Concat", ["a", "b"], ["y"], axis=0)], [("a", TP.FLOAT, [2]), ("b", TP.FLOAT, [2])],
                   [("y", TP.FLOAT)]), "m2.onnx")
    code, _, err = cli(capsys, "run", "m2.onnx", "x.npy", "x.npy", "-o", "y.npy")
    assert code == 0 and np.load("y.npy").tobytes() == np.concatenate([a, a]).tobytes(), err
    Path("y.npy").unlink()
    np.savez("xy.npz", x=a, y=b)
    code, _, err = cli(capsys, "run", "m.onnx", "--input", "a=xy.npz", "--input", "b=b.npy", "-o", "y.npy")
    assert code == ExitCode.USAGE and error_of(err) == (
        "xy.npz holds 2 arrays: 'x', 'y' and none named 'a': an archive given for a graph input gives it the "
        "member of its name (or choose one with --member NAME)"), err
    # a one-input model's one .npz likewise: a member no input takes is refused (it was ignored), one of
    # the input's name or --member's is taken, and a file of one tensor gives it whatever its name
    onnx.save(make([helper.make_node("Identity", ["a"], ["y"])], [("a", TP.FLOAT, [2])], [("y", TP.FLOAT)]), "one.onnx")
    for args, message in [(["abc.npz"], "abc.npz: member(s) 'b', 'c' name no graph input given this archive ('a'); "
                                        "choose the input's with --member NAME"),
                          (["xy.npz"], "xy.npz holds 2 arrays: 'x', 'y' and none named 'a': an archive given for every "
                                       "graph input gives each the member of its name (or choose one with --member NAME)")]:
        code, _, err = cli(capsys, "run", "one.onnx", *args, "-o", "y.npy")
        assert code == ExitCode.USAGE and error_of(err) == message and not Path("y.npy").exists(), (args, err)
    for args, want1 in [(["abc.npz", "-m", "a"], a), (["a.npz"], a), (["xy.npz", "-m", "x"], a), (["x.npy"], a),
                        (["--input", "a=abc.npz"], a)]:
        code, _, err = cli(capsys, "run", "one.onnx", *args, "-o", "y.npy")
        assert code == 0 and np.load("y.npy").tobytes() == want1.tobytes(), (args, err)
        Path("y.npy").unlink()
    # a test_data_set folder gives its input_N.pb files in order, whatever the tensors' names (one of the
    # folder's files was taken for the one archive of every input: 'input_0.pb holds 1 arrays ... none named')
    Path("set").mkdir()
    for k, x in enumerate((a, b)):
        onnx.save_tensor(numpy_helper.from_array(x, f"input_{k}"), f"set/input_{k}.pb")
    code, _, err = cli(capsys, "run", "m.onnx", "set", "-o", "y.npy")
    assert code == 0 and np.load("y.npy").tobytes() == want, err


def test_a_printed_node_names_the_model_s_output(backend, cwd, capsys, rng):
    """The issue's case: test_depthtospace_example printed '-> (output)' where the model says 'y'."""
    model = make([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)], [("x", TP.FLOAT, [1, 4, 2, 3])],
                 [("y", TP.FLOAT)], opset=13)
    onnx.save(model, "m.onnx")
    np.save("x.npy", random_array(rng, (1, 4, 2, 3), "float32"))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-b", backend)
    assert code == 0, err
    assert out.startswith("Node:\n  DepthToSpace(x) -> (y)\n") and "\n  y: shape=(1, 1, 4, 6), dtype=float32" in out


@pytest.mark.parametrize("others", [[], ["--others", "onnxruntime", "--verify"]])
def test_a_graph_output_is_refused_when_it_is_not_what_the_output_declares(others, cwd, capsys):
    """The type, the rank and the fixed dims a graph output declares are checked against what the graph made,
    before any output is written: onnxruntime refuses a declared type that differs when it loads the model
    (and warns about a shape and goes on), onnx.reference returns what it made; onnxop wrote it without a word.
    A dim that is a symbol, -1 (paddle2onnx's any) or absent, and an output of no shape, take any."""
    np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Identity", ["t"], ["y"])]
    if others:  # the last node on onnxruntime: the outputs come from another runtime
        nodes[1] = helper.make_node("Relu", ["t"], ["y"])
    for dtype, shape, message in [
        (TP.INT64, [3, 2], "graph output 'y' is declared int64, the graph made (3, 2) float32"),
        (TP.FLOAT, [2, 3], "graph output 'y' is declared with dim 0 = 2, the graph made (3, 2) float32"),
        (TP.FLOAT, [6], "graph output 'y' is declared rank 1, the graph made (3, 2) float32"),
        (TP.FLOAT, [], "graph output 'y' is declared rank 0, the graph made (3, 2) float32"),
        (TP.FLOAT, ["n", 2], None), (TP.FLOAT, [-1, 2], None), (TP.FLOAT, None, None), (TP.FLOAT, [3, 2], None),
    ]:
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", dtype, shape)])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
        for out in (["-o", "y.npy"], []):
            code, _, err = cli(capsys, "run", "m.onnx", "x.npy", *others, *out)
            if message is None:
                assert code == 0, (shape, err)
            else:
                assert code == ExitCode.USAGE and error_of(err) == f"m.onnx: {message}", (shape, err)
                assert not Path("y.npy").exists()
        Path("y.npy").unlink(missing_ok=True)
    np.save("x.npy", np.zeros((2, 4), np.float32))  # an input not as declared: named alike on both paths
    code, _, err = cli(capsys, "run", "m.onnx", "x.npy", *others, "-o", "y.npy")
    assert code == ExitCode.USAGE and error_of(err) == "m.onnx: graph input 'x' is declared with dim 1 = 3, the data has " \
                                                      "shape (2, 4)", err

"""Multi-node graphs (graph.py, run MODEL): exact against onnx's reference
evaluator and onnxruntime on random data, view chains composed, steps on the
device, hostile models refused in one line, inputs and outputs by name."""

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
from onnxop_cli.core import graph
from onnxop_cli.core.graph_values import element_index
from onnxop_cli.errors import ExitCode, UsageError
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.core.region import Access
from onnxop_cli.ops.model import load_graph


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def make(nodes, inputs, outputs, inits=(), opset=21):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def chain(dtype=TP.FLOAT, shape=(2, 3, 4, 5)):
    """Transpose -> Reshape (merging transposed axes: a step) -> Slice -> Unsqueeze (Constant axes),
    and the Reshape's result as a second output."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3], name="tr"),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
        helper.make_node("Constant", [], ["ua"], value_ints=[0]),
        helper.make_node("Unsqueeze", ["s", "ua"], ["y"]),
    ]
    inits = [i64("shape", [shape[0], shape[1] * shape[2], shape[3]]), i64("st", [-1]), i64("en", [0]),
             i64("ax", [1]), i64("sp", [-2])]
    return make(nodes, [("x", dtype, list(shape))], [("y", dtype), ("r", dtype)], inits)


def run(model, feeds, backend=None):
    g = load_graph(model, Path("."))
    p = graph.plan(g, {k: Tensor.from_numpy(v, k) for k, v in feeds.items()})
    results, traffic = graph.run_to_memory(p, backend=backend)
    return p, [t.to_numpy() for t in results], traffic


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int64", "bool", "complex128"])
def test_a_chain_equals_the_reference_and_onnxruntime(backend, rng, dtype):
    import onnxruntime as ort

    x = random_array(rng, (2, 3, 4, 5), dtype)
    model = chain(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    p, got, traffic = run(model, {"x": x}, backend)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    assert all(same_bits(a, b) for a, b in zip(got, want))
    if dtype != "complex128":  # onnxruntime has no complex Transpose kernel
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        assert all(same_bits(a, b) for a, b in zip(got, sess.run(None, {"x": x})))
    # one step (the merged transposed axes), the input uploaded once, only the outputs read back
    assert len(p.steps) == 1
    assert traffic.uploaded == x.nbytes and traffic.read_back == sum(a.nbytes for a in got)


def test_a_view_chain_is_one_view_with_no_step(backend, rng):
    """Transpose -> Slice -> Expand (broadcast) -> Squeeze -> Reshape: one map over the input."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["a"], perm=[2, 0, 1]),
        helper.make_node("Slice", ["a", "st", "en", "ax"], ["b"]),
        helper.make_node("Expand", ["b", "es"], ["c"]),
        helper.make_node("Squeeze", ["c", "sq"], ["d"]),
        helper.make_node("Reshape", ["d", "rs"], ["y"]),
    ]
    inits = [i64("st", [1]), i64("en", [3]), i64("ax", [0]), i64("es", [2, 1, 1, 1, 1]), i64("sq", [1]),
             i64("rs", [1, 2, 2, 3])]
    model = make(nodes, [("x", TP.FLOAT, [3, 1, 5])], [("y", TP.FLOAT)], inits)
    x = random_array(rng, (3, 1, 5), "float32")
    p, got, traffic = run(model, {"x": x}, backend)
    assert p.steps == [] and not isinstance(p.outputs[0].base, graph.Step)
    # The reference moves bytes, as the ops do: onnx.reference computes Expand
    # as ``data * ones``, which quiets a signalling NaN (random_array always
    # holds one), so its bits are not the operator's.
    want = np.broadcast_to(x.transpose(2, 0, 1)[1:3], (2, 1, 2, 3, 1)).squeeze(1).reshape(1, 2, 2, 3)
    assert same_bits(got[0], want)
    assert traffic.read_back == got[0].nbytes


def test_steps_are_released_after_their_last_reader(backend, rng, monkeypatch):
    from onnxop_cli.gpu import resident

    live = []
    made = resident.DeviceBuffer.__init__
    freed = resident.DeviceBuffer.release

    def init(self, *a, **kw):
        made(self, *a, **kw)
        live.append(self)

    def release(self):
        if self.buffer is not None:
            live.remove(self)
        freed(self)

    monkeypatch.setattr(resident.DeviceBuffer, "__init__", init)
    monkeypatch.setattr(resident.DeviceBuffer, "release", release)
    x = random_array(rng, (2, 3, 4, 5), "float32")
    run(chain(), {"x": x}, backend)
    assert live == []


def test_packed_types_and_strings_through_a_chain(backend, rng):
    import ml_dtypes

    x = rng.integers(-8, 8, (2, 3, 3, 5)).astype(ml_dtypes.int4)  # an odd count per row
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "ua"], ["y"])]
    model = make(nodes, [("x", TP.INT4, [2, 3, 3, 5])], [("y", TP.INT4), ("r", TP.INT4)],
                 [i64("shape", [2, 9, 5]), i64("ua", [0])], opset=25)
    _, got, _ = run(model, {"x": x}, backend)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    assert all(same_bits(a, b) for a, b in zip(got, want))
    s = np.array([f"s{i}" for i in range(120)], dtype=object).reshape(2, 3, 4, 5)
    _, got, _ = run(chain(TP.STRING), {"x": s}, backend)
    want = ReferenceEvaluator(chain(TP.STRING)).run(None, {"x": s})
    assert [a.tolist() for a in got] == [b.tolist() for b in want]


def test_a_reshape_that_needs_a_copy_is_told_apart():
    assert Access((3, 2), (1, 3)).reshaped((6,)) is None
    assert Access((2, 3), (3, 1), 4).reshaped((3, 2)) == Access((3, 2), (2, 1), 4)
    assert Access((2, 1, 3), (0, 7, 1)).reshaped((2, 3, 1)) == Access((2, 3, 1), (0, 1, 1))


def test_reshape_matches_numpy_on_random_strided_views():
    rng = np.random.default_rng(7)
    for _ in range(500):
        r = int(rng.integers(1, 5))
        base = np.arange(int(np.prod(shape := tuple(int(d) for d in rng.integers(1, 4, r))))).reshape(shape)
        a = base.transpose(rng.permutation(r))[..., ::-1]
        off = (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
        v = Access(a.shape, tuple(s // 8 for s in a.strides), off)
        target = tuple(int(d) for d in rng.permutation([a.size, 1]))
        got = v.reshaped(target)
        try:
            b = a.view()
            b.shape = target
        except AttributeError:
            assert got is None
            continue
        assert got is not None
        assert np.array_equal(base.reshape(-1)[element_index(got)], a.reshape(-1))


# ------------------------------------------------------------------ hostile models


def bad_attribute(**kw):
    node = helper.make_node("Flatten", ["x"], ["y"], name="f")
    node.attribute.extend(kw["attrs"])
    return make([node], [("x", TP.FLOAT, [2, 3])], [("y", TP.FLOAT)])


def attr(name, value, **kw):
    return helper.make_attribute(name, value, **kw)


@pytest.mark.parametrize("model,message", [
    (bad_attribute(attrs=[attr("axis", 1.5)]), "node 0 'f' (Flatten-21): attribute 'axis' must be INT (an integer), the model gives FLOAT"),
    (bad_attribute(attrs=[attr("axis", "1")]), "attribute 'axis' must be INT (an integer), the model gives STRING"),
    (bad_attribute(attrs=[attr("axis", [1])]), "attribute 'axis' must be INT (an integer), the model gives INTS"),
    (bad_attribute(attrs=[attr("axis", numpy_helper.from_array(np.array(1, np.int64)))]),
     "attribute 'axis' must be INT (an integer), the model gives TENSOR"),
    (make([helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0.5])], [("x", TP.FLOAT, [2])], [("y", TP.FLOAT)],
          opset=11), "node 0 (Unsqueeze-11): attribute 'axes' must be INTS (a list of integers), the model gives FLOATS"),
    (make([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode=b"\xff\xfe")], [("x", TP.FLOAT, [2])],
          [("y", TP.FLOAT)], opset=13), "node 0 (DepthToSpace-13): attribute 'mode' is not valid UTF-8"),
    (bad_attribute(attrs=[attr("axis", 1), attr("axis", 0)]), "node 0 'f' (Flatten-21): attribute 'axis' is given twice"),
    (bad_attribute(attrs=[onnx.AttributeProto(name="axis", ref_attr_name="a", type=onnx.AttributeProto.INT)]),
     "attribute 'axis' refers to a function's attribute ('a'), which only a function body may do"),
    (make([helper.make_node("Reshape", ["x"], ["y"])], [("x", TP.FLOAT, [2])], [("y", TP.FLOAT)]),
     "node 0 (Reshape-21) is missing its required input 'shape'"),
    (make([helper.make_node("Identity", ["x"], ["i"]), helper.make_node("Reshape", ["i", "s"], ["y"])],
          [("x", TP.FLOAT, [2])], [("y", TP.FLOAT)], [i64("s", [7])]),
     "node 1 (Reshape-21): Reshape: shape [7] (7 elements) does not fit an input of shape (2,) (2 elements)"),
    (make([helper.make_node("Identity", ["b"], ["a"]), helper.make_node("Identity", ["a"], ["b"])],
          [("x", TP.FLOAT, [2])], [("a", TP.FLOAT)]),
     "node 0 (Identity-21) reads 'b' before node 1 (Identity-21) produces it: the graph has a cycle"),
    (make([helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["x"], ["a"])],
          [("x", TP.FLOAT, [2])], [("a", TP.FLOAT)]),
     "node 1 (Identity-21) produces 'a', which is already produced by node 0"),
    (make([helper.make_node("Identity", ["x"], ["x"])], [("x", TP.FLOAT, [2])], [("x", TP.FLOAT)]),
     "node 0 (Identity-21) produces 'x', which is already a graph input"),
    (make([helper.make_node("Identity", ["x"], ["a"])], [("x", TP.FLOAT, [2])], [("zz", TP.FLOAT)]),
     "graph output 'zz' is never produced"),
    (make([helper.make_node("Identity", ["nope"], ["a"])], [("x", TP.FLOAT, [2])], [("a", TP.FLOAT)]),
     "node 0 (Identity-21) reads 'nope', which no input, initializer or node provides"),
    (make([helper.make_node("Identity", ["x"], ["a"], domain="com.example")], [("x", TP.FLOAT, [2])],
          [("a", TP.FLOAT)]), "m.onnx: 1 node(s) onnxop does not run: com.example.Identity x1; --others onnxruntime"),
    (make([helper.make_node("If", ["c"], ["a"], then_branch=helper.make_graph([], "t", [], []),
                            else_branch=helper.make_graph([], "e", [], []))], [("c", TP.BOOL, [])],
          [("a", TP.FLOAT)]), "1 node(s) onnxop does not run: If x1; --others onnxruntime runs them"),
    (make([helper.make_node("Pow", ["x", "x"], ["a"], name="pow")], [("x", TP.FLOAT, [2])], [("a", TP.FLOAT)], opset=13),
     "1 node(s) onnxop does not run: Pow x1; --others onnxruntime runs them on onnxruntime"),
    # a data type number ONNX names no type for (99) was an internal error (protobuf's enum ValueError)
    (make([helper.make_node("Reshape", ["x", "s"], ["y"])], [("x", TP.FLOAT, [2])], [("y", TP.FLOAT)],
          [onnx.TensorProto(name="s", data_type=99, dims=[1], raw_data=b"\2" + bytes(7))]),
     "initializer 's': data type 99 (99) is not an ONNX tensor type"),
])
def test_hostile_models_are_refused_before_anything_runs(model, message, cwd, capsys, monkeypatch):
    onnx.save(model, "m.onnx")
    np.save("x.npy", np.ones(2, np.float32))
    import onnxop_cli.gpu as gpu

    monkeypatch.setattr(gpu, "get_gpu", lambda *a, **k: pytest.fail("the GPU was opened"))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy")
    assert code == ExitCode.USAGE and out == "", err
    assert message in error_of(err) and err.count("\n") == 1
    assert not (cwd / "y.npy").exists()


def test_a_model_function_is_refused(cwd, capsys):
    model = make([helper.make_node("F", ["x"], ["a"], domain="local")], [("x", TP.FLOAT, [2])], [("a", TP.FLOAT)])
    model.functions.append(helper.make_function("local", "F", ["x"], ["a"], [helper.make_node("Identity", ["x"], ["a"])],
                                                [helper.make_opsetid("", 21)]))
    with pytest.raises(UsageError, match="^1 node\\(s\\) onnxop does not run: local.F x1$"):
        load_graph(model, Path("."))


@pytest.mark.one_backend  # the model's declarations, not a kernel
def test_a_graph_input_declared_with_a_type_number_onnx_does_not_name_runs(backend, cwd, capsys):
    """elem_type 99 names no ONNX type: the declaration is not checked (as one onnxop has no tensors of),
    where reading the model's types for --others was an internal error (protobuf's enum ValueError)."""
    onnx.save(make([helper.make_node("Transpose", ["x"], ["y"])], [("x", 99, [2, 3])], [("y", TP.FLOAT)]), "m.onnx")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save("x.npy", x)
    for others in ([], ["--others", "onnxruntime"]):
        code, out, err = cli(capsys, "run", "m.onnx", "x.npy", *others, "-o", "y.npy")
        assert code == 0, err
        assert np.load("y.npy").tobytes() == x.T.tobytes()


# ------------------------------------------------------------------ the command


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


@pytest.mark.one_backend  # the command line of run/conformance, not a kernel
def test_check_compares_bit_for_bit_and_names_the_element(backend, cwd, capsys, rng):
    x = random_array(rng, (2, 3, 4, 5), "float32")
    model = chain()
    onnx.save(model, "m.onnx")
    Path("set").mkdir()
    Path("set/input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    outs = ReferenceEvaluator(model).run(None, {"x": x})
    for i, (n, o) in enumerate(zip(["y", "r"], outs)):
        Path(f"set/output_{i}.pb").write_bytes(numpy_helper.from_array(o, n).SerializeToString())
    code, out, err = cli(capsys, "run", "m.onnx", "set", "--check", "set", "-b", backend)
    assert code == 0, err
    bad = outs[1].copy()
    bad[1, 2, 3] = -0.0 if bad[1, 2, 3] == 0 else 0.0
    Path("set/output_1.pb").write_bytes(numpy_helper.from_array(bad, "r").SerializeToString())
    code, out, err = cli(capsys, "run", "m.onnx", "set", "--check", "set", "-b", backend)
    assert code == ExitCode.ERROR
    assert "output 'r': 1 of 120 elements differ; first r[1, 2, 3]" in error_of(err)


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
    # a test_data_set folder gives its input_N.pb files in order, whatever the tensors' names (one of the
    # folder's files was taken for the one archive of every input: 'input_0.pb holds 1 arrays ... none named')
    Path("set").mkdir()
    for k, x in enumerate((a, b)):
        onnx.save_tensor(numpy_helper.from_array(x, f"input_{k}"), f"set/input_{k}.pb")
    code, _, err = cli(capsys, "run", "m.onnx", "set", "-o", "y.npy")
    assert code == 0 and np.load("y.npy").tobytes() == want, err


@pytest.mark.one_backend  # the command line of run/conformance, not a kernel
def test_conformance_counts_per_operator_and_survives_a_bad_case(backend, cwd, capsys, rng):
    import ml_dtypes

    for name, model, x in [
        ("test_identity_int4_odd", make([helper.make_node("Identity", ["x"], ["y"])], [("x", TP.INT4, [3, 5])],
                                        [("y", TP.INT4)], opset=25), rng.integers(-8, 8, (3, 5)).astype(ml_dtypes.int4)),
        ("test_flatten_bad", bad_attribute(attrs=[attr("axis", 1.5)]), random_array(rng, (2, 3), "float32")),
        ("test_chain", chain(), random_array(rng, (2, 3, 4, 5), "float32")),
    ]:
        d = cwd / "cases" / name / "test_data_set_0"
        d.mkdir(parents=True)
        onnx.save(model, str(d.parent / "model.onnx"))
        (d / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
        outs = [x] if "identity" in name else ReferenceEvaluator(model).run(None, {"x": x}) if "chain" in name else [x]
        for i, o in enumerate(outs):
            (d / f"output_{i}.pb").write_bytes(numpy_helper.from_array(o, f"o{i}").SerializeToString())
    code, out, err = cli(capsys, "conformance", "cases", "-b", backend)
    assert code == ExitCode.ERROR
    assert "Identity: 1 passed, 0 failed, 0 skipped" in out and "graph: 1 passed, 0 failed, 0 skipped" in out
    assert "Flatten: 0 passed, 1 failed (1 error), 0 skipped" in out
    assert out.rstrip().endswith("2 passed, 1 failed (1 error), 0 skipped")
    code, out, _ = cli(capsys, "conformance", "cases", "-q", "-b", backend)
    assert out.splitlines() == ["test_flatten_bad: Flatten: error: node 0 'f' (Flatten-21): attribute 'axis' must "
                                "be INT (an integer), the model gives FLOAT", "2 passed, 1 failed (1 error), 0 skipped"]
    code, out, _ = cli(capsys, "conformance", "cases", "--op", "identity", "-b", backend)
    assert code == 0 and out.rstrip().endswith("1 passed, 0 failed, 0 skipped")
    code, out, _ = cli(capsys, "conformance", "cases", "--op", "Tile", "-b", backend)
    assert code == ExitCode.ERROR and "nothing ran" in out
    code, _, err = cli(capsys, "conformance", "cases", "--op", "Conv")
    assert code == ExitCode.USAGE and "--op 'Conv': onnxop runs Flatten" in err


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


def test_a_refused_run_says_what_its_dump_keeps(cwd, capsys):
    """--dump writes each value as its region ends, so a run refused after (a graph output not what it declares, a
    --verify difference, a later node's error) left a folder of values that looked like a run's, and the error line
    did not mention it: the files stay (they are what the nodes made, for diagnosis) and the line says how many. A
    run refused before anything was written leaves no folder it made."""
    np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Cast", ["t"], ["y"], to=TP.INT32)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [3, 2])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    code, _, err = cli(capsys, "run", "m.onnx", "x.npy", "--dump", "d")
    assert code == ExitCode.USAGE and error_of(err) == "m.onnx: graph output 'y' is declared float32, the graph made " \
        "(3, 2) int32 (--dump d keeps the 2 value(s) the nodes made before that, for diagnosis)", err
    assert sorted(p.name for p in Path("d").iterdir()) == ["t.npy", "y.npy"]

    nodes = [helper.make_node("Reshape", ["x", "s"], ["t"]), helper.make_node("Transpose", ["t"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3]),
                                       helper.make_tensor_value_info("s", TP.INT64, [1])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    np.save("s.npy", np.array([7], np.int64))
    code, _, err = cli(capsys, "run", "m.onnx", "--input", "x=x.npy", "--input", "s=s.npy", "--dump", "e")
    assert code == ExitCode.USAGE and "does not fit" in err and "--dump" not in err, err
    assert not Path("e").exists()


def test_dump_never_writes_over_what_the_run_reads(cwd, capsys):
    """--dump's file names come from the model's values, not from the user: --dump into --check's folder replaced the
    expected y.npy with the run's own y, and --check then reported the outputs equal, bit for bit (exit 0, the expected
    file gone); --dump into the inputs' folder replaced an input file named like a value. Both are refused before
    anything runs, and every file is as it was."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Identity", ["t"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [3, 2])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    np.save("t.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    Path("exp").mkdir()
    np.save("exp/y.npy", np.zeros((3, 2), np.float32))  # not what the graph makes
    before = {p: p.read_bytes() for p in (Path("t.npy"), Path("exp/y.npy"))}
    code, _, err = cli(capsys, "run", "m.onnx", "t.npy", "--check", "exp", "--dump", "exp")
    assert code == ExitCode.USAGE and error_of(err) == "--dump exp and --check exp name one folder: the dump would " \
        "write over the files it checks against; give each its own", err
    code, _, err = cli(capsys, "run", "m.onnx", "--input", "x=t.npy", "--dump", ".")
    assert code == ExitCode.USAGE and error_of(err) == "--dump .: value 't' would be written over t.npy, an input of " \
        "this run; dump into another folder", err
    assert {p: p.read_bytes() for p in before} == before and sorted(p.name for p in Path(".").iterdir()) == \
        ["exp", "m.onnx", "t.npy"]
    code, _, err = cli(capsys, "run", "m.onnx", "t.npy", "--check", "exp", "--dump", "d")
    assert code == 1 and "output 'y': 5 of 6 elements differ" in err, err


def test_a_value_larger_than_one_device_buffer_is_refused_in_onnxops_words(cwd, capsys, gpu, backend, monkeypatch):
    """A graph keeps each value its onnxop nodes make whole in one device buffer. One past the
    adapter's max-buffer-size (2 GiB on lavapipe: an Expand to 50000 x 50000 bytes before a Gather of
    two rows) was the engine's 'WebGPU allocating 2500000000 bytes for intermediate failed ...:
    In wgpuDeviceCreateBuffer', exit 1; it is refused with the sizes and the limit, nothing written.
    The limit is lowered here to 4 KiB: the same refusal on a 5000-byte value."""
    model = make([helper.make_node("Expand", ["x", "s"], ["big"]), helper.make_node("Gather", ["big", "i"], ["y"])],
                 [("x", TP.UINT8, [1, 1])], [("y", TP.UINT8)], [i64("s", [50, 100]), i64("i", [0, -1])])
    onnx.save(model, "m.onnx")
    np.save("x.npy", np.array([[3]], np.uint8))
    monkeypatch.setitem(gpu.limits, "max-buffer-size", 4096)
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy", "-b", backend)
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err) == ("m.onnx: node 1 (Gather-13): intermediate takes 5000 bytes on the device, more than one "
                             "buffer there holds (4096, max-buffer-size): a graph keeps each value onnxop's nodes "
                             "make on the device whole")
    assert not Path("y.npy").exists()

"""``onnxop run MODEL --others onnxruntime``: a value crosses between onnxop's regions and onnxruntime's,
and from the model's inputs to either, in its ONNX type, its bytes as they are -- bfloat16, the float8
types, the 4- and 2-bit integers (onnxruntime 1.32's CPU provider has no kernel that takes or makes a
float4e2m1) -- and ``--verify`` runs onnxop's nodes of them again on onnxruntime.

Real files, the module's commands through onnxop's entry (tests/commands.py, fixture ``ran``).
Which nodes go where: test_run_others_regions.py.
"""

from __future__ import annotations

import ctypes
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from commands import Prepared

F = TensorProto.FLOAT
# (onnxruntime has no Transpose of float8e8m0: onnx.reference runs the whole model, on positive values,
# which onnxruntime's Cast and onnx.reference's read alike)
TYPES = ["BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "INT4", "UINT4", "INT2",
         "UINT2", "FLOAT8E8M0"]

prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results)."""
    return prepared.run(tmp_path_factory)


def crossing_model(elem: int) -> onnx.ModelProto:
    """t = Cast(x) to ``elem`` and z = Cast(xt) to float on onnxruntime, u = Transpose(t) on onnxop, y =
    Cast(u) to float on onnxruntime again: each Cast in a function of the model, which onnxop leaves to the
    others, as it leaves every function."""
    def cast(name, to):
        return helper.make_function("local", name, ["a"], ["b"], [helper.make_node("Cast", ["a"], ["b"], to=to)],
                                    [helper.make_opsetid("", 25)])

    nodes = [helper.make_node("ToT", ["x"], ["t"], domain="local"), helper.make_node("Transpose", ["t"], ["u"]),
             helper.make_node("FromT", ["u"], ["y"], domain="local"),
             helper.make_node("FromT", ["xt"], ["z"], domain="local")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 4]),
                                           helper.make_tensor_value_info("xt", elem, [2, 4])],
                              [helper.make_tensor_value_info(n, k, None) for n, k in
                               [("t", elem), ("u", elem), ("y", F), ("z", F)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25), helper.make_opsetid("local", 1)],
                              functions=[cast("ToT", elem), cast("FromT", F)])
    model.ir_version = 11
    return model


@prepared
def crossings(tmp_path):
    rng = np.random.default_rng(11)
    commands = []
    for name in TYPES:
        elem = getattr(TensorProto, name)
        onnx.save(crossing_model(elem), tmp_path / f"{name}.onnx")
        x = (rng.standard_normal((2, 4)) * 40).astype(np.float32)
        x[0, :2] = -0.0, 448
        np.save(tmp_path / f"x_{name}.npy", np.abs(x) if name == "FLOAT8E8M0" else x)
        bits = {"BFLOAT16": 16, "INT4": 4, "UINT4": 4, "INT2": 2, "UINT2": 2}.get(name, 8)
        raw = rng.integers(0, 256, bits, dtype=np.uint8).tobytes()  # 8 elements: any bits (NaN payloads too)
        onnx.save_tensor(helper.make_tensor("xt", elem, [2, 4], raw, raw=True), tmp_path / f"xt_{name}.pb")
        commands.append(["run", f"{name}.onnx", f"x_{name}.npy", f"xt_{name}.pb", "--others", "onnxruntime",
                         "--verify", "--json", "-o", f"{name}/"])
    return commands


def whole(path) -> dict[str, bytes]:
    """Each output's bytes from onnxruntime's run of the whole model (optimizations off), its inputs fed as
    the bytes of their files; onnx.reference's where onnxruntime has no kernel for a node of it."""
    model = onnx.load(path)
    folder = path.parent
    stem = path.stem
    feeds = {"x": numpy_helper.from_array(np.load(folder / f"x_{stem}.npy")),
             "xt": onnx.load_tensor(folder / f"xt_{stem}.pb")}
    names = [o.name for o in model.graph.output]
    if stem == "FLOAT8E8M0":
        made = ReferenceEvaluator(model).run(None, {n: numpy_helper.to_array(t) for n, t in feeds.items()})
        return {n: numpy_helper.from_array(a).raw_data for n, a in zip(names, made)}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    values = {}
    for name, t in feeds.items():
        values[name] = ort.OrtValue.ortvalue_from_shape_and_type(list(t.dims), t.data_type)
        ctypes.memmove(values[name].data_ptr(), t.raw_data, len(t.raw_data))
    made = session.run_with_ort_values(names, values)
    return {n: ctypes.string_at(v.data_ptr(), v.tensor_size_in_bytes()) for n, v in zip(names, made)}


@pytest.mark.parametrize("name", TYPES)
def test_every_type_crosses_both_ways_as_its_bytes(ran, name):
    """onnxop handed onnxruntime numpy arrays and read numpy arrays back: a value of any of these types
    crossing to onnxruntime was refused (bfloat16: "Numpy_type 256 can't be converted to MLDataType"), and
    so was one coming back ("No corresponding Numpy type for Tensor Type. bfloat16"), but float8e4m3fn,
    which came back as uint8 and was read as float8 again; --verify's onnxruntime refused them too, and
    onnx.reference judged every Transpose."""
    tmp_path, done = ran["crossings"]
    r = done[TYPES.index(name)]
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [g["runtime"] for g in doc["regions"]] == ["onnxruntime", "onnxop", "onnxruntime"]
    by = "onnx.reference" if name == "FLOAT8E8M0" else "onnxruntime"
    assert doc["verified"] == [{"op": "Transpose", "runtime": by, "nodes": 1}]
    want = whole(tmp_path / f"{name}.onnx")
    out = tmp_path / name
    assert onnx.load_tensor(out / "t.pb").raw_data == want["t"]
    assert onnx.load_tensor(out / "u.pb").raw_data == want["u"]
    assert np.load(out / "y.npy").tobytes() == want["y"]
    assert np.load(out / "z.npy").tobytes() == want["z"]


def strings_model() -> onnx.ModelProto:
    """st = Transpose(s) on onnxop, sc = StringConcat(st, st) on onnxruntime, out = Transpose(sc) on onnxop,
    ss = StringConcat(s, s) on onnxruntime."""
    nodes = [helper.make_node("Transpose", ["s"], ["st"]), helper.make_node("StringConcat", ["st", "st"], ["sc"]),
             helper.make_node("Transpose", ["sc"], ["out"]), helper.make_node("StringConcat", ["s", "s"], ["ss"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("s", TensorProto.STRING, [2, 3])],
                              [helper.make_tensor_value_info(n, TensorProto.STRING, None) for n in ("out", "ss")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@prepared
def strings(tmp_path):
    onnx.save(strings_model(), tmp_path / "m.onnx")
    s = np.array([["a", "", "déf"], ["g\u00e9", "h", "ij"]], object)
    onnx.save_tensor(numpy_helper.from_array(s, "s"), tmp_path / "s.pb")
    mixed = crossing_model(TensorProto.BFLOAT16)  # its function ToT, in a graph of its own
    nodes = [helper.make_node("ToT", ["x"], ["b"], domain="local"), helper.make_node("StringConcat", ["v", "v"], ["c"])]
    mixed.graph.CopyFrom(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2]),
                                                        helper.make_tensor_value_info("v", TensorProto.STRING, [2])],
                                           [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, None),
                                            helper.make_tensor_value_info("c", TensorProto.STRING, None)]))
    onnx.save(mixed, tmp_path / "mixed.onnx")
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    onnx.save_tensor(numpy_helper.from_array(np.array(["a", "b"], object), "v"), tmp_path / "v.pb")
    return (tmp_path, s), [["run", "m.onnx", "s.pb", "--others", "onnxruntime", "--verify", "--json", "-o", "out/"],
                           ["run", "mixed.onnx", "x.npy", "v.pb", "--others", "onnxruntime", "-o", "mixed/"]]


def test_strings_cross_as_onnxruntimes_python_api_takes_them(ran):
    """onnxruntime's Python API makes no OrtValue of strings: a region with a string input runs on numpy
    arrays, as it did, and where one of its values is of a type numpy lacks, that is one line."""
    (tmp_path, s), [r, mixed] = ran["strings"]
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [g["runtime"] for g in doc["regions"]] == ["onnxop", "onnxruntime", "onnxop"]
    assert doc["verified"] == [{"op": "Transpose", "runtime": "onnxruntime", "nodes": 2}]
    session = ort.InferenceSession(strings_model().SerializeToString(), providers=["CPUExecutionProvider"])
    for name, want in zip(("out", "ss"), session.run(["out", "ss"], {"s": s})):
        got = np.load(tmp_path / "out" / f"{name}.npy")
        assert got.shape == want.shape and got.tolist() == want.tolist()
    assert mixed.returncode == 1 and mixed.stderr.count("\n") == 1, mixed.stderr
    assert mixed.stderr.endswith(": onnxruntime: output 'b' is bfloat16, beside a string input: onnxruntime's "
                                 "Python API takes strings only in a run of numpy arrays, which have no bfloat16\n"), \
        mixed.stderr
    assert not (tmp_path / "mixed").exists()


@prepared
def float8_handed_back(tmp_path):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("Cast", ["q"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Transpose", ["q"], ["t"], perm=[1, 0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 3]),
                               helper.make_tensor_value_info("t", TensorProto.FLOAT8E4M3FN, [3, 2])],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "s"),
                               helper.make_tensor("z", TensorProto.FLOAT8E4M3FN, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, tmp_path / "m.onnx")
    one = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN)], "g",
                            [helper.make_tensor_value_info("x", F, [2, 3])],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [2, 3])])
    onnx.save(helper.make_model(one, opset_imports=[helper.make_opsetid("", 21)]), tmp_path / "cast.onnx")
    x = np.array([[1, 2, 3.5], [-0.0, 448, 0.3]], np.float32)
    np.save(tmp_path / "x.npy", x)
    return tmp_path, [["run", "m.onnx", "x.npy", "--others", "onnxruntime", "--verify", "-o", "out/"],
                                  ["run", "cast.onnx", "x.npy", "--verify", "-o", "y.pb"]]


def test_a_float8_value_onnxruntime_hands_back_keeps_its_type(ran):
    """onnxruntime's Python API hands a float8e4m3fn tensor back as uint8 (its bytes): a QuantizeLinear's
    float8 output crossed as uint8 values, so onnxop's Cast of it to float16 made 56.0 of 1.0 (exit 0), and a
    graph output of it was refused ('declared float8_e4m3fn, the graph made (3, 2) uint8'). --verify's run of
    a Cast to float8e4m3fn on onnxruntime differed in type and onnx.reference judged it."""
    tmp_path, [r, cast] = ran["float8_handed_back"]
    assert r.returncode == 0, r.stderr
    import ml_dtypes

    want = np.array([[56, 64, 70], [128, 126, 42]], np.uint8).view(ml_dtypes.float8_e4m3fn)  # 1 2 3.5 -0 448 0.3125
    assert np.load(tmp_path / "out" / "h.npy").tobytes() == want.astype(np.float16).tobytes()
    t = numpy_helper.to_array(onnx.load_tensor(tmp_path / "out" / "t.pb"))
    assert t.dtype == ml_dtypes.float8_e4m3fn and t.tobytes() == want.T.tobytes()
    assert cast.returncode == 0 and "Verified 1 node(s) bit for bit: Cast x1 on onnxruntime" in cast.stdout, cast.stderr

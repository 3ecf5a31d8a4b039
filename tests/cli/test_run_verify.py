"""``run --verify`` stops at the first node whose bits differ from the other
runtime's, naming the node, the output, the element and both values' bytes;
where onnxruntime differs and onnx.reference agrees, the reference decides;
and a graph input declared with dim -1 (paddle2onnx's "any") takes any size.

onnxruntime agrees with onnxop on every node it can run but a few edge cases
it reads its own way, so a divergence is made here by an onnxruntime (and an
onnx.reference) whose run flips one value (in-process).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper, numpy_helper

from commands import run_commands
from conftest import cli, error_of
from onnxop_cli.errors import ExitCode


def transpose_model(opset: int = 17, dims=(2, 3)) -> onnx.ModelProto:
    node = helper.make_node("Transpose", ["x"], ["a/b"], name="tr", perm=[1, 0])
    return helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                                               [helper.make_tensor_value_info("a/b", TensorProto.FLOAT, None)]),
                             opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("flip, shown", [
    (lambda a: a.__setitem__((1, 0), 0.0), "first [1, 0]: onnxop 0x80000000, onnxruntime 0x00000000"),  # -0.0
    (lambda a: a.view(np.uint32).__setitem__((2, 0), 0x7FC00001), "first [2, 0]: onnxop 0x7fc00000, onnxruntime 0x7fc00001"),
])
def test_the_first_divergence_stops_the_run_naming_node_output_element_and_bytes(flip, shown, cwd, capsys, monkeypatch):
    onnx.save(transpose_model(), "m.onnx")
    x = np.array([[1, -0.0, np.float32("nan")], [4, 5, 6]], np.float32)
    np.save("x.npy", x)
    flip_onnxruntime(monkeypatch, flip)
    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", flipping_reference(flip))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "o/")
    assert code == ExitCode.ERROR, err
    assert error_of(err) == f"--verify: node 0 'tr' (Transpose) output 'a/b': 1 of 6 elements differ; {shown}"
    assert not (cwd / "o" / "a%2Fb.npy").exists()


def test_a_divergence_names_an_unnamed_node_by_its_place_in_the_model(cwd, capsys, monkeypatch):
    """An unnamed node was "node '' (Transpose)", which names none (exporters and hand-made graphs leave
    names out): its index in the model is given, as the plan's messages give it."""
    nodes = [helper.make_node("Flatten", ["x"], ["f"], name="flat"), helper.make_node("Transpose", ["f"], ["y"], perm=[1, 0])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                                opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    np.save("x.npy", np.array([[1, -0.0, 3], [4, 5, 6]], np.float32))

    def flip(a):  # the Transpose's output only
        if a.shape == (3, 2):
            a[1, 0] = 0.0
    flip_onnxruntime(monkeypatch, flip)
    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", flipping_reference(flip))
    code, _, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "o/")
    assert code == ExitCode.ERROR and error_of(err) == (
        "--verify: node 1 (Transpose) output 'y': 1 of 6 elements differ; first [1, 0]: onnxop 0x80000000, "
        "onnxruntime 0x00000000"), err


def test_a_divergence_is_a_failed_check_in_json(cwd, capsys, monkeypatch):
    """docs/json.md: status "failed" when a check ran and found a mismatch (it said "error")."""
    onnx.save(transpose_model(), "m.onnx")
    np.save("x.npy", np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    flip = lambda a: a.__setitem__((1, 0), 9.0)  # noqa: E731
    flip_onnxruntime(monkeypatch, flip)
    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", flipping_reference(flip))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "o/", "--json")
    assert code == ExitCode.ERROR, err
    doc = json.loads(out)
    assert (doc["status"], doc["exit_code"]) == ("failed", 1)
    assert doc["message"] == error_of(err) and "1 of 6 elements differ" in doc["message"]


def flip_onnxruntime(monkeypatch, flip):
    """onnxruntime's sessions for --verify, their first output flipped by ``flip`` where onnxruntime holds
    it: a float32 output as its values, another as its bytes (packed where packed)."""
    import ctypes

    import onnxop_cli.core.other_onnxruntime as other

    real = other.session

    class Flipping:
        def __init__(self, model):
            self.s = real(model)

        def run_with_ort_values(self, outs, feeds, options=None):
            made = self.s.run_with_ort_values(outs, feeds, options)
            v = made[0]
            raw = np.ctypeslib.as_array((ctypes.c_uint8 * v.tensor_size_in_bytes()).from_address(v.data_ptr()))
            flip(raw.view(np.float32).reshape(v.shape()) if v.data_type() == "tensor(float)" else raw)
            return made

    monkeypatch.setattr(other, "session", Flipping)


def flipping_reference(flip):
    """onnx.reference's evaluator, its first output flipped by ``flip``."""
    from onnx.reference import ReferenceEvaluator

    class Flipped(ReferenceEvaluator):
        def run(self, *a, **kw):
            made = super().run(*a, **kw)
            flip(made[0])
            return made

    return Flipped


def test_a_divergence_in_a_packed_type_names_the_element_and_its_code(cwd, capsys, monkeypatch):
    """onnxruntime's numpy bridge refused an int4 input, so onnx.reference alone judged onnxop's int4 (and
    bfloat16, float8, 2-bit) nodes: onnxruntime's bytes are compared now, a 4-bit element as one."""
    import ml_dtypes

    node = helper.make_node("Transpose", ["x"], ["a/b"], name="tr")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT4, [2, 3])],
                              [helper.make_tensor_value_info("a/b", TensorProto.INT4, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, "m.onnx")
    onnx.save_tensor(numpy_helper.from_array(np.array([[1, -3, 5], [7, -8, 0]], ml_dtypes.int4), "x"), "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "o/")
    assert code == 0 and "Verified 1 node(s) bit for bit: Transpose x1 on onnxruntime" in out, err
    flip_onnxruntime(monkeypatch, lambda raw: raw.__setitem__(1, raw[1] ^ 0x10))  # element 3 (-8, [1, 1]): -7
    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", flipping_reference(
        lambda a: a.__setitem__((1, 1), a[1, 1] + 1)))
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "p/")
    assert code == ExitCode.ERROR and error_of(err) == (
        "--verify: node 0 'tr' (Transpose) output 'a/b': 1 of 6 elements differ; first [1, 1]: onnxop 0x08, "
        "onnxruntime 0x09"), err


def test_where_onnxruntime_differs_the_reference_decides(cwd, capsys, monkeypatch):
    """onnxruntime reads a Slice's end of INT64_MAX under a negative step as numpy's None (to the
    first element); ONNX clamps it to the last index, so x[0:INT64_MAX:-1] is empty, as onnx.reference
    makes it: --verify stopped there ('onnxop made (0,) float32, onnxruntime (1,) float32'). An
    onnxruntime that flips a value while the reference agrees is no divergence either."""
    from onnx import numpy_helper

    ends = [("e", np.array([2**63 - 1])), ("s", np.array([0])), ("a", np.array([0])), ("p", np.array([-1]))]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="sl")
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, n) for n, v in ends]), opset_imports=[helper.make_opsetid("", 18)]), "m.onnx")
    np.save("x.npy", np.arange(3, dtype=np.float32))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "y.npy")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Slice x1 on onnx.reference" in out
    assert np.load("y.npy").shape == (0,)

    flip_onnxruntime(monkeypatch, lambda a: a.__setitem__((1, 0), 7))
    onnx.save(transpose_model(), "t.onnx")
    np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    code, out, err = cli(capsys, "run", "t.onnx", "x.npy", "--verify", "-o", "o/")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Transpose x1 on onnx.reference" in out


@pytest.mark.parametrize("flag", [["--verify"], ["--dump", "d"]])
def test_without_others_no_node_runs_on_onnxruntime(cwd, capsys, flag):
    """onnx's shape inference gives Compress-9's output no type, so a float Add after it was the others'
    in the split --verify and --dump run (a type it cannot tell), which ran it on onnxruntime and exited 0
    ('onnxruntime (CPU): 1 (Add x1)') without --others, where the plain run refuses it; now every node is
    onnxop's there, as the check before the split found, and the Add is refused as in the plain run."""
    nodes = [helper.make_node("Compress", ["x", "c"], ["v"], axis=0), helper.make_node("Add", ["v", "v"], ["y"])]
    onnx.save(helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([True, False]), "c")]), opset_imports=[helper.make_opsetid("", 9)]), "m.onnx")
    np.save("x.npy", np.array([1.5, 2], np.float32))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy")
    assert code == ExitCode.USAGE and "float arithmetic is not in its scope" in err
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy", *flag)
    assert code == ExitCode.USAGE and "node 1 (Add-7): Add: input A is float32" in error_of(err), err
    assert not (cwd / "y.npy").exists() and "onnxruntime" not in out
    assert not (cwd / "d").exists()  # --dump's folder is made when the first region ends: none did
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy", "--others", "onnxruntime", *flag)
    assert code == 0 and "onnxruntime (CPU): 1 (Add x1)" in out, err
    assert (cwd / "d" / "v.npy").exists() == (flag[0] == "--dump")


def test_verify_passes_and_says_per_operator(cwd, capsys):
    onnx.save(transpose_model(), "m.onnx")
    np.save("x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "o/")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Transpose x1 on onnxruntime" in out
    assert np.load(cwd / "o" / "a%2Fb.npy").tobytes() == np.arange(6, dtype=np.float32).reshape(2, 3).T.tobytes()


def test_a_verify_that_compares_nothing_fails(cwd, capsys):
    """A model none of whose nodes onnxop ran (all onnxruntime's, or none at all) said 'Verified 0
    node(s) bit for bit: none' and exited 0, a check that passed without comparing; it fails, as
    conformance with no case run and compare with nothing paired do, and writes nothing."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["r"])], "g", [x], [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 17)]), "relu.onnx")
    onnx.save(helper.make_model(helper.make_graph([], "g", [x], [x]), opset_imports=[helper.make_opsetid("", 17)]), "none.onnx")
    np.save("x.npy", np.array([-1, 2], np.float32))
    code, out, err = cli(capsys, "run", "relu.onnx", "x.npy", "--others", "onnxruntime", "--verify", "-o", "y.npy")
    assert code == ExitCode.ERROR and not (cwd / "y.npy").exists()
    assert error_of(err) == ("relu.onnx: --verify compared nothing: onnxop ran none of the model's 1 node(s) "
                             "(onnxruntime (CPU) ran Relu x1), so none of its results was checked; drop --verify")
    code, out, err = cli(capsys, "run", "none.onnx", "x.npy", "--verify", "--json")
    assert code == ExitCode.ERROR and json.loads(out)["status"] == "failed"
    assert "onnxop ran none of the model's 0 node(s), so none" in error_of(err)


def test_a_dim_of_minus_one_takes_any_size_and_a_slash_in_a_name_is_escaped(tmp_path):
    """paddle2onnx declares dynamic dims as -1 (PP-OCR's classifier); -o DIR/ writes 'a/b' as a%2Fb.npy,
    and --check DIR finds it there by name."""
    onnx.save(transpose_model(dims=(-1, 3)), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones((5, 3), np.float32))
    # real commands on real files, in one process (tests/commands.py): the second checks what the first wrote
    written, r = run_commands([(tmp_path, ["run", "m.onnx", "x.npy", "-o", "o/"]),
                               (tmp_path, ["run", "m.onnx", "x.npy", "--check", "o"])])  # a folder of files by output
    assert written.returncode == 0, written.stderr
    assert np.load(tmp_path / "o" / "a%2Fb.npy").shape == (3, 5)
    assert r.returncode == 0 and r.stdout.endswith("1 output(s) equal o's files, bit for bit\n"), r.stdout + r.stderr


def test_a_split_that_leaves_an_output_unnamed_is_verified(tmp_path):
    """onnxruntime (1.32) dies of SIGSEGV on a Split whose outputs include '' (left out, as ONNX allows):
    --verify ran the node as it is there and onnxop died with it (exit -11, nothing written). It names
    the omitted outputs in its own model of the node; the named parts are compared as before. In a
    process of its own (tests/commands.py), so a crash fails this test, not the run."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x[0, 0, 0] = -0.0
    np.save(tmp_path / "x.npy", x)
    split = numpy_helper.from_array(np.array([1, 2, 1], np.int64), "s")
    for name, outputs, opset in [("mid", ["a", "", "c"], 21), ("tail", ["a", "", ""], 21), ("parts", ["a", ""], 13)]:
        node = (helper.make_node("Split", ["x", "s"], outputs, axis=2) if opset > 13 else
                helper.make_node("Split", ["x"], outputs, axis=0))
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
                                  initializer=[split] if opset > 13 else [])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), tmp_path / f"{name}.onnx")
    done = run_commands([(tmp_path, ["run", f"{name}.onnx", "x.npy", "--verify", "-o", f"{name}/"])
                         for name in ("mid", "tail", "parts")])
    for r in done:
        assert r.returncode == 0 and "Verified 1 node(s) bit for bit: Split x1 on onnxruntime" in r.stdout, r
    assert np.load(tmp_path / "mid" / "c.npy").tobytes() == np.ascontiguousarray(x[:, :, 3:]).tobytes()
    assert np.load(tmp_path / "tail" / "a.npy").tobytes() == np.ascontiguousarray(x[:, :, :1]).tobytes()
    assert np.load(tmp_path / "parts" / "a.npy").tobytes() == x[:1].tobytes()


def test_a_constant_in_external_data_is_verified_from_the_models_folder(tmp_path):
    """A Constant whose value is in external data (w.bin beside the model), run from another folder: --verify
    handed onnxruntime the node as bytes, which looked w.bin up in the working folder: a w.bin of zeros
    there was 'output 'k': 2999 of 3000 elements differ' (exit 1), none 'neither onnxruntime nor
    onnx.reference runs it'. The value is read from the model's folder, as the run reads it."""
    from onnx.external_data_helper import convert_model_to_external_data

    value = numpy_helper.from_array(np.arange(3000, dtype=np.float32).reshape(1000, 3), "cv")
    graph = helper.make_graph([helper.make_node("Constant", [], ["k"], value=value),
                               helper.make_node("Concat", ["x", "k"], ["y"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="w.bin", size_threshold=1024,
                                   convert_attribute=True)
    (tmp_path / "model").mkdir()
    onnx.save(model, tmp_path / "model" / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    (tmp_path / "empty").mkdir()
    np.zeros(6000, np.float32).tofile(tmp_path / "w.bin")
    done = run_commands([(tmp_path, ["run", "model/m.onnx", "x.npy", "--verify", "-o", "y.npy"]),
                         (tmp_path / "empty", ["run", "../model/m.onnx", "../x.npy", "--verify", "-o", "y.npy"])])
    for r in done:
        assert r.returncode == 0 and "Verified 2 node(s) bit for bit: Concat x1 on onnxruntime, Constant x1 on " \
                                      "onnxruntime" in r.stdout, (r.stdout, r.stderr)
    assert np.load(tmp_path / "empty" / "y.npy")[2:].tobytes() == np.arange(3000, dtype=np.float32).tobytes()


def test_a_constant_two_runtimes_read_is_verified_where_onnxop_reads_it(cwd, capsys):
    """A Constant read by onnxruntime's Add and by onnxop's Concat goes into both regions (graphs.md): the
    later onnxop region makes it again as a copy, which it did not hand on, and --verify's look-up of
    the Concat's input stopped a right run: 'value 'c' was released before its last reader' (exit 1,
    nothing written). An onnxop region under --verify hands on its copies' values too."""
    c = numpy_helper.from_array(np.array([[1, 0, 1], [0, 1, -0.0]], np.float32), "cv")
    nodes = [helper.make_node("Constant", [], ["c"], value=c),
             helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Add", ["t", "c"], ["r"]),
             helper.make_node("Concat", ["r", "c"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.save("x.npy", x)
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--others", "onnxruntime", "--verify", "-o", "y.npy")
    assert code == 0, err
    # the Constant is counted once, where it ran first (onnxruntime's region): onnxop's copy is not counted
    assert "onnxruntime (CPU): 2 (Add x1, Constant x1)" in out
    assert "Verified 2 node(s) bit for bit: Concat x1 on onnxruntime, Transpose x1 on onnxruntime" in out
    want = np.concatenate([x.T + numpy_helper.to_array(c), numpy_helper.to_array(c)])
    assert np.load("y.npy").tobytes() == want.tobytes()


@pytest.mark.parametrize("flag", [[], ["--verify"], ["--others", "onnxruntime"], ["--dump", "d"]])
def test_a_node_refused_in_the_split_run_is_named_with_the_model_as_in_the_plain_run(cwd, capsys, flag):
    """A node's refusal found while the split run (--verify, --others, --dump) ran the graph lacked the
    model's path that the plain run's line starts with ('node 0 (Gather-13): ...' for 'm.onnx: node 0 ...')."""
    node = helper.make_node("Gather", ["x", "i"], ["y"])
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, [3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(np.array([9], np.int64), "i")]), opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    np.save("x.npy", np.zeros((3, 2), np.int32))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", *flag)
    assert code == ExitCode.USAGE and error_of(err) == (
        "m.onnx: node 0 (Gather-13): Gather: indices[0] = 9 is out of range [-3, 2] for axis 0 of size 3"), err

"""run MODEL --check and --dump, and conformance over a folder of cases: --check compares bit for bit
and names the element, conformance counts per operator past a bad case, --dump says what a refused run
kept and never writes over what the run reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from graph_models import attr, bad_attribute, chain, make


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
    # an expected output the graph does not make fails the check, as conformance's count and onnx's runner do
    Path("set/output_1.pb").write_bytes(numpy_helper.from_array(outs[1], "r").SerializeToString())
    Path("set/output_2.pb").write_bytes(numpy_helper.from_array(outs[1], "z").SerializeToString())
    code, out, err = cli(capsys, "run", "m.onnx", "set", "--check", "set", "-b", backend)
    assert code == ExitCode.ERROR
    assert error_of(err) == "--check set: output_2.pb expects 3 outputs, the graph made 2 ('y', 'r')"


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


@pytest.mark.one_backend  # the command line of run --check, not a kernel
def test_check_refuses_two_files_that_could_each_be_an_output(backend, cwd, capsys, rng):
    """A --check folder of value files: a stale X%3A0.npy (the name onnxop writes for output X:0) beside
    X:0.npy (the name as it is) was compared without a word, the other file left unread; so were y.npy
    beside y.pb. Each pair is refused, naming both; X:0.npy alone is taken as X:0's."""
    x = random_array(rng, (2, 3), "float32")
    onnx.save(make([helper.make_node("Neg", ["x"], ["X:0"]), helper.make_node("Identity", ["x"], ["y"])],
                   [("x", TP.FLOAT, [2, 3])], [("X:0", TP.FLOAT), ("y", TP.FLOAT)]), "m.onnx")
    np.save("x.npy", x)
    Path("want").mkdir()
    np.save("want/y.npy", x)
    np.save("want/X:0.npy", -x)
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--others", "onnxruntime", "--check", "want", "-b", backend)
    assert code == 0, err
    np.save("want/X%3A0.npy", x)  # stale: would fail the check, yet one file is as likely as the other
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--others", "onnxruntime", "--check", "want", "-b", backend)
    assert code == ExitCode.USAGE
    assert error_of(err) == "--check 'want': 'X%3A0.npy' and 'X:0.npy' could each be value 'X:0'; keep one"
    Path("want/X%3A0.npy").unlink()
    Path("want/y.pb").write_bytes(numpy_helper.from_array(x, "y").SerializeToString())
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--others", "onnxruntime", "--check", "want", "-b", backend)
    assert code == ExitCode.USAGE
    assert error_of(err) == "--check 'want': 'y.npy' and 'y.pb' could each be value 'y'; keep one"

"""``onnxop run MODEL --others onnxruntime|reference``: the nodes onnxop runs
on the GPU, each connected run of the others on another runtime; ``--verify``
runs onnxop's nodes again there, ``--dump`` writes every value.

Real files (the module's commands that need nothing of a
process of their own run through onnxop's entry: tests/commands.py, fixture ``ran``). The expected values are onnxruntime's own
run of the whole model with graph optimizations off (the regions run that
way, so float kernels round alike), or onnx.reference's. Which nodes go where
and the names a split run refuses: test_run_others_regions.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from commands import Prepared
from onnxop_cli.io.valuefiles import file_stem

F, I64 = TensorProto.FLOAT, TensorProto.INT64
OUT = "out/put:0"  # a name no file can hold as it is


def onnxop(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def mixed_model(contrib: bool = True) -> onnx.ModelProto:
    """Add -> Transpose -> Relu -> Reshape, an If reading an outer value, a
    com.microsoft node; nodes, inputs and outputs in no useful order."""
    then = helper.make_graph([helper.make_node("Neg", ["a"], ["tn"])], "then", [], [helper.make_tensor_value_info("tn", F, None)])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["en"])], "else", [], [helper.make_tensor_value_info("en", F, None)])
    nodes = [
        helper.make_node("Reshape", ["r", "shape"], [OUT], name="flat"),
        helper.make_node("Relu", ["t"], ["r"], name="relu"),
        helper.make_node("If", ["c"], ["branch"], name="if", then_branch=then, else_branch=other),
        helper.make_node("Transpose", ["a"], ["t"], name="tr", perm=[0, 2, 1]),
        helper.make_node("Add", ["x", "b"], ["a"], name="add"),
    ]
    outputs = [helper.make_tensor_value_info("branch", F, None), helper.make_tensor_value_info(OUT, F, None)]
    if contrib:
        nodes.append(helper.make_node("Gelu", ["t"], ["g"], name="gelu", domain="com.microsoft"))
        outputs.append(helper.make_tensor_value_info("g", F, None))
    inits = [numpy_helper.from_array(np.array([-1, 0.5, 2, -0.0], np.float32), "b"),
             numpy_helper.from_array(np.array([2, -1], np.int64), "shape")]
    inputs = [helper.make_tensor_value_info("b", F, [4]), helper.make_tensor_value_info("x", F, [2, 3, 4]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if contrib else [])
    return helper.make_model(helper.make_graph(nodes, "mixed", inputs, outputs, inits), opset_imports=opsets)


def sorted_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The mixed model with its nodes sorted, as onnxruntime and onnx.reference want them."""
    sorted_model = onnx.ModelProto()
    sorted_model.CopyFrom(model)
    order = ["add", "tr", "relu", "flat", "if", "gelu"]
    nodes = sorted(sorted_model.graph.node, key=lambda n: order.index(n.name))
    del sorted_model.graph.node[:]
    sorted_model.graph.node.extend(nodes)
    return sorted_model


def onnxruntime_run(model: onnx.ModelProto, feeds: dict, outputs=None) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sorted_model = sorted_copy(model)
    for name in outputs or []:
        if name not in [o.name for o in sorted_model.graph.output]:
            sorted_model.graph.output.append(onnx.ValueInfoProto(name=name))
    s = ort.InferenceSession(sorted_model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return s.run(outputs, feeds)


prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results)."""
    return prepared.run(tmp_path_factory)


def mixed(tmp_path):
    """The mixed model, its inputs (.npy and a data set) and onnxruntime's outputs in ``tmp_path``."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 0, 0] = np.float32("nan")
    feeds = {"x": x, "c": np.array(True)}
    model = mixed_model()
    onnx.save(model, tmp_path / "m.onnx")
    data = tmp_path / "test_data_set_0"
    data.mkdir()
    for k, n in enumerate(["x", "c"]):
        np.save(tmp_path / f"{n}.npy", feeds[n])
        onnx.save_tensor(numpy_helper.from_array(feeds[n], n), data / f"input_{k}.pb")
    want = dict(zip([o.name for o in model.graph.output], onnxruntime_run(model, feeds)))
    for k, o in enumerate(model.graph.output):
        onnx.save_tensor(numpy_helper.from_array(want[o.name], o.name), data / f"output_{k}.pb")
    return tmp_path, model, feeds, want


@prepared
def without_others(folder):
    mixed(folder)
    return [["run", "m.onnx", "x.npy", "c.npy", "-o", "o/"]]


def test_without_others_the_refusal_counts_the_nodes_and_names_the_flag(ran):
    folder, [r] = ran["without_others"]
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert ("m.onnx: 4 node(s) onnxop does not run: Relu x1, If x1, Add (float) x1, com.microsoft.Gelu x1; "
            "--others onnxruntime runs them on onnxruntime (an If on the host, the branch it takes split the same "
            "way) (--others reference: on onnx.reference)") in r.stderr
    assert not (folder / "o").exists()


@prepared
def every_input_form(folder):
    data = folder / "test_data_set_0"
    return mixed(folder), [  # in order
        ["run", "m.onnx", "--input", "c=c.npy", "--input", "x=x.npy", "--others", "onnxruntime", "-o", "o/", "--json"],
        ["run", "m.onnx", data, "--others", "onnxruntime", "--check", data],
        ["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "--check", "o"],
        ["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "-o", "all.npz"],
    ]


def test_others_onnxruntime_equals_onnxruntime_in_every_input_form(ran):
    (folder, model, feeds, want), (r, checked, by_folder, npz) = ran["every_input_form"]
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ran"] == {"onnxop": {"Reshape": 1, "Transpose": 1}, "host": {"If": 1},  # c: its then_branch's Neg
                          "onnxruntime": {"Add": 1, "Neg": 1, "Relu": 1, "com.microsoft.Gelu": 1}}
    assert {g["runtime"] for g in doc["regions"]} == {"onnxruntime", "onnxop", "host"}
    assert doc["transfers"]["uploaded"] > 0 and doc["transfers"]["read_back"] > 0
    assert sorted(p.name for p in (folder / "o").iterdir()) == sorted(f"{file_stem(n)}.npy" for n in want)
    for n, w in want.items():
        assert np.load(folder / "o" / f"{file_stem(n)}.npy").tobytes() == w.tobytes(), n
    assert (folder / "o" / "out%2Fput%3A0.npy").is_file()
    r = checked
    assert r.returncode == 0 and "3 output(s) equal" in r.stdout, r.stderr
    assert "onnxop (WebGPU): 2 (Reshape x1, Transpose x1)" in r.stdout
    r = by_folder
    assert r.returncode == 0 and "equal o's files, bit for bit" in r.stdout, r.stderr  # a folder of named files
    r = npz
    assert r.returncode == 0, r.stderr
    with np.load(folder / "all.npz") as z:
        assert {n: z[n].tobytes() for n in z.files} == {n: w.tobytes() for n, w in want.items()}


@prepared
def with_reference(tmp_path):
    onnx.save(mixed_model(contrib=False), tmp_path / "m.onnx")
    x = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c.npy", np.array(False))
    return (tmp_path, x), [["run", "m.onnx", "x.npy", "c.npy", "--others", "reference", "-o", "o.npz"]]


def test_others_reference_equals_onnx_reference(ran):
    from onnx.reference import ReferenceEvaluator

    (tmp_path, x), [r] = ran["with_reference"]
    model = mixed_model(contrib=False)
    assert r.returncode == 0, r.stderr
    want = ReferenceEvaluator(sorted_copy(model)).run(None, {"x": x, "c": np.array(False)})
    with np.load(tmp_path / "o.npz") as z:
        for o, w in zip(model.graph.output, want):
            assert z[o.name].tobytes() == w.tobytes(), o.name


NAMES = ["a", "t", "r", OUT, "branch", "g"]


@prepared
def verify_and_dump(folder):
    """The dump, a compare of it with onnxruntime's values of every value (written first), --verify's line."""
    _, model, feeds, _ = mixed(folder)
    theirs = folder / "theirs"
    theirs.mkdir()
    every = dict(zip(NAMES, onnxruntime_run(model, feeds, NAMES)))
    every["tn"] = every["branch"]
    for n in every:
        np.save(theirs / f"{file_stem(n)}.npy", every[n])
    return [["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "--verify", "--dump", "d", "--json"],
            ["compare", "d", "theirs"],
            ["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "--verify"]]


def test_verify_and_dump_write_every_value_as_onnxruntime_makes_it(ran):
    folder, (r, compared, verified) = ran["verify_and_dump"]
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verified"] == [{"op": "Reshape", "runtime": "onnxruntime", "nodes": 1},
                               {"op": "Transpose", "runtime": "onnxruntime", "nodes": 1}]
    assert sorted(doc["dumped"]) == sorted([*NAMES, "tn"])  # the then_branch's value too (c is true)
    r = compared
    assert r.returncode == 0, r.stdout + r.stderr
    r = verified
    assert "Verified 2 node(s) bit for bit: Reshape x1 on onnxruntime, Transpose x1 on onnxruntime" in r.stdout


@prepared
def dump_refusals(tmp_path):
    nodes = [helper.make_node("Identity", ["x"], ["A"]), helper.make_node("Identity", ["A"], ["a"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2])],
                                                [helper.make_tensor_value_info("a", F, None)]),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    # -o's names meet (the graph input x and the value X) where --dump's, the values nodes make, do not
    outputs = [helper.make_tensor_value_info(n, F, [2]) for n in ("x", "X")]
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Identity", ["x"], ["X"])], "g", outputs[:1], outputs),
                                opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m2.onnx")
    return [["run", "m.onnx", "x.npy", "--dump", "d"], ["run", "m.onnx", "x.npy", "--dump", "x.npy"],
            ["run", "m2.onnx", "x.npy", "--dump", "d2", "-o", "o/"]]


def test_dump_refuses_names_that_meet_before_anything_runs(ran):
    tmp_path, (r, not_folder, outputs_meet) = ran["dump_refusals"]
    assert outputs_meet.returncode == 2 and "-o o: values 'x' and 'X' would be one file" in outputs_meet.stderr
    assert not (tmp_path / "d2").exists() and not (tmp_path / "o").exists()
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--dump: values 'A' and 'a' would be one file" in r.stderr
    assert not (tmp_path / "d").exists()  # the names are checked before the folder is made (it was left empty)
    r = not_folder
    assert r.returncode == 2 and "--dump x.npy: not a folder" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_missing_onnxruntime_is_one_line(tmp_path):
    """A process of its own: onnxruntime hidden by $PYTHONPATH, which the interpreter reads at its start."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    mixed(folder)
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no onnxruntime here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"))
    r = onnxop("run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "-o", "o/", cwd=folder, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--others onnxruntime needs the onnxruntime package" in r.stderr and "onnxop[models]" in r.stderr
    assert not (folder / "o").exists() or not any((folder / "o").iterdir())


def test_an_error_onnxruntime_logs_is_still_one_line(tmp_path):
    """onnxruntime's logger wrote its ERROR lines (colour codes and all) to stderr before onnxop's one line when a
    session failed to initialise (StringNormalizer of a locale the system lacks, as the onnx wheel's
    test_strnorm_model_* are where en_US.UTF-8 is not installed); its exception is what the line names. A process of
    its own: onnxruntime writes from C++ to the process's stderr."""
    nodes = [helper.make_node("Identity", ["x"], ["t"]),
             helper.make_node("StringNormalizer", ["t"], ["y"], case_change_action="LOWER", locale="xx_XX.nowhere")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.array(["A", "B"]))
    r = onnxop("run", "m.onnx", "x.npy", "--others", "onnxruntime", "-o", "y.npy", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "\x1b" not in r.stderr, r.stderr
    assert r.stderr.startswith("onnxop: error: onnxruntime (CPU) region of 1 node(s) (StringNormalizer x1): ")
    assert not (tmp_path / "y.npy").exists()

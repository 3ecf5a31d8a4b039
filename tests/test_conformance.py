"""The official ONNX backend node tests for Flatten and Unsqueeze, generated
by onnx's own machinery (onnx.backend.test.case.node), run through
``onnxop conformance`` and through ``flatten``/``unsqueeze`` on their .pb
files; a tampered case fails; onnx's shipped pytorch-operator tests run too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import cli
from onnxop_cli.errors import ExitCode
from references import load_pb, node_tests_module, same_bits, to_array

ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"


@pytest.fixture(scope="session")
def official(tmp_path_factory) -> Path:
    """onnx's Flatten and Unsqueeze node tests, written as onnx writes node tests."""
    out = tmp_path_factory.mktemp("node")
    module = node_tests_module()
    for case in module.node_testcases():
        module.write_case(case, out)
    return out


def official_names() -> list[str]:
    return sorted(c.name for c in node_tests_module().node_testcases())


def test_the_official_cases_are_all_there():
    names = official_names()
    assert len([n for n in names if n.startswith("test_flatten")]) == 9
    assert len([n for n in names if n.startswith("test_unsqueeze")]) == 7


def test_conformance_passes_every_official_case(backend, official, capsys):
    code, out, err = cli(capsys, "conformance", official, "-b", backend)
    assert code == ExitCode.SUCCESS, err
    lines = out.splitlines()
    assert lines[0].split() == ["case", "operator", "opset", "data", "sets", "result"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert sorted(rows) == official_names()
    for name, (operator, opset, sets, result) in rows.items():
        assert operator == ("Flatten-25" if "flatten" in name else "Unsqueeze-25")
        assert (opset, sets, result) == ("25", "1", "passed"), name
    assert lines[-1] == f"{len(rows)} passed, 0 failed, 0 skipped"


def test_one_case_folder_can_be_given_directly(backend, official, capsys):
    code, out, _ = cli(capsys, "conformance", official / "test_unsqueeze_unsorted_axes", "-b", backend)
    assert code == 0
    assert out.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"


@pytest.mark.parametrize("name", official_names())
def test_flatten_and_unsqueeze_on_the_official_pb_files(backend, official, tmp_path, capsys, name):
    case = official / name
    node = onnx.load(str(case / "model.onnx")).graph.node[0]
    data = case / "test_data_set_0"
    if node.op_type == "Flatten":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        argv = ["flatten", data / "input_0.pb", *(["--axis", attrs["axis"]] if "axis" in attrs else [])]
    else:
        axes = to_array(load_pb(data / "input_1.pb"))
        argv = ["unsqueeze", data / "input_0.pb", "--axes", ",".join(str(int(a)) for a in axes)]
    code, _, err = cli(capsys, *argv, "-o", tmp_path / "out.pb", "-b", backend)
    assert code == 0, err
    got, expected = load_pb(tmp_path / "out.pb"), load_pb(data / "output_0.pb")
    assert list(got.dims) == list(expected.dims) and got.data_type == expected.data_type
    assert same_bits(to_array(got), to_array(expected))
    assert got.raw_data == expected.raw_data


def tamper(official: Path, tmp_path: Path, name: str) -> Path:
    case = tmp_path / name
    shutil.copytree(official / name, case)
    return case


def test_a_tampered_output_fails(backend, official, tmp_path, capsys):
    case = tamper(official, tmp_path, "test_flatten_axis2")
    expected = load_pb(case / "test_data_set_0" / "output_0.pb")
    values = to_array(expected).copy()
    values.reshape(-1).view(np.uint32)[7] ^= 1  # one bit of one element
    (case / "test_data_set_0" / "output_0.pb").write_bytes(numpy_helper.from_array(values, "b").SerializeToString())
    code, out, _ = cli(capsys, "conformance", tmp_path, "-b", backend)
    assert code == ExitCode.ERROR
    row = out.splitlines()[1]
    assert row.split()[:5] == ["test_flatten_axis2", "Flatten-25", "25", "1", "failed:"]
    # flat index 7 of the (6, 20) output: named as doc-examples names a value
    want, got = (np.float32(v.reshape(6, 20)[0, 7]) for v in (values, to_array(expected)))  # tampered, true
    assert row.endswith(f"test_data_set_0: 1 of 120 elements differ; first b[0, 7] = {got!s}, expected {want!s}")
    assert out.splitlines()[-1] == "0 passed, 1 failed, 0 skipped"
    code, out, _ = cli(capsys, "conformance", tmp_path, "-b", backend, "--json")
    (case_doc,) = json.loads(out)["cases"]
    assert case_doc["detail"] == f"test_data_set_0: 1 of 120 elements differ; first b[0, 7] = {got!s}, expected {want!s}"
    assert case_doc["opset"] == 25 and case_doc["data_sets"] == 1


def test_a_tampered_attribute_fails_and_the_others_still_run(backend, official, tmp_path, capsys):
    case = tamper(official, tmp_path, "test_flatten_axis1")
    tamper(official, tmp_path, "test_unsqueeze_two_axes")
    model = onnx.load(str(case / "model.onnx"))
    model.graph.node[0].attribute[0].i = 2
    onnx.save(model, str(case / "model.onnx"))
    code, out, _ = cli(capsys, "conformance", tmp_path, "-b", backend)
    assert code == ExitCode.ERROR
    assert "failed: test_data_set_0: shape (6, 20) != expected (2, 60)" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed, 0 skipped"


def test_onnx_shipped_pytorch_operator_tests(backend, capsys):
    """Flatten-1 models at opset 6 pass; the other operators are skipped with the reason."""
    code, out, _ = cli(capsys, "conformance", ONNX_DATA / "pytorch-operator", "-b", backend)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    for name in ("test_operator_flatten", "test_operator_view"):
        assert rows[name].split()[1:5] == ["Flatten-1", "6", "1", "passed"]
    assert "skipped: operator Conv; onnxop runs Flatten and Unsqueeze" in rows["test_operator_conv"]
    assert "skipped: 2 nodes (Add, Mul); onnxop runs single-node Flatten and Unsqueeze models" in rows[
        "test_operator_non_float_params"]
    assert out.splitlines()[-1].startswith("2 passed, 0 failed, ")


def write_unsqueeze_case(folder: Path, opset: int, axes, x: np.ndarray, *, initializer=False) -> None:
    """A node test in the backend layout for an older opset (axes an attribute
    before 13, an input -- here optionally an initializer -- from 13)."""
    folder.mkdir(parents=True)
    y = np.expand_dims(x, tuple(axes))
    inputs = [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)]
    inits = []
    if opset < 13:
        node = helper.make_node("Unsqueeze", ["x"], ["y"], axes=list(axes))
    else:
        node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"])
        if initializer:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        else:
            inputs.append(helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [len(axes)]))
    outputs = [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(y.dtype), y.shape)]
    graph = helper.make_graph([node], folder.name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, str(folder / "model.onnx"))
    data = folder / "test_data_set_0"
    data.mkdir()
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    if opset >= 13 and not initializer:
        (data / "input_1.pb").write_bytes(numpy_helper.from_array(np.array(axes, np.int64), "axes").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(y, "y").SerializeToString())


def test_older_opsets_take_axes_from_the_attribute_or_an_initializer(backend, tmp_path, capsys, rng):
    x = rng.integers(-100, 100, (3, 4)).astype(np.int16)
    write_unsqueeze_case(tmp_path / "v1", 1, [0, 3], x)
    write_unsqueeze_case(tmp_path / "v11", 11, [-1], x)
    write_unsqueeze_case(tmp_path / "v13_init", 13, [1], x, initializer=True)
    write_unsqueeze_case(tmp_path / "v10_negative", 10, [-1], x)
    code, out, _ = cli(capsys, "conformance", tmp_path, "-b", backend)
    rows = {line.split()[0]: line.split(maxsplit=4)[1:] for line in out.splitlines()[1:-1]}
    assert rows["v1"][:4] == ["Unsqueeze-1", "1", "1", "passed"]
    assert rows["v11"][:4] == ["Unsqueeze-11", "11", "1", "passed"]
    assert rows["v13_init"][:4] == ["Unsqueeze-13", "13", "1", "passed"]
    assert rows["v10_negative"][3].startswith("failed: test_data_set_0: Unsqueeze: axis -1 is out of range [0, 2]")
    assert code == ExitCode.ERROR


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: None, "{p}/missing: no such folder"),
        (lambda p: (p / "empty").mkdir(), "{p}/empty: no ONNX node tests found (folders holding model.onnx)"),
    ],
)
def test_nothing_to_run_is_a_usage_error(tmp_path, capsys, make, message):
    make(tmp_path)
    target = tmp_path / ("missing" if "missing" in message else "empty")
    code, out, err = cli(capsys, "conformance", target)
    assert code == ExitCode.USAGE
    assert err == f"onnxop: error: {message.format(p=tmp_path)}\n" and out == ""

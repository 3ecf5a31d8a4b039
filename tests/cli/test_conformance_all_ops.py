"""The official node tests of the operators with tensor inputs (Concat,
Split, Pad, Where, ...) through ``onnxop conformance``: all there, all
passed, every output compared; and a tampered output fails."""

from __future__ import annotations

import pytest
from onnx import numpy_helper

from conftest import cli
from onnxop_cli.docs.nodetests import node_testcases, write_case
from onnxop_cli.ops import SPECS
from onnxop_cli.ops.tensor_op import TensorOp

TENSOR_OPS = sorted(s.op_type for s in SPECS.values() if issubclass(s.versions[0], TensorOp))
COUNTS = {"Concat": 12, "Split": 16, "Pad": 6, "Where": 2, "Trilu": 18, "Shape": 11, "Size": 2,
          "ConstantOfShape": 3, "EyeLike": 3, "CenterCropPad": 6, "Compress": 5, "OneHot": 6, "BitCast": 10,
          "NonZero": 1, "Resize": 39}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    out = tmp_path_factory.mktemp("tensor-op-node")
    found = node_testcases(TENSOR_OPS)
    for case in found:
        write_case(case, out)
    return out, found


def test_the_official_cases_are_there(cases):
    _, found = cases
    counts = {op: sum(c.model.graph.node[0].op_type == op for c in found) for op in COUNTS}
    assert counts == COUNTS


def test_conformance_passes_every_tensor_operator_case(backend, cases, capsys):
    folder, found = cases
    code, out, err = cli(capsys, "conformance", folder, "-b", backend)
    assert code == 0, err
    lines = out.splitlines()
    rows = [line.split() for line in lines[1 : lines.index("")]]  # then a line per operator, and the total
    assert len(rows) == len(found)
    # the integer operators' float and string cases, Resize's linear and cubic ones, are skipped as out of scope (tests/gpu/test_elementwise_*)
    scoped = [r for r in rows if r[4] == "skipped:" and " ".join(r[5:]).endswith("out of scope")]
    assert all(r[4] == "passed" for r in rows if r not in scoped), [r for r in rows if r[4] != "passed"]
    assert out.splitlines()[-1] == f"{len(found) - len(scoped)} passed, 0 failed, {len(scoped)} skipped"


def test_a_tampered_second_output_fails(backend, cases, capsys, tmp_path):
    import shutil

    folder, _ = cases
    case = tmp_path / "test_split_variable_parts_1d_opset18"
    shutil.copytree(folder / case.name, case)
    pb = case / "test_data_set_0" / "output_1.pb"
    import onnx

    proto = numpy_helper.to_array(onnx.load_tensor_from_string(pb.read_bytes())).copy()
    proto.reshape(-1)[-1] += 1
    pb.write_bytes(numpy_helper.from_array(proto, "output_2").SerializeToString())
    code, out, _ = cli(capsys, "conformance", case, "-b", backend)
    assert code != 0
    assert "wrong: test_data_set_0: 1 of 4 elements differ; first output_2[3]" in out

"""The official node tests of the operators with tensor inputs (Concat,
Split, Pad, Where, ...): all there, and a tampered output fails. Each
passes, every output compared, in the run of every official case
(tests/cli/test_conformance.py's without a folder)."""

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
def cases():
    return node_testcases(TENSOR_OPS)


def test_the_official_cases_are_there(cases):
    counts = {op: sum(c.model.graph.node[0].op_type == op for c in cases) for op in COUNTS}
    assert counts == COUNTS


def test_a_tampered_second_output_fails(backend, cases, capsys, tmp_path):
    case = write_case(next(c for c in cases if c.name == "test_split_variable_parts_1d_opset18"), tmp_path)
    pb = case / "test_data_set_0" / "output_1.pb"
    import onnx

    proto = numpy_helper.to_array(onnx.load_tensor_from_string(pb.read_bytes())).copy()
    proto.reshape(-1)[-1] += 1
    pb.write_bytes(numpy_helper.from_array(proto, "output_2").SerializeToString())
    code, out, _ = cli(capsys, "conformance", case, "-b", backend)
    assert code != 0
    assert "wrong: test_data_set_0: 1 of 4 elements differ; first output_2[3]" in out

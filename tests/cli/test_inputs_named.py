"""What an input is named in a message: an optional, a sequence (a file or
stdin), a segmented tensor, a folder, a model with no initializers.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

from commands import run_commands
from conftest import cli, error_of


def node_test(cwd, kind):
    """A node-test folder whose model declares input 0 as ``kind`` (an optional or a sequence)."""
    elem = helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [3])
    typ = helper.make_optional_type_proto(elem) if kind == "optional" else helper.make_sequence_type_proto(elem)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_value_info("x", typ)], [helper.make_value_info("y", typ)])
    os.makedirs(cwd / "t" / "test_data_set_0")
    onnx.save(helper.make_model(graph), str(cwd / "t" / "model.onnx"))
    return cwd / "t" / "test_data_set_0" / "input_0.pb"


def test_an_optional_pb_is_named_an_optional(cwd, capsys):
    path = node_test(cwd, "optional")
    path.write_bytes(numpy_helper.from_optional(np.arange(3, dtype=np.float32), name="opt_in").SerializeToString())
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err) == (
        f"{path}: holds an optional 'opt_in' holding a tensor (an ONNX OptionalProto or SequenceProto), "
        "not a tensor; onnxop reads one TensorProto per .pb"
    )
    (cwd / "alone.pb").write_bytes(path.read_bytes())  # no model to ask: both are named
    code, _, err = cli(capsys, "show", "alone.pb")
    assert code == 2 and "holds an optional (or a sequence of at most one) 'opt_in' holding a tensor" in error_of(err)
    assert "111, 112, 116" not in err


def test_a_sequence_pb_is_named_a_sequence(cwd, capsys):
    path = node_test(cwd, "sequence")
    seq = numpy_helper.from_list([np.ones(3, np.float32), np.zeros(3, np.float32)], name="seq_in")
    path.write_bytes(seq.SerializeToString())
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err).startswith(f"{path}: holds a sequence 'seq_in' of 2 tensors")
    assert "segmented" not in err
    one = numpy_helper.from_list([np.ones(3, np.float32)], name="s")
    path.write_bytes(one.SerializeToString())  # one element: the model says it is a sequence
    code, _, err = cli(capsys, "show", path)
    assert code == 2 and error_of(err).startswith(f"{path}: holds a sequence 's' of 1 tensors")


def test_a_sequence_on_stdin_is_named_too(tmp_path):
    seq = numpy_helper.from_list([np.ones(3, np.float32), np.zeros(3, np.float32)], name="seq_in")
    (done,) = run_commands([(tmp_path, ["show", "-"], seq.SerializeToString())], text=False)
    assert done.returncode == 2 and b"-: holds a sequence 'seq_in' of 2 tensors" in done.stderr


def test_a_real_segmented_tensor_keeps_its_message(cwd, capsys):
    proto = onnx.TensorProto(dims=[2], data_type=1, segment=onnx.TensorProto.Segment(begin=0, end=1))
    (cwd / "x.pb").write_bytes(proto.SerializeToString())
    code, _, err = cli(capsys, "show", "x.pb")
    assert code == 2 and error_of(err) == "x.pb: segmented tensors are not supported"


def test_a_folder_is_named_a_folder(cwd, capsys):
    os.mkdir("data")
    code, _, err = cli(capsys, "show", "data")
    assert code == 2 and error_of(err) == "data: is a folder, not a tensor file; give the files in it (example: data/*.pb)"
    np.save("a.npy", np.ones(2, np.float32))
    code, _, err = cli(capsys, "transpose", "a.npy", "-o", "newdir")
    assert code == 2 and error_of(err) == (
        "newdir: a name without a suffix names no format, and no folder has this name; "
        "give a .npy, .npz, .pb file (or, for -o, an existing folder)"
    )


def test_a_model_with_no_initializers_lists_its_inputs_and_outputs(cwd, capsys):
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, "N"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), "m.onnx")
    code, out, _ = cli(capsys, "show", "m.onnx")
    assert code == 0 and out.splitlines() == [
        "m.onnx: opset 21, 1 node, 0 initializers",
        "  inputs:",
        "    x: shape=(2, 'N'), dtype=float32",
        "  outputs:",
        "    y: shape=('N', 2), dtype=float32",
        "  (no initializers: the model's inputs and outputs)",
    ]
    code, _, err = cli(capsys, "transpose", "m.onnx")  # an operator still needs a tensor
    assert code == 2 and error_of(err) == "m.onnx: the model holds no initializers"

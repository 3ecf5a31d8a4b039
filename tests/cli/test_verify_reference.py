"""``run --verify`` where onnx.reference judges a node alone (onnxruntime has no kernel for its type) or
departs from the spec: the node is held to ONNX's rule as onnxop and onnxruntime read it, so a right
run is not stopped. Each case was a divergence (exit 1) on a run onnxop made right: a copy onnx.reference
computes by arithmetic (Expand, OneHot, nearest Resize, Cast to its own type), a clamp it reads its own
way (Slice, Shape), an empty axes (Squeeze), a node it has no kernel for (Scatter, a Resize of strings).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import cli


@pytest.mark.parametrize("op, x, want", [
    # a negative step from a start before the axis: ONNX clamps it to 0, so x[-3:-3:-1] of two is x[0]
    ("Slice", np.array([0x3F80, 0x4000], np.uint16), np.array([0x3F80], np.uint16)),
    # a copy: the signalling NaN 0x7f81 stays one (onnx.reference multiplies by ones: 0x7fc1)
    ("Expand", np.array([0x7F81, 0x8000], np.uint16), np.array([[0x7F81, 0x8000]] * 2, np.uint16)),
])
def test_where_the_reference_alone_judges_it_is_held_to_the_spec(cwd, capsys, op, x, want):
    """onnxruntime has no Slice or Expand kernel for bfloat16, so onnx.reference alone judged them, and it
    departs from the spec on both: --verify stopped a right run with exit 1 ('onnxop made (1,) bfloat16,
    onnx.reference (0,) bfloat16'; 'onnxop 0x7f81, onnx.reference 0x7fc0'), a numpy RuntimeWarning on
    stderr before it. Found by scripts/fuzz_graphs.py (--path cli --others)."""
    import ml_dtypes

    consts = {"Slice": [("s", [-3]), ("e", [-3]), ("a", [0]), ("p", [-1])], "Expand": [("shape", [2, 2])]}[op]
    node = helper.make_node(op, ["x"] + [n for n, _ in consts], ["y"], name="n")
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
        [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in consts]),
        opset_imports=[helper.make_opsetid("", 18)]), "m.onnx")
    onnx.save_tensor(numpy_helper.from_array(x.view(ml_dtypes.bfloat16), "x"), "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "y.pb")
    assert code == 0, err
    assert f"Verified 1 node(s) bit for bit: {op} x1 on" in out and "Warning" not in err
    got = numpy_helper.to_array(onnx.load_tensor("y.pb"))
    assert got.view(np.uint16).tobytes() == want.tobytes() and got.shape == want.shape


@pytest.mark.parametrize("values", [np.array([-0.0, np.nan]), np.array([False, True])])
def test_a_one_hot_the_reference_alone_judges_is_a_copy_of_its_values(cwd, capsys, values):
    """OneHot of uint8 indices, which onnxruntime has no kernel for: onnx.reference computes hot * (on -
    off) + off, so an off value of -0.0 came out 0.0, every off value NaN where the on value is NaN,
    and bool values failed ('neither onnxruntime nor onnx.reference runs it'); --verify stopped the run."""
    node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="n")
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("i", TensorProto.UINT8, [3])],
        [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(values.dtype), None)],
        [numpy_helper.from_array(np.array(3, np.int64), "d"), numpy_helper.from_array(values, "v")]),
        opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    np.save("i.npy", np.array([0, 2, 1], np.uint8))
    code, out, err = cli(capsys, "run", "m.onnx", "i.npy", "--verify", "-o", "y.npy")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: OneHot x1 on" in out
    want = np.where(np.eye(3, dtype=bool)[[0, 2, 1]], values[1], values[0])
    assert np.load("y.npy").tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype, bits", [(np.float64, [0x8000000000000000, 0x7FF0000000000001, 1, 2]),
                                         (np.float16, [0x8000, 0x7C01, 1, 2])])
def test_a_nearest_resize_is_judged_as_a_copy(cwd, capsys, dtype, bits):
    """Resize's nearest mode copies; onnx.reference computes weights times values, so -0.0 came out
    0.0 and a NaN reached its neighbours (double: onnxruntime has no kernel, the reference alone
    judged), and where onnxruntime quiets a signalling NaN (float16) the reference agreed with it:
    --verify stopped a right run with exit 1 either way."""
    node = helper.make_node("Resize", ["x", "", "sc"], ["y"], name="n", mode="nearest")
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]),
        opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    x = np.array(bits, f"u{np.dtype(dtype).itemsize}").view(dtype).reshape(1, 1, 2, 2)
    np.save("x.npy", x)
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "y.npy")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Resize x1 on" in out
    assert np.load("y.npy").tobytes() == x.repeat(2, axis=2).repeat(2, axis=3).tobytes()


@pytest.mark.parametrize("elem", [TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.INT4])
def test_a_squeeze_of_empty_axes_is_judged_as_onnxop_and_onnxruntime_read_it(cwd, capsys, elem):
    """An empty axes tensor drops every size-1 axis in onnxop, as in onnxruntime (docs/cli-details.md);
    onnx.reference drops none, and judged alone (no onnxruntime kernel for these types) --verify
    stopped the run: 'onnxop made (3,) bfloat16, onnx.reference (1, 3, 1) bfloat16'."""
    import ml_dtypes

    node = helper.make_node("Squeeze", ["x", "a"], ["y"], name="n")
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, [1, 3, 1])],
        [helper.make_tensor_value_info("y", elem, None)], [numpy_helper.from_array(np.zeros(0, np.int64), "a")]),
        opset_imports=[helper.make_opsetid("", 21)]), "m.onnx")
    dtype = {TensorProto.BFLOAT16: ml_dtypes.bfloat16, TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
             TensorProto.INT4: ml_dtypes.int4}[elem]
    onnx.save_tensor(numpy_helper.from_array(np.arange(3).astype(dtype).reshape(1, 3, 1), "x"), "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "y.pb")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Squeeze x1 on" in out
    assert numpy_helper.to_array(onnx.load_tensor("y.pb")).shape == (3,)


@pytest.mark.parametrize("elem, dims, attrs, want", [
    (TensorProto.FLOAT8E5M2FNUZ, [1, 4], {"start": -2, "end": -3}, []),  # scripts/fuzz_graphs.py --draw wide, seed 32594
    (TensorProto.BFLOAT16, [2, 3, 4], {"end": -5}, []),
    (TensorProto.FLOAT8E4M3FN, [2, 3, 4], {"start": -9, "end": -1}, [2, 3]),
    (TensorProto.FLOAT, [2, 3, 4], {"end": -5}, []),
])
def test_a_shape_whose_end_is_below_minus_rank_is_judged_by_the_spec(cwd, capsys, elem, dims, attrs, want):
    """Shape-15's start and end are clamped to [0, rank] once a negative one has rank added: an end of -5 on
    rank 3 keeps no dimension, as onnxop and onnxruntime make it. onnx.reference slices to rank + end, which
    counts from the back again and keeps one; judged alone (no onnxruntime kernel for float8 or bfloat16),
    --verify stopped a right run: "node '' (Shape) output 'v3': onnxop made (0,) int64, onnx.reference (1,)"."""
    node = helper.make_node("Shape", ["x"], ["y"], **attrs)
    onnx.save(helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, dims)],
                                                  [helper.make_tensor_value_info("y", TensorProto.INT64, None)]),
                                opset_imports=[helper.make_opsetid("", 21)]), "m.onnx")
    x = numpy_helper.from_array(np.zeros(dims, np.float32), "x")
    if elem != TensorProto.FLOAT:
        x = helper.make_tensor("x", elem, dims, bytes(int(np.prod(dims)) * (2 if elem == TensorProto.BFLOAT16 else 1)),
                               raw=True)
    onnx.save_tensor(x, "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "y.npy")
    assert code == 0, err
    assert "Verified 1 node(s) bit for bit: Shape x1 on" in out
    assert np.load("y.npy").tolist() == want


@pytest.mark.parametrize("op", ["Cast", "CastLike"])
def test_a_cast_to_its_own_type_is_judged_as_its_input(cwd, capsys, op):
    """onnx.reference casts a float8 to float8 through float32, so a NaN's payload (float8e5m2 0x7d) came
    back canonical (0x7e), and with no onnxruntime kernel --verify stopped the run onnxop ran as a copy."""
    import ml_dtypes

    e5 = TensorProto.FLOAT8E5M2
    node = helper.make_node(op, ["x", "like"] if op == "CastLike" else ["x"], ["y"], name="n",
                            **({} if op == "CastLike" else {"to": e5}))
    like = [numpy_helper.from_array(np.zeros(1, ml_dtypes.float8_e5m2), "like")] if op == "CastLike" else []
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", e5, [4])], [helper.make_tensor_value_info("y", e5, None)],
        like), opset_imports=[helper.make_opsetid("", 21)]), "m.onnx")
    bits = np.array([0x7D, 0xFE, 0x80, 1], np.uint8)
    onnx.save_tensor(numpy_helper.from_array(bits.view(ml_dtypes.float8_e5m2), "x"), "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "y.pb")
    assert code == 0, err
    assert f"Verified 1 node(s) bit for bit: {op} x1 on" in out
    assert numpy_helper.to_array(onnx.load_tensor("y.pb")).view(np.uint8).tobytes() == bits.tobytes()


@pytest.mark.parametrize("op", ["Resize", "Scatter"])
def test_nodes_onnxruntime_has_no_kernel_for_are_verified(cwd, capsys, op):
    """A nearest Resize of strings (onnx.reference computes weights times values: 'could not convert
    string to float') and a Scatter-10 of complex128 (onnx.reference has no Scatter), which onnxruntime
    has no kernel for: --verify said 'neither onnxruntime nor onnx.reference runs it' and exited 1 on a
    run onnxop made right."""
    if op == "Resize":
        x = np.array([["a", "b"], ["c", "d"]], dtype=object)
        node = helper.make_node("Resize", ["x", "", "sc"], ["y"], name="n", mode="nearest")
        consts, opset, elem = [numpy_helper.from_array(np.array([1, 2], np.float32), "sc")], 13, TensorProto.STRING
        want = x.repeat(2, axis=1)
    else:
        x = np.array([[1 + 2j, 3], [4j, -0.0]], np.complex128)
        node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], name="n", axis=1)
        consts = [numpy_helper.from_array(np.array([[1], [0]], np.int64), "i"),
                  numpy_helper.from_array(np.array([[5j], [6]], np.complex128), "u")]
        opset, elem, want = 10, TensorProto.COMPLEX128, np.array([[1 + 2j, 5j], [6, -0.0]], np.complex128)
    onnx.save(helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, [2, 2])],
        [helper.make_tensor_value_info("y", elem, None)], consts),
        opset_imports=[helper.make_opsetid("", opset)]), "m.onnx")
    onnx.save_tensor(numpy_helper.from_array(x, "x"), "x.pb")
    code, out, err = cli(capsys, "run", "m.onnx", "x.pb", "--verify", "-o", "y.pb")
    assert code == 0, err
    assert f"Verified 1 node(s) bit for bit: {op} x1 on" in out
    got = numpy_helper.to_array(onnx.load_tensor("y.pb"))
    if op == "Resize":
        got = np.array([v.decode() if isinstance(v, bytes) else v for v in got.ravel()], object).reshape(got.shape)
    assert got.shape == want.shape and got.tolist() == want.tolist()


def test_where_onnxruntime_differs_and_the_reference_decides_the_difference_is_told(cwd, capsys):
    """A nearest Resize by 1/3 (torch's F.interpolate(scale_factor=1/3)): onnx.reference divides by the float32
    scale in float64 (1 / 0.33333334 = 2.9999999, floor 2), onnxruntime in float32 (3.0, floor 3), so its
    rows are 0, 3, 6 where onnxop's and onnx.reference's are 0, 2, 5. --verify passed the run with no word
    but 'Resize x1 on onnx.reference' (the label of a node onnxruntime has no kernel for), and the outputs
    differed from onnxruntime's own run of the model: now the summary and --json say so, naming the node."""
    import json

    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="third", mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 9, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 1 / 3, 1], np.float32), "sc")]),
        opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    np.save("x.npy", np.arange(9, dtype=np.float32).reshape(1, 1, 9, 1))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "-o", "y.npy")
    assert code == 0, err
    assert np.load("y.npy").reshape(-1).tolist() == [0, 2, 5]  # onnx.reference's rows
    assert ("onnxruntime differs from onnx.reference, which onnxop follows, on 1 of them, so the outputs can "
            "differ from onnxruntime's own run: node 0 'third' (Resize) output 'y': 2 of 3 elements differ; "
            "first [0, 0, 1, 0]: onnxop 0x40000000, onnxruntime 0x40400000") in out
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "--verify", "--json")
    assert code == 0, err
    assert json.loads(out)["onnxruntime_differs"] == [
        "node 0 'third' (Resize) output 'y': 2 of 3 elements differ; first [0, 0, 1, 0]: onnxop 0x40000000, "
        "onnxruntime 0x40400000"]

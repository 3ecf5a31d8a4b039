"""The view operators, pure and on the GPU, against numpy (and onnxruntime).

- Pure: for random shapes and parameters, each node's output shape and index
  map (evaluated over the source, C or Fortran order) equal numpy's
  transpose / broadcast_to / slicing / tile / reshape / squeeze and the spec's
  DepthToSpace formulas; invalid parameters are refused naming op and values.
- GPU: every ONNX type (random bits, NaN payloads, -0.0; strings on the host)
  through core.apply, byte-identical to numpy; Fortran-ordered and big-endian
  inputs compose with the op; onnxruntime's CPU kernels agree where they exist.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxop_cli.core import apply as core
from onnxop_cli.errors import OpError
from onnxop_cli.ops import Node, c_strides, check_type, f_strides, make_node, op_version
from onnxop_cli.core.tensor import DTYPES, MemoryBytes, Tensor, pack_subbyte
from viewcases import VIEW_OPS, draw_invalid, draw_shape, draw_valid

PURE = settings(max_examples=150, deadline=None, database=None)
GPU = settings(max_examples=4, deadline=None, database=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def evaluate(view, source: np.ndarray) -> np.ndarray:
    """The test's own reading of a view: index arithmetic over the flat source."""
    index = np.full(view.shape, view.offset, dtype=np.int64)
    for k, (d, s) in enumerate(zip(view.shape, view.strides)):
        index += (np.arange(d, dtype=np.int64) * s).reshape((d,) + (1,) * (len(view.shape) - k - 1))
    return source[index.reshape(-1)] if index.size else source[:0]


@pytest.mark.parametrize("op", VIEW_OPS)
@PURE
@given(data=st.data())
def test_the_index_map_is_numpys_result_in_c_and_fortran_order(op, data):
    shape = draw_shape(data, op)
    node, reference = draw_valid(data, op, shape)
    x = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    expected = reference(x)
    assert node.output_shape(shape) == expected.shape
    assert np.array_equal(evaluate(node.view(shape, c_strides(shape)), x.reshape(-1)), expected.reshape(-1))
    fortran = np.asfortranarray(x).ravel(order="K")  # the bytes of a Fortran-ordered file
    got = evaluate(node.view(shape, f_strides(shape)).simplified(), fortran)
    assert np.array_equal(got, expected.reshape(-1))


@pytest.mark.parametrize("op", [op for op in VIEW_OPS if op != "Identity"])
@PURE
@given(data=st.data())
def test_invalid_parameters_are_refused_naming_the_op_and_values(op, data):
    shape = draw_shape(data, op)
    node, text = draw_invalid(data, op, shape)
    with pytest.raises(OpError) as e:
        node.output_shape(shape)
    message = str(e.value)
    assert message.startswith(f"{op}: ") and text in message and "\n" not in message


# ------------------------------------------------------------------ GPU, every type


def random_tensor(rng: np.random.Generator, dtype, shape) -> Tensor:
    count = math.prod(shape)
    if dtype.is_string:
        words = np.array([f"s{i}-{rng.integers(1000)}".encode() for i in range(count)], dtype=object)
        return Tensor("x", shape, dtype, strings=words.reshape(shape))
    raw = rng.integers(0, 256, dtype.nbytes(count), dtype=np.uint8)
    if dtype.name == "bool":
        raw &= 1
    if dtype.is_packed and count * dtype.bits % 8:
        raw[-1] &= (1 << (count * dtype.bits % 8)) - 1  # ONNX's packers zero the pad bits
    if dtype.name.startswith(("float", "bfloat")) and dtype.bits >= 16 and count:
        raw.view(f"u{dtype.itemsize}")[0] = 1 << (dtype.bits - 1)  # -0.0 (random bits bring NaN payloads)
    return Tensor("x", shape, dtype, MemoryBytes(raw))


def output_bytes(tensor: Tensor) -> bytes:
    return tensor.data.to_array().tobytes()


def expected_bytes(values: np.ndarray, dtype) -> bytes:
    values = np.ascontiguousarray(values)
    return pack_subbyte(values, dtype).tobytes() if dtype.is_packed else values.tobytes()


ALLOWED = [(op, d) for op in VIEW_OPS for d in DTYPES if d.onnx_name in op_version(op).allowed_types()]
REFUSED = [(op, d) for op in VIEW_OPS for d in DTYPES if d.onnx_name not in op_version(op).allowed_types()]


def test_the_types_onnx_allows_run_and_the_rest_are_refused():
    """Expand, Slice, Tile, DepthToSpace and SpaceToDepth stop at opset 13's
    types in onnx.defs (no float8 or 4-bit types): refused, as the spec says."""
    assert len(ALLOWED) + len(REFUSED) == len(VIEW_OPS) * len(DTYPES)
    for op, dtype in REFUSED:
        assert op in ("Expand", "Slice", "Tile", "DepthToSpace", "SpaceToDepth")
        with pytest.raises(OpError, match=f"^{op}: no opset allows {dtype.name}$"):
            check_type(Node(op_version(op), opset=28), dtype)  # the type rule needs no parameters


# Each view op is a view (strides and an offset) read by the one strided gather or copy: in a matrix pass
# the first op runs each type (tests/matrix_subset.py); the views' own kernels fan out in test_gather.py
@pytest.mark.same_kernel("op")
@pytest.mark.parametrize("op,dtype", ALLOWED, ids=lambda v: v if isinstance(v, str) else v.name)
@GPU
@given(data=st.data())
def test_every_type_matches_numpy_bit_for_bit(backend, monkeypatch, op, dtype, data):
    monkeypatch.setenv("ONNXOP_POISON", "0xA5")
    shape = draw_shape(data, op)
    node, reference = draw_valid(data, op, shape)
    x = random_tensor(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), dtype, shape)
    result = core.apply(node, x, backend=backend)
    expected = reference(x.to_numpy() if not dtype.is_string else x.strings)
    assert result.output.shape == expected.shape
    if dtype.is_string:
        assert result.adapter == "host" and result.note == core.HOST_NOTE
        assert result.output.strings.tolist() == expected.tolist()
    else:
        assert result.adapter != "host"
        assert output_bytes(result.output) == expected_bytes(expected, dtype)


@pytest.mark.parametrize("layout", ["fortran", "big-endian", "both"])
@pytest.mark.parametrize("op", VIEW_OPS)
@pytest.mark.one_backend  # the view's composition; strided gathers of both layouts fan out in test_gather
@GPU
@given(data=st.data())
def test_fortran_and_big_endian_inputs_compose_with_the_op(backend, monkeypatch, op, layout, data):
    monkeypatch.setenv("ONNXOP_POISON", "0x5A")
    shape = draw_shape(data, op)
    node, reference = draw_valid(data, op, shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(0, 256, math.prod(shape) * 8, dtype=np.uint8).view(np.float64).reshape(shape)
    stored = x.astype(">f8") if layout != "fortran" else x
    stored = np.array(stored, order="F") if layout != "big-endian" else stored  # (asfortranarray makes 0-d 1-d)
    tensor = Tensor.from_numpy(stored, "x")
    got = core.apply(node, tensor, backend=backend).output.to_numpy()
    assert got.dtype == np.float64 and got.tobytes() == np.ascontiguousarray(reference(x)).tobytes()


# ------------------------------------------------------------------ onnxruntime

ORT_OPSET = 21  # an opset onnxruntime's CPU provider knows for every op here
NATIVE = [d for d in DTYPES if d.numpy_native and not d.is_string]


def ort_output(node, x: np.ndarray):
    """onnxruntime CPU's output for ``node`` (constant inputs as initializers),
    or None where it has no kernel for this type."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    onnx_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    inits = [numpy_helper.from_array(np.asarray(v, np.int64), n) for n, v in node.inputs.items()]
    names = ["x"] + [n if n in node.inputs else "" for n in node.op.inputs[1:]]
    while names[-1] == "":
        names.pop()
    proto = helper.make_node(node.op_type, names, ["y"])
    proto.attribute.extend(  # typed: an empty list still makes an INTS attribute
        helper.make_attribute(k, v, attr_type=onnx.AttributeProto.INTS if isinstance(v, list) else None)
        for k, v in node.attributes.items()
    )
    graph = helper.make_graph([proto], "g", [helper.make_tensor_value_info("x", onnx_type, None)],
                              [helper.make_tensor_value_info("y", onnx_type, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ORT_OPSET)])
    model.ir_version = 10
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - no kernel for this op and type
        if any(m in str(e) for m in ("NOT_IMPLEMENTED", "Could not find an implementation", "not currently registered")):
            return None
        raise
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("dtype", NATIVE, ids=lambda d: d.name)
@pytest.mark.parametrize("op", VIEW_OPS)
@pytest.mark.one_backend  # a second reference for the kernel path test_every_type_matches_numpy_bit_for_bit fans out
@GPU
@given(data=st.data())
def test_onnxruntime_agrees_bit_for_bit(backend, op, dtype, data):
    shape = draw_shape(data, op)
    if op == "Slice" and not shape:
        shape = (3,)  # onnxruntime cannot slice scalars (ONNX's reference can, and onnxop)
    node, _ = draw_valid(data, op, shape, opset=ORT_OPSET)
    x = random_tensor(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), dtype, shape)
    expected = ort_output(node, x.to_numpy())
    if expected is None:
        return
    got = core.apply(node, x, backend=backend).output
    assert got.shape == expected.shape
    ours, theirs = got.to_numpy().reshape(-1), np.ascontiguousarray(expected).reshape(-1)
    differ = ours.view(f"u{dtype.itemsize}") != theirs.view(f"u{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) \
        else (ours != theirs)
    if differ.any():
        # onnxruntime's float16 DepthToSpace/SpaceToDepth compute in float32, and
        # its float16 Tile (seen with repeats of 1: a signalling NaN 0x7D74 came
        # back as 0x7E00) quiets signalling NaNs too; every other element must be
        # the same bits (numpy, the reference, is checked bit for bit elsewhere)
        assert (dtype.name == "float16" and ("Space" in op or op == "Tile")), (op, dtype.name)
        assert np.isnan(ours[differ]).all() and np.isnan(theirs[differ]).all()


def test_onnxruntime_has_kernels_for_the_common_types():
    """The comparison above is not vacuous: onnxruntime runs every op on float32,
    and all but DepthToSpace/SpaceToDepth on int64 as well."""
    for op in VIEW_OPS:
        shape = (1, 4, 2, 2) if "Depth" in op else (2, 3)
        for name in ("float32",) if "Depth" in op else ("float32", "int64"):
            params = {"Reshape": {"shape": [-1]}, "Expand": {"shape": [2, 3]}, "Slice": {"starts": [0], "ends": [1]},
                      "Tile": {"repeats": [1, 2]}, "DepthToSpace": {"blocksize": 2},
                      "SpaceToDepth": {"blocksize": 1}}.get(op, {})
            node = make_node(op, ORT_OPSET, **params)
            assert ort_output(node, np.ones(shape, name)) is not None, (op, name)


# ------------------------------------------------------------------ older opsets


@PURE
@given(data=st.data())
def test_older_versions_keep_their_own_rules(data):
    """Slice-1 (attributes, no steps), Tile-1 (tiles along one axis),
    Reshape-1 (shape attribute), Flatten-9 (no negative axes) give numpy's
    results too, and refuse what their version does not have."""
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), label="shape")
    r = len(shape)
    x = np.arange(math.prod(shape)).reshape(shape)
    axis = data.draw(st.integers(0, r - 1), label="axis")
    start, end = data.draw(st.integers(-6, 6)), data.draw(st.integers(-6, 6))
    index = tuple(slice(start, end) if k == axis else slice(None) for k in range(r))
    for node in (make_node("Slice", 9, starts=[start], ends=[end], axes=[axis]),
                 make_node("Slice", 10, starts=[start], ends=[end], axes=[axis])):
        assert np.array_equal(evaluate(node.view(shape, c_strides(shape)), x.reshape(-1)), x[index].reshape(-1))
    assert "starts" in make_node("Slice", 9, starts=[0], ends=[1]).attributes
    tiles = data.draw(st.integers(0, 3))
    node = make_node("Tile", 5, tiles=tiles, axis=axis)
    expected = np.tile(x, [tiles if k == axis else 1 for k in range(r)])
    assert node.output_shape(shape) == expected.shape
    assert np.array_equal(evaluate(node.view(shape, c_strides(shape)), x.reshape(-1)), expected.reshape(-1))
    assert make_node("Reshape", 4, shape=[-1]).output_shape(shape) == (x.size,)
    with pytest.raises(OpError, match="negative axes need opset 11; this is Flatten-9"):
        make_node("Flatten", 10, axis=-1).output_shape(shape)
    assert make_node("Slice", 10, starts=[0], ends=[1], axes=[-1]).output_shape(shape) == shape[:-1] + (1,)

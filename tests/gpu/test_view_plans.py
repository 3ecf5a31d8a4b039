"""A view operator is a one-region plan (ops/base.py ``OpVersion.plan``).

- Pure: for random shapes and parameters, every view operator's plan is one
  output whose only region is its ``view`` over the input as it lies (C or
  Fortran strides, an offset into a larger base), of the rule's output shape.
- GPU: a view operator's node through the tensor operators' entry
  (core/apply_tensors.py ``apply_node``) gives the bytes core.apply gives,
  for every type (strings on the host), Fortran-ordered and big-endian inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxop_cli.core import apply as core
from onnxop_cli.core.apply_tensors import apply_node
from onnxop_cli.core.region import Load
from onnxop_cli.core.tensor import DTYPES, Tensor
from onnxop_cli.ops import SPECS, c_strides, f_strides, op_version
from onnxop_cli.ops.base import OpVersion
from onnxop_cli.ops.plan import Arg
from onnxop_cli.ops.tensor_op import TensorOp
from viewcases import VIEW_OPS, draw_shape, draw_valid

PURE = settings(max_examples=60, deadline=None, database=None)
GPU = settings(max_examples=3, deadline=None, database=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def test_every_view_operator_has_the_one_derived_plan():
    """No view operator writes (or shadows) its own plan: it is derived once, from ``view``."""
    views = [v for spec in SPECS.values() for v in spec.versions if not issubclass(v, TensorOp)]
    assert {v.op_type for v in views} >= set(VIEW_OPS) | {"Flatten", "Unsqueeze"}
    for version in views:
        assert version.plan.__func__ is OpVersion.plan.__func__, version.__name__


@pytest.mark.parametrize("op", VIEW_OPS)
@PURE
@given(data=st.data())
def test_a_view_operators_plan_is_its_view_as_one_region(op, data):
    shape = draw_shape(data, op)
    node, reference = draw_valid(data, op, shape)
    dtype = next(d for d in DTYPES if d.name == "float32")
    for strides, offset in ((c_strides(shape), 0), (f_strides(shape), 0), (c_strides(shape), 7)):
        arg = Arg("x", shape, dtype, None, strides, offset)  # type: ignore[arg-type]
        (plan,) = node.op.plan(node, [arg])
        assert plan.view == node.view(shape, strides, offset)
        assert plan.shape == reference(np.zeros(shape)).shape == node.output_shape(shape)
        assert (plan.kernel, plan.dtype, plan.name) == ("view", dtype, node.op.outputs[0])
        assert plan.runner is plan.values is None
        (region,) = plan.pieces  # one region: the whole output, row-major, read through the view
        # a plain load of input 0: no fill, mask, triangle or other side
        assert region.shape == plan.shape and region.dst.is_identity()
        assert isinstance(region.value, Load) and region.value.input == 0


LAYOUTS = ("C", "F", "big-endian")
CASES = [(op, d) for op in VIEW_OPS for d in DTYPES
         if d.onnx_name in op_version(op).allowed_types() and d.name in ("float32", "int8", "bool", "string",
                                                                            "float16", "int64")]


def _input(rng: np.random.Generator, dtype, shape, layout: str) -> Tensor:
    if dtype.is_string:
        words = np.array([f"s{i}-{rng.integers(1000)}".encode() for i in range(math.prod(shape))], dtype=object)
        return Tensor("x", shape, dtype, strings=words.reshape(shape))
    x = rng.integers(0, 256, math.prod(shape) * dtype.numpy_itemsize, dtype=np.uint8).view(dtype.numpy)
    x = (x & 1).astype(bool) if dtype.name == "bool" else x
    x = x.reshape(shape)
    if layout == "F" and x.ndim > 1:  # numpy makes a 0-d array 1-d
        x = np.asfortranarray(x)
    elif layout == "big-endian" and x.dtype.itemsize > 1:
        x = x.astype(x.dtype.newbyteorder(">"))
    return Tensor.from_numpy(x, name="x")


# Two front ends of one plan agree (core.apply is apply_node's): host code. Its kernels (the strided gather, the
# copy) and their engine paths run on every backend in test_view_ops.py and test_gather.py.
@pytest.mark.one_backend
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op,dtype", CASES, ids=lambda v: v if isinstance(v, str) else v.name)
@GPU
@given(data=st.data())
def test_a_view_node_through_the_tensor_entry_gives_core_applys_bytes(backend, op, dtype, layout, data):
    shape = draw_shape(data, op)
    node, _ = draw_valid(data, op, shape)
    x = _input(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), dtype, shape, layout)
    one = core.apply(node, x, backend=backend)
    many = apply_node(node, [x], backend=backend)
    (out,) = many.outputs
    assert out.shape == one.output.shape and many.plans[0].kernel == "view"
    if dtype.is_string:
        assert many.adapter == one.adapter == "host"
        assert out.strings.tolist() == one.output.strings.tolist()
    else:  # core.apply is apply_node's front end: a view opens the device, even for an empty output
        assert one.adapter != "host" and many.adapter == one.adapter
        assert out.data.to_array().tobytes() == one.output.data.to_array().tobytes()

"""Every operator reads its inputs where they lie: each of onnx's own node
tests that onnxop runs, fed the same values as a Fortran-order array of
big-endian elements (numpy's types of more than a byte; Fortran order from
rank 2), gives the test's expected outputs bit for bit. An operator that
took an input's bytes as they are (a Cast to its own type once did) returns
its elements transposed or byte-swapped here, where its C-order,
little-endian twin in test_backend.py passes.

The subject is every operator's plan and the executor's choice of path, not
one kernel: one backend (the kernels' own layout tests fan out).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnxop_cli import backend as onnx_backend
from onnxop_cli.docs.nodetests import node_testcases

ONE_BACKEND = True


def relaid(x) -> np.ndarray:
    """``x``'s values as a Fortran-order array of big-endian elements, where numpy can hold them so."""
    x = _array(x)
    if x.dtype.kind in "iufc" and x.dtype.itemsize > 1 and x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder(">"))
    return np.asfortranarray(x) if x.ndim > 1 and x.dtype != object else x


def _array(x) -> np.ndarray:
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def _laid_out(case) -> bool:
    """Whether some input of some data set lies otherwise when relaid (not only bytes, strings or scalars)."""
    return any(relaid(x).strides != _array(x).strides or not relaid(x).dtype.isnative
               for inputs, _ in case.data_sets for x in inputs)


def _own_type(op_type: str, x: np.ndarray, **attrs) -> SimpleNamespace:
    """A case onnx has none of: ``op_type`` to ``x``'s own type (a copy of its elements), expected by onnx.reference."""
    names = ["x", "like"][: 2 if op_type == "CastLike" else 1]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    kind = helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [x, x[:1]][: len(names)]
    graph = helper.make_graph([node], op_type, [helper.make_tensor_value_info(n, kind, v.shape)
                                                for n, v in zip(names, inputs)],
                              [helper.make_tensor_value_info("y", kind, x.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])
    return SimpleNamespace(name=f"{op_type} to its own type", model=model,
                           data_sets=[(inputs, ReferenceEvaluator(model).run(None, dict(zip(names, inputs))))])


X = np.arange(60, dtype=np.float32).reshape(3, 4, 5) * np.float32(-0.75)
OWN_TYPE = [_own_type("Cast", X, to=TensorProto.FLOAT), _own_type("CastLike", X),
            _own_type("BitCast", X.view(np.int32), to=TensorProto.INT32)]
# onnx's cases of these are all float arithmetic, out of onnxop's scope: test_elementwise.py lays out their integers
FLOAT_ONLY = {"Abs", "Neg"}


# onnx's single-node cases of every operator onnxop runs where an input can lie otherwise, by operator
CASES: dict[str, list] = {}
for _case in [*node_testcases(), *OWN_TYPE]:
    if _laid_out(_case) and _case.model.graph.node[0].op_type not in FLOAT_ONLY:
        CASES.setdefault(_case.model.graph.node[0].op_type, []).append(_case)


def test_the_cases_are_onnx_node_tests_of_every_kind_of_operator():
    """Not silently empty: view, tensor, indexed and arithmetic operators all have cases here."""
    assert len(CASES) > 40 and {"Transpose", "Cast", "BitCast", "Gather", "ScatterND", "Where", "Concat", "Add",
                                "Pad", "Slice", "OneHot", "NonZero", "ReverseSequence"} <= set(CASES), sorted(CASES)


@pytest.mark.parametrize("op_type", CASES)
def test_inputs_in_fortran_order_and_big_endian_give_the_same_outputs(backend, op_type):
    compared = []
    for case in CASES[op_type]:
        try:
            rep = onnx_backend.OnnxopBackend.prepare(case.model, backend=backend)
            for inputs, expected in case.data_sets:
                got = rep.run([relaid(x) for x in inputs])
                try:
                    onnx_backend.assert_same_bits([_array(x) for x in expected], got)
                except AssertionError as e:
                    raise AssertionError(f"{case.name}: {e}") from None
            compared.append(case.name)
        except onnx_backend.NotRun:
            continue  # out of onnxop's scope (float arithmetic, Resize's linear mode): test_backend.py says why
    assert compared, f"no case of {op_type} in onnxop's scope"

"""Type lists are data: every operator's types come from its module's TYPES
table (ops/base.versions), and a class exists only where behaviour changes.

The tables are written out (start-up never imports onnx); these tests hold
every input of every operator, at every opset onnx.defs lists, to onnx.defs:
the types it allows (each accepted by TensorOp.check_types) and the types it
refuses (each refused, naming the input). tests/test_opsets.py holds the data
type ("T") of every operator to onnx.defs the same way, with its messages.
"""

from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace

import onnx.defs
import pytest

from onnxop_cli.errors import OpError
from onnxop_cli.ops import LATEST_OPSET, OPERATORS, SPECS, Node, op_version
from onnxop_cli.ops.tensor_op import Arg, TensorOp
from onnxop_cli.core.tensor import DTYPES

ONE_BACKEND = True  # pure Python: no backend under test

TENSOR_OPS = [name for name, versions in OPERATORS.items() if issubclass(versions[0], TensorOp)]
# what a class may hold and still be no change of behaviour: versions() makes these
BOOKKEEPING = {"since_version", "type_table", "all_versions", "__module__", "__qualname__", "__doc__"}


@functools.cache  # asked about 50,000 times by this module's tests (cases()): made once each
def schema(op_type: str, opset: int):
    try:
        return onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return None


def onnx_types(found, type_str: str) -> set[str]:
    """The tensor types a formal parameter's type string allows."""
    if type_str.startswith("tensor("):
        return {type_str[len("tensor("):-1]}
    (constraint,) = [c for c in found.type_constraints if c.type_param_str == type_str]
    return {t[len("tensor("):-1] for t in constraint.allowed_type_strs if t.startswith("tensor(")}


def cases():
    for op_type in TENSOR_OPS:
        for opset in range(1, LATEST_OPSET + 1):
            if schema(op_type, opset) is not None:
                yield op_type, opset


@pytest.mark.parametrize("op_type", list(OPERATORS))
def test_no_class_only_widens_types(op_type):
    """A class written in a module changes something besides its types; the
    versions that only widen the types are made by versions() from TYPES."""
    for version in OPERATORS[op_type]:
        module = importlib.import_module(version.__module__)
        written = getattr(module, version.__name__, None) is version
        if written and version is not OPERATORS[op_type][0]:
            assert set(vars(version)) - BOOKKEEPING, f"{version.__name__} only widens types: make it a TYPES row"
        assert "types_added" not in vars(version), version.__name__
        assert version.type_table, f"{version.__name__} has no TYPES table"


def test_every_tensor_operator_is_covered():
    assert len(TENSOR_OPS) >= 21 and set(TENSOR_OPS) <= set(SPECS)


@pytest.mark.parametrize("op_type", TENSOR_OPS)
def test_every_input_allows_and_refuses_the_types_onnx_defs_does(op_type):
    """At every opset onnx has a schema of the operator for (cases(): one item
    per operator, the opsets looped over -- each case takes microseconds)."""
    for opset in [o for op, o in cases() if op == op_type]:
        try:
            _input_types_at(op_type, opset)
        except BaseException as e:
            e.add_note(f"opset {opset}")
            raise


def _input_types_at(op_type, opset):
    found, op = schema(op_type, opset), op_version(op_type, opset)
    assert op.since_version == found.since_version
    names = [i.name for i in found.inputs]
    assert list(op.inputs) == names
    typed = [i for i in found.inputs if op.input_types.get(i.name, "T") == "T"]
    for formal in found.inputs:
        constraint = op.input_types.get(formal.name, "T")
        want = onnx_types(found, formal.type_str)
        assert op.constraint_types(constraint) == want, (formal.name, constraint)
    if not typed:  # no input has "T": it types the output (ConstantOfShape's T2)
        assert op.constraint_types("T") == onnx_types(found, found.outputs[0].type_str)
    node = Node(op, opset=opset)
    for k, formal in enumerate(found.inputs):
        want = onnx_types(found, formal.type_str)
        for dtype in DTYPES:
            args = [None] * len(found.inputs)
            args[k] = _arg(formal.name, dtype)
            if dtype.onnx_name in want:
                op.check_types(node, args)  # allowed: no error
                continue
            with pytest.raises(OpError, match=f"{'string' if dtype.is_string else dtype.name}.*(input {formal.name}|"
                               f"for input {formal.name})"):
                op.check_types(node, args)


def _arg(name: str, dtype) -> Arg:
    tensor = SimpleNamespace(name=name, order="C")  # check_types reads types and names only
    return Arg(name, (1,), dtype, tensor, strides=(1,))  # type: ignore[arg-type]

"""Every opset's rules: the version each opset selects and the types it allows
agree with onnx.defs (the tables are written out in ops/ so that start-up never
imports onnx); a type the opset does not allow is refused naming the version
that added it; rendering follows the opset."""

from __future__ import annotations

import functools

import numpy as np
import onnx.defs
import pytest

from conftest import random_array
from onnxop_cli.core import apply as core
from onnxop_cli.cli.main import run
from onnxop_cli.errors import OpError, UsageError
from onnxop_cli.ops import LATEST_OPSET, OPERATORS, Node, check_type, flatten_node, op_version
from onnxop_cli.core.tensor import DTYPES, Tensor, dtype_by_name

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

OPSETS = range(1, LATEST_OPSET + 1)


@functools.cache  # asked about 150,000 times by this module's tests: made once each
def schema(op_type: str, opset: int):
    """onnx.defs' schema of ``op_type`` at ``opset``; None before the operator exists."""
    try:
        return onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return None


def opsets_of(op_type: str) -> list[int]:
    return [o for o in OPSETS if schema(op_type, o) is not None]


def schema_types(op_type: str, opset: int) -> set[str]:
    """The tensor types of the data input (T, or Identity's V from 14, whose
    sequence and optional types onnxop does not read). For an operator of
    several tensor inputs (ops/tensor_op.py) the input its "T" list types, or
    its output where no input has it (ConstantOfShape's T2)."""
    found, op = schema(op_type, opset), op_version(op_type, opset)
    kinds = getattr(op, "input_types", None)
    if kinds is None:
        data = found.inputs[0].type_str
    else:
        typed = [i for i, name in enumerate(op.inputs) if kinds.get(name, "T") == "T"]
        data = found.inputs[typed[0]].type_str if typed else found.outputs[0].type_str
    (constraint,) = [c for c in schema(op_type, opset).type_constraints if c.type_param_str == data]
    return {t[len("tensor("):-1] for t in constraint.allowed_type_strs if t.startswith("tensor(")}


@pytest.mark.parametrize("op_type", OPERATORS)
def test_each_opset_selects_the_schema_version_onnx_does(op_type):
    for opset in OPSETS:
        found = schema(op_type, opset)
        if found is None:
            with pytest.raises(UsageError, match=f"{op_type} does not exist before opset"):
                op_version(op_type, opset)
        else:
            assert op_version(op_type, opset).since_version == found.since_version, opset


@pytest.mark.parametrize("op_type", OPERATORS)
def test_allowed_types_are_onnx_defs_type_constraints(op_type):
    for opset in opsets_of(op_type):
        assert op_version(op_type, opset).allowed_types() == schema_types(op_type, opset), opset


@pytest.mark.parametrize("op_type", OPERATORS)
def test_every_schema_version_has_its_own_class(op_type):
    versions = {schema(op_type, opset).since_version for opset in opsets_of(op_type)}
    assert [v.since_version for v in OPERATORS[op_type]] == sorted(versions)


@pytest.mark.parametrize("op_type", OPERATORS)
def test_attributes_and_inputs_are_onnx_defs(op_type):
    """Each version's attributes and inputs, and which may be left out, are the schema's."""
    for opset in opsets_of(op_type):
        found, op = schema(op_type, opset), op_version(op_type, opset)
        assert op.inputs == tuple(i.name for i in found.inputs), opset
        assert set(op.attribute_names) == set(found.attributes), opset
        optional = {i.name for i in found.inputs if i.option == onnx.defs.OpSchema.FormalParameterOption.Optional}
        optional |= {name for name, a in found.attributes.items() if not a.required}
        assert set(op.optional) == optional - {"shape"} if (op_type, op.since_version) == ("Reshape", 1) \
            else set(op.optional) == optional, opset


def test_axes_move_from_attribute_to_input_at_13_as_in_onnx_defs():
    for opset in OPSETS:
        schema = onnx.defs.get_schema("Unsqueeze", opset)
        as_input = [i.name for i in schema.inputs] == ["data", "axes"]
        assert op_version("Unsqueeze", opset).axes_is_input == as_input
        assert ("axes" in schema.attributes) == (not as_input)


@pytest.mark.parametrize("op_type", OPERATORS)
def test_a_type_is_refused_exactly_before_the_opset_that_added_it(op_type):
    """Every type of DTYPES at every opset of the operator (one item per
    operator: the cases are microseconds each, an item's own cost is not)."""
    for dtype in DTYPES:
        try:
            _type_is_refused_exactly_before_the_opset_that_added_it(op_type, dtype)
        except BaseException as e:
            e.add_note(f"dtype {dtype.name}")
            raise


def _type_is_refused_exactly_before_the_opset_that_added_it(op_type, dtype):
    allowed = [o for o in opsets_of(op_type) if dtype.onnx_name in schema_types(op_type, o)]
    for opset in opsets_of(op_type):
        node = Node(op_version(op_type, opset), opset=opset)  # the type rule needs no parameters
        if allowed and opset >= allowed[0]:
            check_type(node, dtype)
            continue
        name = "string" if dtype.is_string else dtype.name
        version = op_version(op_type, opset).since_version
        with pytest.raises(OpError) as e:
            check_type(node, dtype)
        if not allowed:
            assert str(e.value) == f"{op_type}: no opset allows {name}"
            continue
        first = op_version(op_type, allowed[0]).since_version
        assert str(e.value) == (
            f"{op_type}: opset {opset} ({op_type}-{version}) does not allow {name}; "
            f"{name} was added in {op_type}-{first} (opset {first})"
        )


def test_a_refused_type_never_reaches_the_gpu(monkeypatch):
    def no_gpu(*a, **k):
        raise AssertionError("the GPU was asked for")

    monkeypatch.setattr("onnxop_cli.gpu.get_gpu", no_gpu)
    x = Tensor.from_numpy(np.zeros((2, 3), np.uint8).view(dtype_by_name("int4").numpy), "x")
    with pytest.raises(OpError, match=r"opset 20 \(Flatten-13\) does not allow int4"):
        core.apply(flatten_node(1, 20), x)


def test_cli_names_the_opset_for_a_refused_type(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("c.npy", np.zeros((2, 3), np.complex64))
    assert run(["flatten", "c.npy", "--opset", "8", "-o", "d.npy"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "onnxop: error: c.npy: Flatten: opset 8 (Flatten-1) does not allow complex64; "
        "complex64 was added in Flatten-9 (opset 9)\n"
    )
    assert not (tmp_path / "d.npy").exists()


@pytest.mark.parametrize("opset", [1, 11, 12])
def test_unsqueeze_before_13_prints_axes_as_an_attribute(backend, tmp_path, capsys, monkeypatch, opset):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.arange(3, dtype=np.int32))
    assert run(["unsqueeze", "x.npy", "--axes", "0", "--opset", str(opset), "-b", backend]) == 0
    assert capsys.readouterr().out == (
        "Node:\n  Unsqueeze(x) -> (expanded)\n\n"
        "Attributes:\n  axes = [0]\n\n"
        "Inputs:\n  x: shape=(3,), dtype=int32\n    [0, 1, 2]\n\n"
        "Outputs:\n  expanded: shape=(1, 3), dtype=int32\n    [[0, 1, 2]]\n"
    )


def test_unsqueeze_from_13_prints_axes_as_an_input(backend, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.arange(3, dtype=np.int32))
    assert run(["unsqueeze", "x.npy", "--axes", "0", "--opset", "13", "-b", backend]) == 0
    out = capsys.readouterr().out
    assert "Unsqueeze(x, axes) -> (expanded)" in out and "Attributes" not in out


@pytest.mark.parametrize("opset", [1, 9, 10])
def test_negative_axes_before_11_are_refused_by_each_version(opset, rng):
    x = Tensor.from_numpy(random_array(rng, (2, 3), "float32"))
    with pytest.raises(OpError, match=f"negative axes need opset 11; this is Flatten-{op_version('Flatten', opset).since_version}"):
        core.check(flatten_node(-1, opset), x)


def test_readme_type_table_matches_the_code():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    lines = readme.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| ONNX type | printed as |")))
    table_lines = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        table_lines.append(line)
    rows = [line.strip("| ").split(" | ") for line in table_lines]
    table = {r[0]: r[1:] for r in rows}
    assert len(table) == len(DTYPES) == 26
    for d in DTYPES:
        first = [min(v.since_version for v in OPERATORS[op] if d.onnx_name in v.allowed_types())
                 for op in ("Flatten", "Unsqueeze")]
        assert table[d.onnx_name] == [
            d.name, str(d.bits or "-"), "yes" if d.numpy_native else "no", "yes", str(first[0]), str(first[1]),
        ], d.onnx_name

"""ONNX's own backend test runner (onnx.backend.test.BackendTest) on onnxop_cli.backend.

Every node test whose nodes are all operators onnxop runs (the registry's and
Constant, onnx's ``*_expanded`` graphs of them included) runs on the GPU and is
compared BIT-EXACTLY: shape, dtype and every byte (NaN payloads, -0.0); the
runner's own comparison only checks ``allclose``. A case onnxop refuses (an
input that is a sequence or an optional) is skipped with onnxop's reason,
never passed: the runner would count ``BackendIsNotSupposedToImplementIt`` as
a pass, so the backend here raises ``unittest.SkipTest`` instead. ``XFAIL``
lists the expected failures, each with its reason.
"""

from __future__ import annotations

import unittest
import warnings
from pathlib import Path

import numpy as np
import onnx.backend.test
import pytest

from conftest import ENGINE_BACKENDS
from onnxop_cli import backend
from onnxop_cli.ops import model as model_graph

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name -> why it is expected to fail (none today; a new one needs its reason)
XFAIL: dict[str, str] = {}


class _Backend(backend.OnnxopBackend):
    """The backend with a reason for each refusal: a refused model raises
    SkipTest naming it (the runner's own is_compatible path would say only
    "Not compatible with backend")."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        try:
            backend._prepare(model, Path("."), None)  # the checks prepare makes (no GPU is opened)
        except Exception as e:  # noqa: BLE001
            raise unittest.SkipTest(f"onnxop refuses the model: {e}") from None
        return True

    gpu_backend: str | None = None  # the conftest backend the tests run on

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        cls.is_compatible(model, device)
        return super().prepare(model, device, backend=cls.gpu_backend, **kwargs)


def bits(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned integers of their width (bytes for
    the 4- and 2-bit types, which ml_dtypes holds one per byte)."""
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return a.view("u1").reshape(a.shape + (a.dtype.itemsize,))


class ExactBackendTest(onnx.backend.test.BackendTest):
    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol, model_dir=None):
        outputs = list(outputs)
        assert len(outputs) == len(ref_outputs), f"{len(outputs)} outputs, expected {len(ref_outputs)}"
        for i, (got, want) in enumerate(zip(outputs, ref_outputs)):
            assert isinstance(got, np.ndarray), f"output {i} is a {type(got).__name__}"
            assert got.shape == want.shape, f"output {i}: shape {got.shape}, expected {want.shape}"
            assert got.dtype == want.dtype, f"output {i}: dtype {got.dtype}, expected {want.dtype}"
            if want.dtype == object:
                same = [a == b for a, b in zip(got.reshape(-1), want.reshape(-1))]
                assert all(same), f"output {i}: element {same.index(False)} differs"
                continue
            if got.size == 0:
                continue
            differ = np.flatnonzero((bits(got) != bits(want)).reshape(got.size, -1).any(axis=1))
            assert differ.size == 0, (
                f"output {i}: {differ.size} of {got.size} elements differ in their bits; first at flat index "
                f"{differ[0]}: {got.reshape(-1)[differ[0]]!r}, expected {want.reshape(-1)[differ[0]]!r}"
            )


def supported_cases() -> list[str]:
    """Node tests whose every node is an operator onnxop runs."""
    from onnx.backend.test.loader import load_model_tests

    from onnxop_cli.ops import OPERATORS
    from onnxop_cli.ops.family_model import is_family

    ops = set(model_graph.supported())  # a graph's
    family = {name for name, versions in OPERATORS.items() if is_family(versions[0])}  # one-node models'
    return sorted(c.name for c in load_model_tests(kind="node")
                  if c.model is not None and c.model.graph.node
                  and ({n.op_type for n in c.model.graph.node} <= ops
                       or (len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in family)))


# The runner's test classes once per engine, on its first backend (conftest's
# ENGINE_BACKENDS: vulkan and dawn-vulkan by default): the API and the engine
# are under test here; each kernel fans out over every backend in the kernel
# tests, and the same node tests run through the CLI in
# tests/cli/test_conformance.py.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    CASES = supported_cases()
    for _backend in ENGINE_BACKENDS:
        _tests = ExactBackendTest(type(f"Backend_{_backend}", (_Backend,), {"gpu_backend": _backend}), __name__)
        _tests.include("^(" + "|".join(CASES) + ")_cpu$")
        for _name in XFAIL:
            _tests.xfail(f"^{_name}_cpu$")
        for _cls_name, _cls in _tests.test_cases.items():
            for _attr in [a for a in vars(_cls) if a.startswith("test_") and a[: -len("_cpu")] not in CASES]:
                delattr(_cls, _attr)  # not selected (other operators, the CUDA device): not collected at all
            _cls.__name__ = _cls.__qualname__ = f"{_cls_name}_{_backend.replace('-', '_')}"
            globals()[_cls.__name__] = pytest.mark.gpu(_cls)  # a GPU test (no backend fixture to mark it by)


def test_the_runner_covers_every_operator_onnxop_runs():
    """No operator of the registry is left out of the runner (a test that cannot fail otherwise)."""
    from onnxop_cli.ops import SPECS

    from onnx.backend.test.loader import load_model_tests

    selected = set(CASES)
    covered = {n.op_type for c in load_model_tests(kind="node") if c.name in selected for n in c.model.graph.node}
    assert sorted(set(SPECS) - covered) == []
    assert "test_constant" in CASES and any(c.endswith("_expanded") for c in CASES)


def test_the_comparison_sees_one_bit():
    a = np.array([0.0, np.nan], np.float32)
    b = a.copy()
    b[0] = -0.0
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        ExactBackendTest.assert_similar_outputs([a], [b], 1e-3, 1e-7)
    c = a.copy()
    c.view("u4")[1] ^= 1  # another NaN payload
    with pytest.raises(AssertionError, match="first at flat index 1"):
        ExactBackendTest.assert_similar_outputs([a], [c], 1e-3, 1e-7)
    ExactBackendTest.assert_similar_outputs([a], [a.copy()], 0, 0)


def test_an_unsupported_model_is_refused_naming_the_node():
    from onnx import TensorProto, helper

    node = helper.make_node("Add", ["x", "i"], ["y"], name="g")
    model = helper.make_model(helper.make_graph(
        [node], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                      helper.make_tensor_value_info("i", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]), opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(model_graph.Unsupported, match=r"^1 node\(s\) onnxop does not run: Add x1$"):
        backend.prepare(model)
    assert not backend.is_compatible(model)

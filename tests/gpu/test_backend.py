"""ONNX's own backend test runner (onnx.backend.test.BackendTest) on onnxop_cli.backend.

Every node test whose nodes are all operators onnxop runs (the registry's and
Constant, onnx's ``*_expanded`` graphs of them included) runs on the GPU and is
compared BIT-EXACTLY by the backend's ``ExactBackendTest``: shape, dtype and
every byte (NaN payloads, -0.0); the runner's own comparison only checks
``allclose``. A case onnxop refuses (an input that is a sequence or an
optional) is skipped with onnxop's reason (``backend.NotRun`` is a
``unittest.SkipTest``), never passed. ``XFAIL`` lists the expected failures,
each with its reason. (tests/process/test_backend_runner.py runs onnx's
runner as a user would, in a process of its own.)
"""

from __future__ import annotations

import re
import unittest
import warnings

import numpy as np
import onnx
import onnx.backend.test
import pytest

from conftest import ENGINE_BACKENDS
from onnxop_cli import backend
from onnxop_cli.backend import ExactBackendTest
from onnxop_cli.ops import model as model_graph

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name -> why it is expected to fail (none today; a new one needs its reason)
XFAIL: dict[str, str] = {}


class _Backend(backend.OnnxopBackend):
    """The backend on one conftest backend. Its is_compatible lets prepare
    refuse, so that a refused model test is skipped with onnxop's reason
    (backend.NotRun) rather than the runner's "Not compatible with backend"."""

    gpu_backend: str | None = None  # the conftest backend the tests run on

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return True

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        return super().prepare(model, device, backend=cls.gpu_backend, **kwargs)


def _runs(case, ops: set[str], tensor_ops: set[str]) -> bool:
    """Whether every node of a node test is an operator onnxop runs."""
    nodes = case.model.graph.node if case.model is not None else ()
    return bool(nodes) and ({n.op_type for n in nodes} <= ops
                            or (len(nodes) == 1 and nodes[0].op_type in tensor_ops))


def _operators() -> tuple[set[str], set[str]]:
    """The operators of a graph onnxop runs, and those it runs as one-node models."""
    from onnxop_cli.ops import OPERATORS
    from onnxop_cli.ops.tensor_nodes import is_tensor_op

    return set(model_graph.supported()), {name for name, v in OPERATORS.items() if is_tensor_op(v[0])}


def node_modules(ops: set[str]) -> list[str]:
    """onnx's node-test modules that can register a case of ``ops``. Importing
    a module runs its cases (the pooling ones compute for 5 s); each case is
    the node an ``expect()`` call gets, or that node's function body. So a
    module is not imported when it calls no ``expect()``, or when each of its
    ``make_node`` calls names, as a literal, an operator not in ``ops`` whose
    function bodies (if any) are not all of ``ops``: none of its cases can be
    all of ``ops``. A computed name or a body that depends on the types keeps
    it. test_the_runner_covers_every_operator_onnxop_runs holds the choice to
    the whole of onnx's list."""
    import importlib.util
    import pkgutil
    import re

    import onnx.backend.test.case.node as node_cases

    expands = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.has_context_dependent_function
               or (s.has_function and {n.op_type for n in s.function_body.node} <= ops)}
    make_node = re.compile(r"make_node\(\s*(?:op_type\s*=\s*)?(?:\"(\w+)\"|'(\w+)')?")
    kept = []
    for info in pkgutil.iter_modules(node_cases.__path__):
        module = f"{node_cases.__name__}.{info.name}"
        with open(importlib.util.find_spec(module).origin, encoding="utf-8") as f:
            text = f.read()
        names = {m[0] or m[1] or None for m in make_node.findall(text)}
        if "expect(" in text and (not names or None in names or names & (ops | expands)):
            kept.append(module)
    return kept


def node_cases(ops: set[str]) -> list:
    """onnx's registered node tests (``load_model_tests(kind="node")``) of the modules ``node_modules`` keeps."""
    import importlib

    import onnx.backend.test.case.node as registry

    for module in node_modules(ops):
        importlib.import_module(module)
    return list(registry._NodeTestCases)


def _runner(backend_class: type, cases: list) -> ExactBackendTest:
    """onnx's runner over ``cases`` as its node tests (its other kinds are files on disk, listed as it lists
    them): it would import every node-test module for them."""
    import onnx.backend.test.runner as runner

    whole = runner.load_model_tests
    runner.load_model_tests = lambda *args, kind=None, **kw: cases if kind == "node" else whole(*args, kind=kind, **kw)
    try:
        return ExactBackendTest(backend_class, __name__)
    finally:
        runner.load_model_tests = whole


# The runner's test classes once per engine, on its first backend (conftest's
# ENGINE_BACKENDS: vulkan and dawn-vulkan by default): the API and the engine
# are under test here; each kernel fans out over every backend in the kernel
# tests, and the same node tests run through the CLI in
# tests/cli/test_conformance.py.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _ops, _tensor_ops = _operators()
    _loaded = node_cases(_ops | _tensor_ops)
    CASES = sorted(c.name for c in _loaded if _runs(c, _ops, _tensor_ops))  # node tests onnxop runs every node of
    for _backend in ENGINE_BACKENDS:
        _tests = _runner(type(f"Backend_{_backend}", (_Backend,), {"gpu_backend": _backend}), _loaded)
        _tests.include("^(" + "|".join(CASES) + ")_cpu$")
        for _name in XFAIL:
            _tests.xfail(f"^{_name}_cpu$")
        for _cls_name, _cls in _tests.test_cases.items():
            for _attr in [a for a in vars(_cls) if a.startswith("test_") and a[: -len("_cpu")] not in CASES]:
                delattr(_cls, _attr)  # not selected (other operators, the CUDA device): not collected at all
            _cls.__name__ = _cls.__qualname__ = f"{_cls_name}_{_backend.replace('-', '_')}"
            globals()[_cls.__name__] = pytest.mark.gpu(_cls)  # a GPU test (no backend fixture to mark it by)


def _pool_shape_only(padded, x_shape, kernel, strides, out_shape, *args, **kwargs) -> np.ndarray:
    """onnx.reference's pooling loop's output, its shape and type without its values (the loop is most of
    the cost of importing every node-test module: AveragePool's, LpPool's and MaxPool's 3-d cases)."""
    return np.zeros([x_shape[0], x_shape[1], *out_shape], dtype=padded.dtype)


def test_the_runner_covers_every_operator_onnxop_runs(monkeypatch):
    """No operator of the registry is left out of the runner (a test that cannot fail otherwise), and no
    node test of the whole of onnx's list (every module imported) is left out of it. Only the cases' names
    and nodes are compared: the pooling operators' outputs (onnxop runs none of them; 5 of the 8.8 CPU s of
    importing every module) are computed as zeros of their shape while the modules are imported."""
    import onnx.reference.ops.op_pool_common as pool_common
    from onnxop_cli.ops import SPECS

    from onnx.backend.test.loader import load_model_tests

    ops, tensor_ops = _operators()
    monkeypatch.setattr(pool_common, "pool", _pool_shape_only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = load_model_tests(kind="node")
    assert sorted(c.name for c in every if _runs(c, ops, tensor_ops)) == CASES
    selected = set(CASES)
    covered = {n.op_type for c in every if c.name in selected for n in c.model.graph.node}
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


def test_a_one_ulp_flip_fails_the_exact_comparison_and_passes_onnx_s():
    want = np.array([1.0, 2.5, -3.0], np.float32)
    got = want.copy()
    got[1] = np.nextafter(want[1], np.float32(np.inf))  # one ulp up
    onnx.backend.test.BackendTest.assert_similar_outputs([want], [got], 1e-3, 1e-7)  # allclose: passes
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ in their bits; first at flat index 1"):
        ExactBackendTest.assert_similar_outputs([want], [got], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="differ in their bits"):
        backend.assert_same_bits([want], [got])


def _identity_model(outputs: list[str]):
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Identity", ["x"], [name]) for name in outputs]
    return helper.make_model(helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in outputs]),
        opset_imports=[helper.make_opsetid("", 13)])


def test_run_names_the_outputs_as_the_model_does(backend):  # the conftest backend (the module is onnxop's)
    from onnxop_cli.backend import prepare

    x = np.array([1.5, -0.0], np.float32)
    out = prepare(_identity_model(["y", "0", "_z", "class", "a b"]), backend=backend).run([x])
    assert out._fields[0] == "y" and out.y.tobytes() == x.tobytes()
    for k, name in enumerate(["y", "0", "_z", "class", "a b"]):  # by name, whatever Python makes of it
        assert out[name].tobytes() == out[k].tobytes() == x.tobytes()
    assert "o0" not in out._fields


def test_a_value_for_a_graph_input_with_an_initializer_is_refused_not_dropped(backend):
    """A graph input with an initializer is the model's constant, as in onnxop run. Given by name, its
    value was dropped without a word (Reshape by the initializer's (3, 2) where onnxruntime reshapes by
    the value given, (6, 1)), and so was a name no input has; given in order, the count named one input
    while the model lists two."""
    from onnx import TensorProto, helper, numpy_helper

    from onnxop_cli.backend import prepare

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"])], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])], [numpy_helper.from_array(np.array([3, 2]), "s")]),
        opset_imports=[helper.make_opsetid("", 13)])
    rep = prepare(model, backend=backend)
    x, s = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([6, 1])
    assert rep.run({"x": x}).y.tobytes() == rep.run([x]).y.tobytes() == x.tobytes()
    constants = re.escape("; 's', listed as graph input(s), have initializers, which onnxop runs as the model's constants")
    with pytest.raises(ValueError, match=r"^no graph input takes 's' \(the model's inputs: 'x'\)" + constants + "$"):
        rep.run({"x": x, "s": s})
    with pytest.raises(ValueError, match=r"^no graph input takes 'z' "):
        rep.run({"x": x, "z": s})
    with pytest.raises(ValueError, match=r"^the model has 1 input\(s\) \(x\), 2 value\(s\) were given" + constants + "$"):
        rep.run([x, s])


def test_run_node_leaves_an_omitted_output_out(backend):
    """An output left unnamed ('') is omitted, as an input is: it was made a graph output named '',
    refused as "graph output '' is never produced"."""
    from onnx import helper

    from onnxop_cli.backend import run_node

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = run_node(helper.make_node("Split", ["x"], ["", "z"], axis=2), [x], opset=13, backend=backend)
    assert out._fields == ("z",) and out.z.tobytes() == np.ascontiguousarray(x[:, :, 2:]).tobytes()


def test_run_node_takes_what_prepare_takes(backend):
    """A big-endian array, as prepare(...).run takes it: run_node typed its input with onnx's
    np_dtype_to_tensor_dtype, a ValueError ('Unable to convert type dtype('>i4')')."""
    from onnx import helper

    from onnxop_cli.backend import run_node

    x = np.arange(6, dtype=">i4").reshape(2, 3)
    out = run_node(helper.make_node("Transpose", ["x"], ["y"]), [x], backend=backend)
    assert out.y.dtype == np.int32 and out.y.tolist() == x.T.tolist()


def test_run_node_takes_a_dict_by_the_nodes_input_names(backend):
    """A dict of inputs was taken in the dict's order, not by name: Concat(a, b) of {"b": [2], "a": [1]}
    made [2, 1], and Pad of {"ax": ..., "x": ..., "p": ...} was refused as float32 pads. A dict is read by the
    node's input names; a missing or unknown name, a count of values that is not the node's, or an opset that
    is no integer (1.5 ran at opset 1) is one ValueError or TypeError."""
    from onnx import helper

    from onnxop_cli.backend import run_node

    concat = helper.make_node("Concat", ["a", "b"], ["c"], axis=0)
    assert run_node(concat, {"b": np.array([2]), "a": np.array([1])}, backend=backend).c.tolist() == [1, 2]
    pad = helper.make_node("Pad", ["x", "p", "", "ax"], ["y"])
    x = np.array([1.0, -0.0], np.float32)
    out = run_node(pad, {"ax": np.array([0]), "x": x, "p": np.array([1, 0])}, backend=backend)
    assert out.y.tobytes() == np.array([0.0, 1.0, -0.0], np.float32).tobytes()
    twice = helper.make_node("Concat", ["a", "a"], ["c"], axis=0)
    assert run_node(twice, [np.array([3])], backend=backend).c.tolist() == [3, 3]
    for call, error, message in [
        (lambda: run_node(concat, {"b": np.array([2])}), ValueError, r"^the node reads 'a', 'b': no value for 'a'$"),
        (lambda: run_node(concat, {"a": 1, "b": 2, "z": 3}), ValueError, r"no input of it is named 'z'$"),
        (lambda: run_node(concat, [np.array([2])]), ValueError,
         r"^the node reads 2 input\(s\) \('a', 'b'\), 1 value\(s\) were given$"),
        (lambda: run_node(concat, [np.array([2])] * 2, opset=1.5), TypeError, r"^opset must be an integer, got 1\.5$"),
    ]:
        with pytest.raises(error, match=message):
            call()


def test_prepare_takes_a_models_bytes(backend):
    """A model's serialized bytes (which onnx.checker and onnxruntime's backend take) were an AttributeError,
    'bytes' object has no attribute 'graph'; bytes that are no model are one ValueError."""
    from onnxop_cli.backend import is_compatible, prepare

    x = np.array([1.5, -0.0], np.float32)
    data = _identity_model(["y"]).SerializeToString()
    assert prepare(data, backend=backend).run([x]).y.tobytes() == x.tobytes()
    assert is_compatible(data)
    with pytest.raises(ValueError, match=r"^the 3 bytes given as a model are not an ONNX model: "):
        prepare(b"\xff\xff\xff")


def test_prepare_checks_its_backend_argument():
    """prepare(model, backend='bogus') was taken and refused at the first run only; backend=1 was an
    AttributeError there ('int' object has no attribute 'strip'). Both are refused by prepare (and run_node),
    as the API's functions refuse them: a ValueError or TypeError naming the choices or the parameter."""
    from onnx import helper

    from onnxop_cli.backend import prepare, run_node

    model = _identity_model(["y"])
    with pytest.raises(ValueError, match=r"^unknown backend 'bogus'; choose one of auto, vulkan"):
        prepare(model, backend="bogus")
    with pytest.raises(TypeError, match=r"^backend must be a string or None, got 1$"):
        prepare(model, backend=1)
    with pytest.raises(ValueError, match=r"^unknown backend 'cuda'"):
        run_node(helper.make_node("Identity", ["x"], ["y"]), [np.zeros(2)], backend="cuda")


def test_the_device_is_the_cpu_only():
    assert backend.supports_device("CPU") and backend.supports_device("CPU:0")
    assert not backend.supports_device("CUDA") and not backend.supports_device("CUDA:0")
    assert not backend.supports_device("WebGPU")


def test_an_unsupported_model_is_refused_counting_its_operators():
    from onnx import TensorProto, helper

    node = helper.make_node("Pow", ["x", "i"], ["y"], name="g")
    model = helper.make_model(helper.make_graph(
        [node], "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                      helper.make_tensor_value_info("i", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]), opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(model_graph.Unsupported, match=r"^1 node\(s\) onnxop does not run: Pow x1$"):
        backend.prepare(model)
    with pytest.raises(unittest.SkipTest, match=r"1 node\(s\) onnxop does not run: Pow x1"):  # onnx's runner: a skip
        backend.run_node(node, [np.zeros(2, np.float32), np.zeros(1, np.float32)], opset=13)
    assert not backend.is_compatible(model)


def test_external_data_is_read_from_the_models_folder_or_refused(backend, tmp_path, monkeypatch):
    """A ModelProto loaded without its external data (onnx.load(path, load_external_data=False)) had its
    w.bin looked up in the current folder: another w.bin there (zeros) was read without a word. prepare
    now refuses it unless told the folder (folder=, as onnxruntime and onnx.reference refuse such a model),
    and takes the model's path, reading its data from its folder (as onnxruntime's backend takes a path)."""
    from pathlib import Path

    from onnx import TensorProto, helper, numpy_helper

    from onnxop_cli.backend import prepare, run_model

    w = np.arange(6, dtype=np.float32).reshape(2, 3) + 100
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x", "w"], ["y"], axis=0)], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], [numpy_helper.from_array(w, "w")]),
        opset_imports=[helper.make_opsetid("", 13)])
    (tmp_path / "m").mkdir()
    (tmp_path / "elsewhere").mkdir()
    onnx.save(model, tmp_path / "m" / "model.onnx", save_as_external_data=True, location="w.bin", size_threshold=0)
    (tmp_path / "elsewhere" / "w.bin").write_bytes(np.zeros(6, np.float32).tobytes())
    monkeypatch.chdir(tmp_path / "elsewhere")
    x = np.ones((2, 3), np.float32)
    want = np.concatenate([x, w]).tobytes()
    path = tmp_path / "m" / "model.onnx"
    bare = onnx.load(path, load_external_data=False)
    with pytest.raises(ValueError, match=r"^the model keeps initializer 'w' in external data and prepare was not told "
                                         r"where it lies: pass the model's path, folder=ITS_FOLDER, or a model "):
        prepare(bare, backend=backend)
    for rep in (prepare(bare, folder=path.parent, backend=backend), prepare(str(path), backend=backend),
                prepare(Path("../m/model.onnx"), backend=backend), prepare(onnx.load(path), backend=backend)):
        assert rep.run([x]).y.tobytes() == want
    assert run_model(str(path), [x], backend=backend).y.tobytes() == want

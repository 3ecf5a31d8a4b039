"""onnxop as an ONNX backend (``onnx.backend.base.Backend``), for ONNX's own test runner.

    >>> import onnxop_cli.backend
    >>> tests = onnxop_cli.backend.ExactBackendTest(onnxop_cli.backend, __name__)
    >>> tests.include(r"test_(transpose|reshape)_")
    >>> globals().update(tests.test_cases)           # then run pytest on the file

``prepare(model)`` accepts any model whose nodes are all operators onnxop
runs (the registry's, ``ops.SPECS``, and ``Constant``) and refuses any
other with ``NotRun``: onnxop's ``Unsupported`` naming the nodes it cannot
run (``ops.model.load_graph``), and a ``unittest.SkipTest``, so onnx's
runner (and pytest, unittest) report the case skipped with that reason.
``prepare`` also takes a model's path (its external data read from its
folder) or ``folder=`` for a ModelProto whose data was not loaded.
``run(inputs)`` gives numpy arrays in the model's output order, with its
dtypes and shapes, as onnx's ``namedtupledict`` of the model's output names.
The backend runs on the GPU like the commands; its one device is "CPU" (the
host's WebGPU adapter: lavapipe or llvmpipe where there is no GPU; onnx
names no other device it could be), so the runner skips the ``_cuda``
cases. The WebGPU backend is ``ONNXOP_BACKEND``. ``ExactBackendTest``
compares bit for bit (NaN payloads and -0.0 count) where onnx's runner
compares with ``allclose``.
"""

from __future__ import annotations

import unittest
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import onnx.backend.test
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from .api_values import _gpu_key
from .core import graph
from .core.tensor import Tensor, dtype_of_numpy
from .errors import OutOfScope
from .ops.model import Graph, Unsupported, load_graph


class NotRun(Unsupported, unittest.SkipTest):
    """A model onnxop does not run: onnxop's ``Unsupported`` (callers that catch
    it still do) and a ``unittest.SkipTest``, so onnx's runner reports a skip with
    the reason, not a failure. (Not the runner's ``BackendIsNotSupposedToImplementIt``:
    the runner counts that one as a pass.)"""


class OnnxopRep(BackendRep):
    """A checked graph, run once per call (its tensor-op nodes on the device as graph steps)."""

    def __init__(self, g: Graph, backend: str | None = None) -> None:
        self.graph, self.backend = g, backend

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """The outputs by position and by the model's names (``out.y``, ``out["y"]``;
        a name that is no Python identifier, such as "0", by ``out["0"]`` only)."""
        feeds = _feeds(self.graph, inputs)
        try:
            p = graph.plan(self.graph, feeds, backend=self.backend)
        except OutOfScope as e:  # float arithmetic, known once the types are: a skip, as Unsupported is
            raise NotRun(e.message) from None
        results, _ = graph.run_to_memory(p, backend=self.backend)
        return namedtupledict("Outputs", self.graph.outputs)(*[t.to_numpy() for t in results])


def _prepare(model: onnx.ModelProto, folder: Path, backend: str | None) -> BackendRep:
    """Every model, one node or many, view or tensor operators, through the
    graph path (core/graph.py, core/graph_steps.py). ``backend`` is checked here, as the API checks it
    ('bogus' was refused at the first run only, and 1 was an AttributeError there)."""
    if backend is not None:  # (None: the environment's, read at the run as every command reads it)
        _gpu_key(backend, None)
    try:
        return OnnxopRep(load_graph(model, folder), backend)
    except Unsupported as e:
        raise NotRun(e.message) from None


def _feeds(names: Sequence[str] | Graph, inputs: Any) -> dict[str, Tensor]:
    # a graph input with an initializer is the model's constant (as in onnxop run): a value given
    # for it is refused, not dropped, since onnxruntime would take it in the initializer's place
    defaults = sorted({v.name for v in names.model.graph.input} & set(names.initializers)) \
        if isinstance(names, Graph) else []
    names = list(names.inputs if isinstance(names, Graph) else names)
    constants = (f"; {', '.join(map(repr, defaults))}, listed as graph input(s), have initializers, which "
                 "onnxop runs as the model's constants") if defaults else ""
    if isinstance(inputs, dict):
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"no value for graph input(s) {', '.join(map(repr, missing))}")
        extra = [n for n in inputs if n not in names]
        if extra:
            raise ValueError(f"no graph input takes {', '.join(map(repr, extra))} (the model's inputs: "
                             f"{', '.join(map(repr, names)) or 'none'}){constants}")
        return {n: Tensor.from_numpy(np.asarray(inputs[n]), n) for n in names}
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    values: Sequence[Any] = list(inputs)
    if len(values) != len(names):
        raise ValueError(f"the model has {len(names)} input(s) ({', '.join(names) or 'none'}), "
                         f"{len(values)} value(s) were given" + (constants if len(values) > len(names) else ""))
    return {n: Tensor.from_numpy(np.asarray(v), n) for n, v in zip(names, values)}


class OnnxopBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        try:
            _prepare(_model(model), Path("."), None)
        except Exception:  # noqa: BLE001 - any refusal means not compatible
            return False
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto | bytes | str | Path, device: str = "CPU", **kwargs: Any) -> BackendRep:
        """The checked graph; ``NotRun`` (a skip to onnx's runner) names what onnxop does not run.
        ``model``: a ModelProto, its serialized bytes, or the path of a .onnx file (as onnxruntime's
        backend takes them), whose external data is read from its folder. ``folder=``: where a
        ModelProto's external data lies;
        without it such a model is refused, as onnxruntime and onnx.reference refuse it (the current
        folder may hold another file of that name)."""
        _device(device)
        folder = kwargs.get("folder")
        model = _model(model)
        if isinstance(model, (str, Path)):
            from .ops.model import load

            path = Path(model)
            folder, model = (path.parent if folder is None else folder), load(path)
        elif folder is None and _external(model):
            raise ValueError(f"the model keeps {_external(model)} in external data and prepare was not told "
                             "where it lies: pass the model's path, folder=ITS_FOLDER, or a model loaded "
                             "with onnx.load(path), which reads the data in")
        rep = _prepare(model, Path(folder if folder is not None else "."), kwargs.get("backend"))
        super().prepare(model, device, **{k: v for k, v in kwargs.items() if k != "folder"})  # onnx.checker
        return rep

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info=None, **kwargs: Any):
        """One node on ``inputs``: wrapped in a model at the latest opset
        (or ``opset=``), as onnx's own backends do."""
        from onnx import helper

        from .ops import LATEST_OPSET

        names = list(dict.fromkeys(n for n in node.input if n))  # a name the node reads twice is one input
        if isinstance(inputs, dict):  # by the node's input names, not in the dict's order
            missing, extra = [n for n in names if n not in inputs], [n for n in inputs if n not in names]
            if missing or extra:
                raise ValueError(f"the node reads {', '.join(map(repr, names)) or 'nothing'}: "
                                 + (f"no value for {', '.join(map(repr, missing))}" if missing else
                                    f"no input of it is named {', '.join(map(repr, extra))}"))
            values = [inputs[n] for n in names]
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(names):
                raise ValueError(f"the node reads {len(names)} input(s) ({', '.join(map(repr, names)) or 'none'}), "
                                 f"{len(values)} value(s) were given")
        opset = kwargs.get("opset", LATEST_OPSET)
        if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)):
            raise TypeError(f"opset must be an integer, got {opset!r}")
        info = [helper.make_tensor_value_info(n, dtype_of_numpy(np.asarray(v).dtype).onnx_type, None)  # '>i4', 'S'
                for n, v in zip(names, values)]
        outs = [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in node.output if n]
        model = helper.make_model(
            helper.make_graph([node], "node", info, outs),
            opset_imports=[helper.make_opsetid("", int(opset))],
        )
        _device(device)  # not onnx.checker: the outputs' types are onnxop's to find
        return _prepare(model, Path("."), kwargs.get("backend")).run(values)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """"CPU" (or "CPU:0"): onnx's name for the host, whose WebGPU adapter onnxop runs on."""
        try:
            d = Device(device)
        except (AttributeError, ValueError):
            return False
        return d.type == DeviceType.CPU and d.device_id == 0


def _model(model: Any) -> Any:
    """A model's serialized bytes as its ModelProto (onnx.checker and onnxruntime's backend take bytes too);
    anything else as given."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and its kin
            raise ValueError(f"the {len(model)} bytes given as a model are not an ONNX model: {e}") from None
    return model


def _external(model: onnx.ModelProto) -> str:
    """The first tensor of the graph kept in external data, named (initializer 'w'), or ''."""
    external = onnx.TensorProto.EXTERNAL
    for t in model.graph.initializer:
        if t.data_location == external:
            return f"initializer {t.name!r}"
    for n in model.graph.node:
        for a in n.attribute:
            if a.HasField("t") and a.t.data_location == external:
                return f"node {n.name or n.op_type!r}'s {a.name!r}"
    return ""


def _device(device: str) -> None:
    if not OnnxopBackend.supports_device(device):
        raise NotRun(f"device {device!r}: onnxop runs on 'CPU', the host's WebGPU adapter")


def bits(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned integers of their width (bytes for
    the 4- and 2-bit types, which ml_dtypes holds one per byte)."""
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return a.view("u1").reshape(a.shape + (a.dtype.itemsize,))


def assert_same_bits(ref_outputs: Sequence[Any], outputs: Sequence[Any]) -> None:
    """Every output has the reference's shape, dtype and bits (NaN payloads, -0.0)."""
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


class ExactBackendTest(onnx.backend.test.BackendTest):
    """onnx's runner with onnxop's comparison: bit for bit, not ``allclose``."""

    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol, model_dir=None):
        assert_same_bits(ref_outputs, outputs)


prepare = OnnxopBackend.prepare
run_model = OnnxopBackend.run_model
run_node = OnnxopBackend.run_node
supports_device = OnnxopBackend.supports_device
is_compatible = OnnxopBackend.is_compatible

"""onnxop as an ONNX backend (``onnx.backend.base.Backend``), for ONNX's own test runner.

    >>> import onnx.backend.test
    >>> import onnxop_cli.backend
    >>> tests = onnx.backend.test.BackendTest(onnxop_cli.backend, __name__)
    >>> tests.include(r"test_(transpose|reshape)_")
    >>> globals().update(tests.test_cases)           # then run pytest on the file

``prepare(model)`` accepts any model whose nodes are all operators onnxop
runs (the registry's, ``ops.SPECS``, and ``Constant``) and refuses any
other, naming the nodes it cannot run (``ops.model.load_graph``). ``run(inputs)``
gives numpy arrays in the model's output order, with its dtypes and shapes.
The backend runs on the GPU like the commands (``device`` "CPU" means the
host's WebGPU adapter: lavapipe or llvmpipe where there is no GPU); the
backend option is ``ONNXOP_BACKEND``.
"""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from .core import graph
from .core.tensor import Tensor
from .ops.model import Graph, load_graph


class OnnxopRep(BackendRep):
    """A checked graph, run once per call (its family nodes on the device as graph steps)."""

    def __init__(self, g: Graph, backend: str | None = None) -> None:
        self.graph, self.backend = g, backend

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        feeds = _feeds(self.graph, inputs)
        p = graph.plan(self.graph, feeds, backend=self.backend)
        results, _ = graph.run_to_memory(p, backend=self.backend)
        arrays = [t.to_numpy() for t in results]
        Outputs = namedtuple("Outputs", [f"o{i}" for i in range(len(arrays))], rename=True)  # type: ignore[misc]
        return Outputs(*arrays)


def _prepare(model: onnx.ModelProto, folder: Path, backend: str | None) -> BackendRep:
    """Every model, one node or many, view or family operators, through the
    graph path (core/graph.py, core/graph_family.py)."""
    return OnnxopRep(load_graph(model, folder), backend)


def _feeds(names: Sequence[str] | Graph, inputs: Any) -> dict[str, Tensor]:
    names = list(names.inputs if isinstance(names, Graph) else names)
    if isinstance(inputs, dict):
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"no value for graph input(s) {', '.join(map(repr, missing))}")
        return {n: Tensor.from_numpy(np.asarray(inputs[n]), n) for n in names}
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    values: Sequence[Any] = list(inputs)
    if len(values) != len(names):
        raise ValueError(f"the model has {len(names)} input(s) ({', '.join(names) or 'none'}), "
                         f"{len(values)} value(s) were given")
    return {n: Tensor.from_numpy(np.asarray(v), n) for n, v in zip(names, values)}


class OnnxopBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        try:
            _prepare(model, Path("."), None)
        except Exception:  # noqa: BLE001 - any refusal means not compatible
            return False
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BackendRep:
        super().prepare(model, device, **kwargs)
        return _prepare(model, Path(kwargs.get("folder", ".")), kwargs.get("backend"))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info=None, **kwargs: Any):
        """One node on ``inputs``: wrapped in a model at the latest opset
        (or ``opset=``), as onnx's own backends do."""
        from onnx import helper

        from .ops import LATEST_OPSET

        values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
        names = [n for n in node.input if n]
        info = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), None)
                for n, v in zip(names, values)]
        outs = [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in node.output]
        model = helper.make_model(
            helper.make_graph([node], "node", info, outs),
            opset_imports=[helper.make_opsetid("", int(kwargs.get("opset", LATEST_OPSET)))],
        )
        return cls.run_model(model, values, device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device in ("CPU", "CUDA") or device.startswith("CPU")


prepare = OnnxopBackend.prepare
run_model = OnnxopBackend.run_model
run_node = OnnxopBackend.run_node
supports_device = OnnxopBackend.supports_device
is_compatible = OnnxopBackend.is_compatible

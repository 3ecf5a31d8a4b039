"""The default runtime: onnxop itself, every model through the graph executor
(core/graph.py), on the adapter ``--backend`` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...errors import Interrupted, OnnxopError
from .base import Lacks, Loaded, Refused, message


class OnnxopRuntime:
    webgpu = False  # its kernels always run on WebGPU: nothing to report as elsewhere
    name = "onnxop"

    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend

    def load(self, model: Any, folder: Path) -> Loaded:
        from ...ops.model import Unsupported, load_graph

        try:
            g = load_graph(model, folder)
        except Unsupported as e:
            raise Lacks(str(e)) from None
        except Interrupted:
            raise
        except OnnxopError as e:  # a model that breaks the spec (an attribute out of range)
            raise Refused(str(e)) from None
        operator = None
        if len(g.nodes) == 1 and g.nodes[0].op is not None:
            operator = f"{g.nodes[0].op.op_type}-{g.nodes[0].op.since_version}"
        return Loaded(_Session(g, self.backend), operator, g.opset)


class _Session:
    def __init__(self, g, backend: str | None) -> None:
        self.graph, self.backend = g, backend
        self.inputs, self.outputs = list(g.inputs), list(g.outputs)

    def run(self, feeds: Sequence[Any]) -> list[Any]:
        from ...core import graph
        from ...errors import OutOfScope
        from ...ops.model import Unsupported

        named = {name: t for name, t in zip(self.graph.inputs, feeds)}
        try:
            results, _ = graph.run_to_memory(graph.plan(self.graph, named, backend=self.backend), backend=self.backend)
        except Interrupted:
            raise
        except Unsupported as e:
            raise Lacks(str(e)) from None
        except OutOfScope as e:  # float arithmetic: the operator allows it, onnxop does not run it
            raise Lacks(_scope_reason(e)) from None
        except OnnxopError as e:
            raise Refused(str(e)) from None
        except Exception as e:  # noqa: BLE001 - an internal error is this case's, not the run's
            raise Refused(f"internal error: {message(e, 200)}") from None
        return list(results)


def _scope_reason(e) -> str:
    """The refusal without the node and input names, so the per-operator
    summary says it once: "float16 inputs: out of scope", "mode 'linear': out of scope"."""
    return f"{e.reason}: out of scope" if e.reason else e.message

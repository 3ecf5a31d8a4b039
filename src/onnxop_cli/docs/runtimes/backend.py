"""Any ``onnx.backend`` module (``prepare(model)`` then ``rep.run(inputs)``):
``--runtime backend:onnxruntime.backend``, ``--runtime backend:onnxop_cli.backend``."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Sequence

from ...errors import UsageError
from .base import Lacks, Loaded, arrays, message, passthrough, refusal, tensors


class BackendRuntime:
    webgpu = False

    def __init__(self, module: str) -> None:
        try:
            self.module = importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - whatever importing it raises
            passthrough(e)
            raise UsageError(f"--runtime backend:{module}: cannot import {module!r}: {message(e)}") from None
        if not callable(getattr(self.module, "prepare", None)):
            raise UsageError(f"--runtime backend:{module}: {module!r} has no prepare() (not an onnx.backend module)")
        self.name = f"backend:{module}"
        if module.split(".")[0] == "onnxruntime":  # its refusals come back as exceptions: no log lines too
            import onnxruntime

            onnxruntime.set_default_logger_severity(4)

    def load(self, model: Any, folder: Path) -> Loaded:
        check = getattr(self.module, "is_compatible", None)
        try:
            if callable(check) and not check(model):
                raise Lacks(f"{self.module.__name__}.is_compatible() says no")
            rep = self.module.prepare(model)
        except Lacks:
            raise
        except Exception as e:  # noqa: BLE001 - a backend raises what it raises
            raise refusal(e) from None
        return Loaded(_Session(rep, [o.name for o in model.graph.output]))


class _Session:
    def __init__(self, rep, outputs: list[str]) -> None:
        self.rep, self.outputs = rep, outputs

    def run(self, feeds: Sequence[Any]) -> list[Any]:
        try:
            results = self.rep.run(arrays(feeds))
        except Exception as e:  # noqa: BLE001
            raise refusal(e) from None
        return tensors(list(results), self.outputs)

"""The WebGPU implementations onnxop runs on, behind one interface (base.py).

``wgpu`` (wgpu-native, Naga) is the default; ``dawn`` (Dawn, Tint) comes with
the ``dawn`` extra; ``browser`` (headless Chromium's WebGPU, driven by
Playwright) with the ``browser`` extra and a Chromium. An engine is a module with base.Engine's functions; it is
imported only when chosen, so the other one costs nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

from ...errors import GpuError, UsageError

ENV_ENGINE = "ONNXOP_ENGINE"
ENGINES = ("wgpu", "dawn", "browser")
DEFAULT = "wgpu"
# The engines `info` surveys and `bench` measures side by side when not told
# one: the browser starts a Chromium (seconds, and every byte crosses two
# processes), so it runs only where it is named.
SIDE_BY_SIDE = ("wgpu", "dawn")
_MODULES = {"wgpu": "wgpu_native", "dawn": "dawn.engine", "browser": "browser.engine"}


def resolve_engine(engine: str | None) -> str:
    """The engine to use: the argument, else $ONNXOP_ENGINE, else wgpu."""
    name = (engine or os.environ.get(ENV_ENGINE) or DEFAULT).strip().lower()
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}{from_environment(name, ENV_ENGINE)}; choose one of "
                         f"{', '.join(ENGINES)}")
    return name


def from_environment(name: str, variable: str) -> str:
    """`` (from $VARIABLE)`` where ``name`` is what the variable holds: an unknown name the user set long ago in
    their shell ('unknown engine 'nope'' said nothing of where it came from); '' otherwise."""
    held = os.environ.get(variable, "").strip().lower()
    return f" (from ${variable})" if held and held == name else ""


def load(engine: str) -> ModuleType:
    """The engine's module; GpuError naming the extra if it is not installed."""
    module = importlib.import_module(f".{_MODULES[engine]}", __name__)
    if engine == "dawn":
        try:
            module._lib()
        except (ImportError, OSError) as e:
            raise GpuError(
                f"the dawn engine needs the dawn-python package ({module.INSTALL_HINT}): {e}"
            ) from None
    if engine == "browser" and module.missing():
        raise GpuError(module.missing())
    return module


def installed(engine: str) -> bool:
    """Whether ``engine`` can be loaded (without loading it)."""
    if engine == "dawn":
        return importlib.util.find_spec("pydawn") is not None
    if engine == "browser":
        from .browser.driver import missing

        return not missing()
    return True

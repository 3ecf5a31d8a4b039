"""``onnxop --version``: onnxop's version and those of what it runs on.

Package versions come from their installed metadata (no import, so nothing
slow is loaded); wgpu-native's from the library wgpu-py loads (gpu/version.py).
dawn-python is listed only when it is installed.
"""

from __future__ import annotations

from importlib import metadata

# (shown name, distribution name); optional ones are left out when absent
PACKAGES = [("onnxop", "onnxop"), ("wgpu-py", "wgpu"), ("numpy", "numpy"), ("onnx", "onnx"),
            ("ml_dtypes", "ml_dtypes"), ("typer", "typer"), ("rich", "rich")]
OPTIONAL = [("dawn-python", "dawn-python")]


def versions() -> dict[str, str | None]:
    """Name -> version (None: a required package that cannot be found)."""
    from ..gpu.engines.wgpu_version import native_version

    found: dict[str, str | None] = {}
    for shown, dist in PACKAGES[:1]:
        found[shown] = _version(dist)
    found["wgpu-native"] = native_version()
    for shown, dist in PACKAGES[1:]:
        found[shown] = _version(dist)
    for shown, dist in OPTIONAL:
        v = _version(dist)
        if v is not None:
            found[shown] = v
    return found


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def text(found: dict[str, str | None]) -> str:
    """``onnxop 0.1.0`` and one ``name version`` line for each of the others."""
    return "\n".join(f"{name} {v or 'not found'}" for name, v in found.items())


def document(found: dict[str, str | None]) -> dict:
    from ..render.json import base

    return base(None) | {"versions": dict(found)}

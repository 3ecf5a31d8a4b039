"""The version of the wgpu-native library wgpu-py loaded (for ``onnxop --version``)."""

from __future__ import annotations


def native_version() -> str | None:
    """``"29.0.1.1"``: what the loaded library reports, or None when it cannot be loaded."""
    try:
        from wgpu.backends.wgpu_native import _ffi
    except Exception:  # noqa: BLE001 - no library: --version still answers
        return None
    return ".".join(str(part) for part in _ffi.lib_version_info)

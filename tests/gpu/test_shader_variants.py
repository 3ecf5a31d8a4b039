"""Every variant of a specialised shader the host can ask for
(tests/shader_variants.py) compiles on this engine and backend, each under
its own pipeline-cache key and label (gpu/shaders.py's ``variant_label``),
and a compile error names the variant."""

from __future__ import annotations

import re

import pytest

from onnxop_cli.errors import GpuError
from onnxop_cli.gpu import shaders
from shader_variants import host_variants


def test_every_variant_compiles(gpu):
    for shader, constants in host_variants():
        assert gpu.pipeline(shader, constants) is gpu.pipeline(shader, dict(reversed(constants.items())))
        assert shaders.variant_label(shader, constants) in gpu._pipelines


def test_a_compile_error_names_the_variant(gpu, monkeypatch):
    real = shaders._rendered
    monkeypatch.setattr(shaders, "_rendered", lambda name, constants: real(name, constants) + "\nfn broken( {\n")
    label = shaders.variant_label("indexed_gather.wgsl", {"CASE": 2, "INDEX": 2})
    saved = gpu._pipelines.pop(label, None)
    try:
        with pytest.raises(GpuError, match=re.escape(f"compiling {label} failed")):
            gpu.pipeline("indexed_gather.wgsl", {"CASE": 2, "INDEX": 2})
    finally:
        if saved is not None:
            gpu._pipelines[label] = saved

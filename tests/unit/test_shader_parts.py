"""shaders/ and its lib parts as gpu/shaders.py loads them: every kernel has
its entry point, every part is used by a renderer (gpu/render/) and is no kernel.
(That the kernels compile and run is every GPU test's job; that
the parts ship is tests/process/test_wheel.py's.)"""

from __future__ import annotations

import re
from pathlib import Path

from onnxop_cli.gpu import shaders
from wgsl_text import part_names, shader_names
from onnxop_cli.gpu import render


def test_every_kernel_has_its_entry_point():
    for name in shader_names():
        assert re.search(r"@compute", shaders.shader_source(name)), f"{name}: no entry point"


def test_every_part_is_rendered_and_is_not_a_kernel():
    parts = part_names()
    assert parts, "no parts in shaders/lib"
    renderers = "".join(p.read_text() for p in Path(render.__file__).parent.glob("*.py"))
    rendered = set(re.findall(r'"(lib/\w+\.wgsl)"', renderers))  # the parts gpu/render/'s kernels load
    for part in parts:
        assert part in rendered, f"{part} is in no rendered kernel"
        assert part.split("/")[-1] not in shader_names()


def test_a_part_is_its_file(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "p.wgsl").write_text("fn f() -> u32 { return 7u; }\n")
    monkeypatch.setattr(shaders.resources, "files", lambda package: tmp_path)
    assert shaders.shader_source.__wrapped__("lib/p.wgsl") == "fn f() -> u32 { return 7u; }\n"

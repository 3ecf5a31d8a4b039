"""shaders/lib parts and gpu/shaders.py's ``#include``: every kernel loads
with its parts resolved, every part is used (by a kernel's include or by the
kernels gpu/render/elementwise.py renders), and a bad include is refused.
(That the resolved kernels compile and run is every GPU test's job; that
the parts ship is tests/process/test_wheel.py's.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnxop_cli.gpu import shaders
from onnxop_cli.gpu import render


def test_every_kernel_resolves_its_includes():
    for name in shaders.shader_names():
        text = shaders.shader_source(name)
        assert "#include" not in text, name
        assert re.search(r"@compute", text), f"{name}: no entry point"


def test_every_part_is_included_and_is_not_a_kernel():
    parts = shaders.part_names()
    assert parts, "no parts in shaders/lib"
    raw = {n: (shaders.resources.files("onnxop_cli.shaders") / n).read_text() for n in shaders.shader_names()}
    renderers = "".join(p.read_text() for p in Path(render.__file__).parent.glob("*.py"))
    rendered = set(re.findall(r'"(lib/\w+\.wgsl)"', renderers))  # the parts gpu/render/'s kernels load
    for part in parts:
        assert part in rendered or any(f'#include "{part}"' in t for t in raw.values()), \
            f"{part} is included by no kernel"
        assert part.split("/")[-1] not in shaders.shader_names()


def test_an_included_part_is_its_text(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "p.wgsl").write_text("fn f() -> u32 { return 7u; }\n")
    (tmp_path / "k.wgsl").write_text('const A: u32 = 1u;\n#include "lib/p.wgsl"\nconst B: u32 = 2u;\n')
    monkeypatch.setattr(shaders.resources, "files", lambda package: tmp_path)
    assert shaders._resolved("k.wgsl", ()) == "const A: u32 = 1u;\nfn f() -> u32 { return 7u; }\nconst B: u32 = 2u;\n"


@pytest.mark.parametrize("files, message", [
    ({"k.wgsl": '#include "lib/a.wgsl"\n', "lib/a.wgsl": '#include "k.wgsl"\n'}, "includes itself"),
    ({"k.wgsl": '#include "../k.wgsl"\n'}, "only plain names"),
])
def test_a_cycle_or_a_path_outside_is_refused(tmp_path, monkeypatch, files, message):
    (tmp_path / "lib").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(shaders.resources, "files", lambda package: tmp_path)
    with pytest.raises(ValueError, match=message):
        shaders._resolved("k.wgsl", ())

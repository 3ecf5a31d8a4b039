"""One hand-written entry point per shader (``main``), its variants chosen by
the ``#specialise`` constants gpu/shaders.py renders: every shipped kernel
has one entry point, the hand-written total does not grow
back, every hand-written file's header says why it is not generated, every variant the host can ask for renders with each constant defined,
and a missing, unknown or ill-typed constant is refused naming the shader.
That every variant compiles on each engine: tests/gpu/test_shader_variants.py."""

from __future__ import annotations

import re

import pytest

from onnxop_cli.gpu import shaders
from shader_variants import host_variants

ENTRY = re.compile(r"@compute\s+@workgroup_size\([^)]*\)\s*fn\s+(\w+)")
HAND_WRITTEN_AT_MOST = 19  # 89 before the variants became constants; 22 before Where, 21 before OneHot, 20 before the copy (one shared entry point) was rendered


def test_every_kernel_has_one_entry_point_main():
    for name in shaders.shader_names():
        assert ENTRY.findall(shaders.shader_text(name)) == ["main"], name


def test_the_hand_written_entry_points_stay_few():
    root = shaders.resources.files("onnxop_cli.shaders")
    files = [*shaders.shader_names(), *shaders.part_names()]
    written = sum(len(ENTRY.findall(root.joinpath(*f.split("/")).read_text())) for f in files)
    assert written <= HAND_WRITTEN_AT_MOST


def test_every_hand_written_file_says_why_it_is_not_generated():
    root = shaders.resources.files("onnxop_cli.shaders")
    for f in [*shaders.shader_names(), *shaders.part_names()]:
        lines = root.joinpath(*f.split("/")).read_text().split("\n")
        header = lines[:next(i for i, line in enumerate(lines) if not line.startswith("//"))]
        assert any(line.startswith("// By hand: ") for line in header), f


def test_every_variant_the_host_asks_for_renders_every_constant():
    asked = host_variants()
    assert {s for s, _ in asked} == {n for n in shaders.shader_names() if shaders.specialised(n)}
    for shader, constants in asked:
        text = shaders.shader_source(shader, **constants)
        assert "#specialise" not in text, shader
        for key, kind in shaders.specialised(shader).items():
            assert re.search(rf"^const {key}: {kind} = \w+;$", text, re.MULTILINE), (shader, key)
    assert len(asked) == len(set(shaders.variant_label(s, c) for s, c in asked))


def test_constants_render_as_typed_literals():
    text = shaders.shader_source("indexed_gather.wgsl", CASE=3, INDEX=1)
    assert "const CASE: u32 = 3u;" in text and "const INDEX: u32 = 1u;" in text
    assert "const WINDOWED: bool = true;" in shaders.shader_source("indexed_slabs.wgsl", WINDOWED=True)
    assert shaders.variant_label("scatter_lines.wgsl", {"OP": 3, "BITS": 16}) == "scatter_lines.wgsl[BITS=16,OP=3]"
    assert shaders.variant_label("nonzero.wgsl") == "nonzero.wgsl"


@pytest.mark.parametrize("shader,constants,says", [
    ("scatter_lines.wgsl", {"OP": 3}, "constants not given: BITS"),
    ("scatter_lines.wgsl", {}, "constants not given: BITS, OP"),
    ("nonzero.wgsl", {"OP": 3}, "constants it does not declare: OP"),
    ("scatter_lines.wgsl", {"OP": 3, "BITS": 16, "X": 1}, "constants it does not declare: X"),
    ("scatter_lines.wgsl", {"OP": -1, "BITS": 16}, "constant OP = -1 is not a u32"),
    ("scatter_lines.wgsl", {"OP": True, "BITS": 16}, "constant OP = True is not a u32"),
    ("indexed_slabs.wgsl", {"WINDOWED": 1}, "constant WINDOWED = 1 is not a bool"),
])
def test_a_wrong_constant_is_refused_naming_the_shader(shader, constants, says):
    with pytest.raises(ValueError, match=re.escape(f"shader {shader!r}: {says}")):
        shaders.shader_source(shader, **constants)

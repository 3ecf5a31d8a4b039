"""The kernels written by hand: one entry point each (``main``), their total
does not grow back (every other kernel is rendered, gpu/render/), and every
hand-written file's header says why it is not generated."""

from __future__ import annotations

import re


from onnxop_cli.gpu import shaders
from wgsl_text import part_names, shader_names

ENTRY = re.compile(r"@compute\s+@workgroup_size\([^)]*\)\s*fn\s+(\w+)")
HAND_WRITTEN_AT_MOST = 0  # every kernel rendered (89 once; 19 before the families were rendered; NonZero's last)


def test_every_kernel_has_one_entry_point_main():
    for name in shader_names():
        assert ENTRY.findall(shaders.shader_source(name)) == ["main"], name


def test_the_hand_written_entry_points_stay_few():
    root = shaders.resources.files("onnxop_cli.shaders")
    files = [*shader_names(), *part_names()]
    written = sum(len(ENTRY.findall(root.joinpath(*f.split("/")).read_text())) for f in files)
    assert written <= HAND_WRITTEN_AT_MOST


def test_every_hand_written_file_says_why_it_is_not_generated():
    root = shaders.resources.files("onnxop_cli.shaders")
    for f in [*shader_names(), *part_names()]:
        lines = root.joinpath(*f.split("/")).read_text().split("\n")
        header = lines[:next(i for i, line in enumerate(lines) if not line.startswith("//"))]
        assert any(line.startswith("// By hand: ") for line in header), f

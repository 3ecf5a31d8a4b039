"""Every (shader, constants) the host modules can ask gpu/shaders.py for,
read from their data (the variants by name), for the tests that check each
renders (tests/unit/test_shader_entries.py) and compiles
(tests/gpu/test_shader_variants.py)."""

from __future__ import annotations

from onnxop_cli.gpu import gather_lines
from onnxop_cli.gpu.kernels import shader_const


def host_variants() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    out += [(gather_lines.SHADER, {"UNIT": unit, "KIND": shader_const(gather_lines.SHADER, kind)})
            for unit in (1, 2) for kind in ("I32", "I64")]
    return out

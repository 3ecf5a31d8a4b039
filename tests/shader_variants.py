"""Every (shader, constants) the host modules can ask gpu/shaders.py for,
read from their data (the variants by name), for the tests that check each
renders (tests/unit/test_shader_entries.py) and compiles
(tests/gpu/test_shader_variants.py)."""

from __future__ import annotations



def host_variants() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    return out

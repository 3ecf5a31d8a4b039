"""Every (shader, constants) the host modules can ask gpu/shaders.py for,
read from their data (the variants by name), for the tests that check each
renders (tests/unit/test_shader_entries.py) and compiles
(tests/gpu/test_shader_variants.py)."""

from __future__ import annotations

from onnxop_cli.gpu import (elements_rows, indexed, nd_rows, scatter, scatter_claims,
                            scatter_lines, slice_gathers)


def host_variants() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    out += [(scatter_lines.LINES, scatter_lines.constants(n)) for n in scatter_lines.VARIANTS]
    out += [(indexed.GATHER, indexed.constants(n)) for n in indexed.VARIANTS]
    out += [(m.SHADER, {"WORDS": words}) for m in (elements_rows, nd_rows) for words in (1, 2)]
    out += [(slice_gathers.SLABS, {"WINDOWED": w}) for w in (False, True)]
    out += [(scatter.APPLY, c) for c in scatter.APPLY_KERNELS.values()]
    out += [(scatter_claims.CLAIMS, c) for c in scatter_claims.PASSES.values()]
    out += [(scatter.SLICES, {"STEP": step, "RAW": raw}) for step in scatter.SLICE_STEPS.values()
            for raw in (False, True)]
    return out

"""The whole-slice and row gathers the renderer writes (gpu/render/slices.py:
words, whole, windowed; gpu/render/rows.py: GatherND's pairs and
GatherElements' runs at one and two words): each through the one frame, one
entry point ``main`` at its schedule's workgroup size, the Params read back
from the WGSL the Struct the host packs, the bindings the layout the host
binds (src, dst, params, axes, raw, status), no text the file loader would
have to resolve. That each compiles and is exact on an adapter:
tests/gpu/test_gather_nd.py, test_gather_slab_windows.py,
test_gather_elements_rows.py, test_nd_pairs_bands.py."""

from __future__ import annotations

import re

import pytest

from wgsl_text import parse
from onnxop_cli.gpu.render import indices, rows, slices

KERNELS = [*slices.KERNELS.values(), *rows.KERNELS.values()]
ENTRY = re.compile(r"@compute\s+@workgroup_size\((\d+)\)\s*fn\s+(\w+)")
KINDS = ("read-only-storage", "storage", "uniform", "read-only-storage", "read-only-storage", "storage")


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.label)
def test_each_variant_renders_through_the_frame(kernel):
    text = kernel.wgsl()
    assert ENTRY.findall(text) == [(str(kernel.schedule.wg), "main")]
    assert "#include" not in text and "#specialise" not in text
    assert parse(text, "Params").fields == kernel.PARAMS.layout.fields
    assert kernel.kinds == KINDS
    for name, field, _ in kernel.schedule.CONSTS:
        assert f"const {name}: u32 = {getattr(kernel.schedule, field)}u;" in text
    assert len(set(k.label for k in KERNELS)) == len(KERNELS)  # the pipeline cache's keys


def test_each_width_renders_its_own_body_alone():
    for (_, words), kernel in rows.KERNELS.items():
        text = kernel.wgsl()
        assert f"fn words{words}(" in text and f"fn words{3 - words}(" not in text
    assert "fn base_of(" in slices.KERNELS["windowed"].wgsl()
    assert "fn base_of(" not in slices.KERNELS["whole"].wgsl()


def test_the_tables_are_the_structs_the_host_packs():
    assert parse(rows.KERNELS["gather-elements", 1].wgsl(), "Axis").fields == indices.AXIS.layout.fields
    assert indices.AXIS.layout.pack_rows([{"dim": 2, "stride": 7}]) == bytes([2, 0, 0, 0, 7]) + bytes(11)
    assert rows.ELEMENTS_PARAMS.pack(count=1, groups_x=1, rank=1, iswap=0, bound=1, lstride=1)[-8:] == bytes(8)
    with pytest.raises(ValueError):
        rows.NdRows(3)
    with pytest.raises(ValueError):
        slices.SliceGather("rows")

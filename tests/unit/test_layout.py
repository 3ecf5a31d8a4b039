"""Kernel parameters are declared once (gpu/layout.py's Struct): every
kernel's ``Params`` has a host layout, the one its WGSL declares, the offsets follow WGSL's
rules, packing by name refuses what the struct lacks or does not fit, and
no module of gpu/ outside the engines packs a Params by position."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from onnxop_cli.gpu.render import nonzero
from wgsl_text import parse, shader_names, structs
from onnxop_cli.gpu.render.scatter import ROUND_PARAMS

GPU = Path(__file__).resolve().parents[2] / "src" / "onnxop_cli" / "gpu"
# a kernel that packs a table of its own records -> the module declaring them (KERNEL, PARAMS, the records;
# tests/unit/test_kernel_render.py holds every rendered kernel's Params to its layout)
DECLARED = {nonzero.KERNEL.label: nonzero}


def test_no_kernel_is_written_by_hand():
    assert shader_names() == []  # shaders/ holds only lib parts


@pytest.mark.parametrize("shader", sorted(DECLARED))
def test_every_kernel_params_has_a_layout(shader):
    """The Params the host packs (the module's PARAMS) is the struct its kernel's WGSL declares."""
    text = DECLARED[shader].KERNEL.wgsl()
    lay = parse(text, "Params", shader)
    assert lay.fields == DECLARED[shader].PARAMS.layout.fields
    assert lay.fields[0].offset == 0
    ends = [f.offset + f.size for f in lay.fields]
    assert all(f.offset % f.align == 0 for f in lay.fields)
    assert all(b.offset >= a for a, b in zip(ends, lay.fields[1:]))  # in order, no overlap
    assert lay.size >= ends[-1] and lay.size % max(f.align for f in lay.fields) == 0
    assert "var<uniform> params: Params;" in text


@pytest.mark.parametrize("shader", sorted(DECLARED))
def test_every_array_of_records_has_a_layout(shader):
    """A storage array of a shader's struct (``axes: array<Axis>``) is packed
    by that struct's layout (``pack_rows``): it parses, and its size is its
    stride in the array (a multiple of its alignment)."""
    text = DECLARED[shader].KERNEL.wgsl()
    for name in set(re.findall(r"var<storage\b[^>]*>\s*\w+\s*:\s*array<(\w+)>", text)) & set(structs(text)):
        lay = parse(text, name, shader)
        assert lay.size % lay.align == 0 and lay.size >= lay.fields[-1].offset + lay.fields[-1].size


# A table of records is bound as an array of 16-byte words and each row is
# read by one vec4 load in an accessor that names its four lanes as a struct
# (a struct-typed binding made lavapipe load field by field: render/indices.py's
# table_row says what it cost); a table of two kinds of rows (WGSL has no unions) has an
# accessor per kind. The host packs every kind by name (pack_rows).
_ACCESSOR = re.compile(r"fn (\w+)\(r: u32\) -> (\w+) \{\s*let a = axes\[r\];\s*return \2\(([^)]*)\);")
TABLES = {  # shader -> the record structs its accessors read
    "nonzero": {"Axis"},
}


@pytest.mark.parametrize("shader", sorted(DECLARED))
def test_table_rows_are_read_through_their_accessors(shader):
    """A shader that binds ``axes`` binds ``array<vec4<u32>>`` and reads a
    row only through accessors, each of a struct of four u32 words handed
    over lane by lane in order: the struct the host packs by name is the
    struct the kernel reads."""
    text = DECLARED[shader].KERNEL.wgsl()
    code = re.sub(r"//.*", "", text)
    found = _ACCESSOR.findall(code)
    assert {struct_name for _, struct_name, _ in found} == TABLES.get(shader, set())
    if not found:
        return
    assert re.search(r"var<storage, read> axes: array<vec4<u32>>;", code), shader
    for _, struct_name, lanes in found:
        lay = parse(text, struct_name, shader)
        assert lay.fields == getattr(DECLARED[shader], struct_name.upper()).layout.fields
        assert lay.size == 16 and [f.scalar for f in lay.fields] == ["u32"] * 4
        assert [x.strip() for x in lanes.split(",")] == ["a.x", "a.y", "a.z", "a.w"], shader
    assert len(re.findall(r"axes\[", code)) == len(found), shader  # no row read any other way


def test_no_records_packed_by_position_in_gpu():
    """Tables of records go through layout.pack_rows: what struct.pack still
    writes in gpu/ is plain words (a status or fault row the kernel resets, an
    array<u32> of counts or bounds, a fill word), never a row of a struct."""
    offenders = []
    for path in sorted(GPU.glob("*.py")):
        if path.name == "layout.py":
            continue
        for line in path.read_text().splitlines():
            if "struct.pack(" not in line:
                continue
            words = re.search(r'struct\.pack\(f?"<(\d*)I"', line)
            plain = words is not None and words.group(1) in ("", "4") and (
                words.group(1) == "" or re.search(r"write_buffer\((status|fault), 0, ", line))
            if not (plain or re.search(r'struct\.pack\(f"<\{', line)):
                offenders.append(f"{path.name}: {line.strip()}")
    assert offenders == []


def test_records_pack_row_by_row_by_name():
    rows = [{"dim": 3, "stride": 1}, {"dim": 5, "stride": -1}]
    assert nonzero.AXIS.layout.pack_rows(rows) == struct.pack("<8I", 3, 1, 0, 0, 5, 0xFFFFFFFF, 0, 0)
    with pytest.raises(KeyError, match="no field 'x'"):
        nonzero.AXIS.layout.pack_rows([{"dim": 2, "x": 7}])


def test_the_index_table_rows_are_the_structs_its_kernels_declare():
    """gpu/index_table.py's rows (what the slice plans and the indexed gather pack) are the Axis and
    Lookup every kernel that reads such a table declares (render/indices.py's table())."""
    from onnxop_cli.gpu.index_table import TABLE_AXIS, TABLE_LOOKUP
    from onnxop_cli.gpu.render import indexed, rows, scatter_slices, slices

    for kernel in (indexed.gather("lookups_i64"), rows.KERNELS["gather-nd", 1], slices.KERNELS["whole"],
                   scatter_slices.Slices("claim", True)):
        text = kernel.wgsl()
        assert parse(text, "Axis").fields == TABLE_AXIS.layout.fields, kernel.label
        assert parse(text, "Lookup").fields == TABLE_LOOKUP.layout.fields, kernel.label


def test_the_elementwise_axes_table_is_its_declared_struct():
    from onnxop_cli.gpu.render.elementwise import AXIS, BINDINGS

    assert "axes: array<Axis>;" in "".join(b.wgsl() for b in BINDINGS) and "struct Axis {" in AXIS.wgsl()
    row = {"extent": 4, "s0": 1, "s1": 0, "s2": 2}
    assert AXIS.layout.pack_rows([row]) == struct.pack("<4I", 4, 1, 0, 2)


def test_offsets_follow_wgsl_alignment():
    lay = parse("""
struct Inner {
    a: u32,
    b: u32,
}
struct Params {
    x: u32,          // one word
    y: vec2<u32>,    // aligned to 8
    z: u32,
    w: vec4<u32>,    // aligned to 16
    s: Inner,
}
""", "Params")
    assert [(f.name, f.offset) for f in lay.fields] == [("x", 0), ("y", 8), ("z", 16), ("w", 32), ("s", 48)]
    assert lay.size == 64  # a multiple of the largest alignment, 16
    data = lay.pack(x=1, y=-2, z=3, w=(4, 5, 6, 7), s={"a": 8, "b": 9})
    assert struct.unpack_from("<I", data, 0) == (1,)
    assert struct.unpack_from("<q", data, 8) == (-2,)
    assert struct.unpack_from("<4I", data, 32) == (4, 5, 6, 7)
    assert struct.unpack_from("<2I", data, 48) == (8, 9)
    with pytest.raises(ValueError, match="no host layout"):  # no kernel declares an array member
        parse("struct Params {\n    t: array<vec4<u32>, 2>,\n}\n", "Params")


def test_packing_refuses_what_the_struct_does_not_say():
    lay = ROUND_PARAMS.layout  # the rounds' kernels' (gpu/render/scatter.py)
    assert lay.names == ("count", "groups_x", "direct", "base", "size", "default_nan", "nan_first", "pad0")
    nan = dict(default_nan=6, nan_first=7)
    assert lay.pack(count=1, groups_x=2, direct=5, base=3, size=4, **nan) == struct.pack("<8I", 1, 2, 5, 3, 4, 6, 7, 0)
    with pytest.raises(KeyError, match="no field 'bsae'"):
        lay.pack(count=1, groups_x=2, direct=5, bsae=3, size=4, **nan)
    with pytest.raises(KeyError, match="'base' is not given"):
        lay.pack(count=1, groups_x=2, direct=5, size=4, **nan)
    with pytest.raises(ValueError, match="does not fit"):
        lay.pack(count=1 << 32, groups_x=2, direct=5, base=3, size=4, **nan)
    assert lay.pack(count=-1, groups_x=0, direct=0, base=0, size=0, **nan)[:4] == b"\xff\xff\xff\xff"  # an int32 as u32 bits


def test_pad_fields_are_zero_when_left_out():
    from onnxop_cli.gpu.render.rows import ELEMENTS_PARAMS

    lay = ELEMENTS_PARAMS.layout
    data = lay.pack(count=1, groups_x=1, rank=1, iswap=0, bound=1, lstride=1)
    assert data[-8:] == bytes(8)


def test_kernels_that_share_a_params_buffer_share_its_layout():
    # one slice plan (gpu/render/slices.py) fills both slice kernels' Params: the gather's and the scatter's render
    from onnxop_cli.gpu.render import scatter_slices, slices

    assert slices.KERNELS["words"].PARAMS is scatter_slices.Slices("claim").PARAMS


def test_no_params_packed_by_position_in_gpu():
    """Params go through layout.pack; struct.pack is left for the tables of
    axis entries, status words and counts (arrays, not a kernel's Params)."""
    offenders = []
    for path in sorted(GPU.glob("*.py")):
        for m in re.finditer(r"struct\.pack\(\s*\"<([0-9IQqi]+)\"", path.read_text()):
            fields = sum(int(n or 1) for n in re.findall(r"(\d*)[IQqi]", m.group(1)))
            if fields > 4:  # an axis entry or a status row is 4 words; a Params is more
                offenders.append(f"{path.name}: {m.group(0)}")
    assert offenders == []


def test_a_declared_struct_renders_its_wgsl_and_packs_by_the_same_layout():
    from onnxop_cli.gpu.render.elementwise import PARAMS
    from onnxop_cli.gpu.layout import Struct

    s = Struct("P", (("a", "u32"), ("b", "vec2<u32>"), ("c", "u32"), ("d", "vec4<u32>")))
    assert s.wgsl() == "struct P {\n    a: u32,\n    b: vec2<u32>,\n    c: u32,\n    d: vec4<u32>,\n}\n"
    raw = s.pack(a=1, b=(2, 3), c=4, d=(5, 6, 7, 8))
    assert s.size == 48 and struct.unpack("<12I", raw) == (1, 0, 2, 3, 4, 0, 0, 0, 5, 6, 7, 8)
    assert "struct Params {" in PARAMS.wgsl() and "konst: vec4<u32>," in PARAMS.wgsl()
    with pytest.raises(ValueError, match="4 values, got 2"):
        PARAMS.pack(units=1, groups_x=1, count=1, e0=0, rank=1, strided=0, saturate=0, round=0, base=(1, 2), konst=(0, 0, 0, 0))
    with pytest.raises(KeyError, match="'konst' is not given"):
        PARAMS.pack(units=1, groups_x=1, count=1, e0=0, rank=1, strided=0, saturate=0, round=0, base=(0, 0, 0, 0))

"""gpu/params.py: a kernel's parameter struct declared once -- the WGSL text
and the host's bytes both come from the declaration, laid out as WGSL lays
out a uniform struct (vec2 on 8 bytes, vec4 on 16, the size a multiple of
16), packed by field name only."""

from __future__ import annotations

import struct

import pytest

from onnxop_cli.gpu.elementwise_wgsl import PARAMS
from onnxop_cli.gpu.params import Struct


def test_layout_follows_wgsl_alignment():
    s = Struct("P", (("a", "u32"), ("b", "vec2<u32>"), ("c", "u32"), ("d", "vec4<u32>")))
    raw = s.pack({"a": 1, "b": (2, 3), "c": 4, "d": (5, 6, 7, 8)})
    assert s.size == 48 and len(raw) == 48
    assert struct.unpack("<12I", raw) == (1, 0, 2, 3, 4, 0, 0, 0, 5, 6, 7, 8)
    assert s.wgsl() == "struct P {\n    a: u32,\n    b: vec2<u32>,\n    c: u32,\n    d: vec4<u32>,\n}\n"


def test_fields_are_packed_by_name_only():
    assert PARAMS.pack({}) == bytes(PARAMS.size)  # a field left out is 0
    assert struct.unpack_from("<I", PARAMS.pack({"e0": 0xFFFFFFFF + 1 + 5}), 12) == (5,)  # u32, wrapped
    with pytest.raises(KeyError, match="has no field rank2"):
        PARAMS.pack({"rank2": 1})
    with pytest.raises(ValueError, match="takes 4 words, got 2"):
        PARAMS.pack({"base": (1, 2)})
    with pytest.raises(ValueError, match="not one of"):
        Struct("Q", (("x", "f32"),))
    assert "struct Params {" in PARAMS.wgsl() and "konst: vec4<u32>," in PARAMS.wgsl()

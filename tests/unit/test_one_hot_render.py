"""OneHot's kernel as the renderer writes it (gpu/words/one_hot.py): every
schedule the host can choose renders one entry point whose Params is the
declared struct the host packs, the host picks the body by width and line,
and a schedule the bodies cannot run is refused. That each render compiles
and is exact on an adapter: tests/gpu/test_one_hot_kernel.py."""

from __future__ import annotations

import re
import struct

import pytest

from onnxop_cli.gpu import one_hot
from onnxop_cli.gpu.layout import parse
from onnxop_cli.gpu.words.one_hot import PARAMS, SCHEDULES, OneHot
from onnxop_cli.gpu.words.schedule import Words

ENTRY = re.compile(r"@compute\s+@workgroup_size\((\d+)\)\s*fn\s+(\w+)")


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_each_schedule_renders_one_entry_point_with_the_declared_params(name):
    schedule = SCHEDULES[name]
    text = OneHot(schedule).wgsl()
    assert ENTRY.findall(text) == [(str(schedule.wg), "main")]
    assert f"const WG: u32 = {schedule.wg}u;" in text and f"const WORDS: u32 = {schedule.words}u;" in text
    assert re.search(rf"^fn {name}\(", text, re.MULTILINE) and f"    {name}(wg, lid);" in text
    read_back = parse(text, "Params", name)
    assert [(f.name, f.offset, f.size) for f in read_back.fields] == [
        (f.name, f.offset, f.size) for f in PARAMS.layout.fields]
    assert read_back.size == PARAMS.size == 80
    assert "#specialise" not in text and "#include" not in text and "KERNEL" not in text


def test_params_pack_by_name_with_the_values_as_words():
    raw = PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, line=0xFFFFFFFF, depth=5, d0=1, q0=3, ibits=64,
                      kind=2, swap=1, off=(1, 2, 3, 4), on=(5, 6, 7, 8))
    assert struct.unpack("<20I", raw) == (9, 2, 33, 8, 0xFFFFFFFF, 5, 1, 3, 64, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8)
    with pytest.raises(KeyError, match="'on' is not given"):
        PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, line=1, depth=5, d0=1, q0=3, ibits=64, kind=2, swap=1,
                    off=(1, 2, 3, 4))


def test_the_host_picks_each_body_by_width_and_line():
    assert [one_hot.variant(bits, 1) for bits in (2, 8, 16, 32, 64, 128)] == ["small"] * 3 + ["wide"] * 3
    assert [one_hot.variant(bits, 7) for bits in (8, 32, 128)] == ["small", "wide_lines", "wide_lines"]
    assert {one_hot.variant(b, i) for b in (8, 32) for i in (1, 2)} == set(SCHEDULES)


@pytest.mark.parametrize("bad", [{"variant": "rows"}, {"variant": "wide", "words": 8},
                                 {"variant": "small", "wg": 100}], ids=repr)
def test_a_schedule_the_bodies_cannot_run_is_refused(bad):
    with pytest.raises(ValueError, match="no whole-word schedule"):
        OneHot(Words(**bad))


def test_labels_name_the_schedule():
    assert OneHot(SCHEDULES["wide_lines"]).label == "one-hot words wide_lines[wg=256,words=16]"
    assert len({OneHot(s).label for s in SCHEDULES.values()}) == len(SCHEDULES)

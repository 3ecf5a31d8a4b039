"""Where's select as the renderer writes it (gpu/words/select.py): every
schedule the host can choose renders one entry point whose Params is the
declared struct the host packs, its constants are the schedule's, and a
schedule the bodies cannot run is refused. That each render compiles and
is exact on an adapter: tests/gpu/test_where.py."""

from __future__ import annotations

import re
import struct

import pytest

from onnxop_cli.gpu import elementwise
from onnxop_cli.gpu.layout import parse
from onnxop_cli.gpu.words.select import PARAMS, SCHEDULES, Select, Words

ENTRY = re.compile(r"@compute\s+@workgroup_size\((\d+)\)\s*fn\s+(\w+)")


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_each_schedule_renders_one_entry_point_with_the_declared_params(name):
    schedule = SCHEDULES[name]
    text = Select(schedule).wgsl()
    assert ENTRY.findall(text) == [(str(schedule.wg), "main")]
    assert f"const WG: u32 = {schedule.wg}u;" in text and f"const WORDS: u32 = {schedule.words}u;" in text
    assert re.search(rf"^fn {name}\(", text, re.MULTILINE) and f"    {name}(wg, lid);" in text
    read_back = parse(text, "Params", name)
    assert [(f.name, f.offset, f.size) for f in read_back.fields] == [
        (f.name, f.offset, f.size) for f in PARAMS.layout.fields]
    assert read_back.size == PARAMS.size == 80
    assert "#specialise" not in text and "#include" not in text


def test_params_pack_by_name_with_the_inputs_as_records():
    run = {"q0": 1, "r0": 2, "div": 3, "wrap": 0xFFFFFFFF}
    raw = PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, c_full=0, x_full=1, y_full=1, in_dst=2, c=run, x=run,
                      y=run)
    assert struct.unpack("<8I", raw[:32]) == (9, 2, 33, 8, 0, 1, 1, 2)
    assert struct.unpack("<12I", raw[32:]) == (1, 2, 3, 0xFFFFFFFF) * 3
    with pytest.raises(KeyError, match="'y' is not given"):
        PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, c_full=0, x_full=1, y_full=1, in_dst=2, c=run, x=run)


def test_the_host_picks_each_schedule_by_width_and_forms():
    n = 9 * 16
    assert elementwise.variant(32, [(1, 16), (1, n), (1, n)], n) == "rows"
    assert elementwise.variant(32, [(1, 15), (1, n), (1, n)], n) == "wide"  # a row under 16 bytes
    assert elementwise.variant(32, [(1, n), (1, n), (1, n)], n) == "wide"
    assert elementwise.variant(64, [(1, 16), (1, n), (1, n)], n) == "wide"
    assert elementwise.variant(16, [(1, 16), (1, n), (1, n)], n) == "small"
    assert {elementwise.variant(b) for b in (8, 16, 32, 64, 128)} == {"small", "wide"} <= set(SCHEDULES)


@pytest.mark.parametrize("bad", [{"variant": "tiles"}, {"variant": "wide", "words": 8}, {"variant": "wide", "words": 48},
                                 {"variant": "rows", "words": 136}, {"variant": "small", "wg": 100}], ids=repr)
def test_a_schedule_the_bodies_cannot_run_is_refused(bad):
    with pytest.raises(ValueError, match="no whole-word schedule"):
        Select(Words(**bad))


def test_labels_name_the_schedule():
    assert Select(SCHEDULES["rows"]).label == "select words rows[wg=256,words=128]"
    assert len({Select(s).label for s in SCHEDULES.values()}) == len(SCHEDULES)

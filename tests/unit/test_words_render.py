"""The kernels the whole-word renderer writes (gpu/words/): Where's select
and OneHot's. Every schedule the host can choose renders one entry point
whose Params is the declared struct the host packs, its constants are the
schedule's, the host picks each body by width (and forms or line), and a
schedule the bodies cannot run is refused. That each render compiles and is
exact on an adapter: tests/gpu/test_where.py, tests/gpu/test_one_hot_kernel.py."""

from __future__ import annotations

import re
import struct

import pytest

from onnxop_cli.gpu import elementwise, one_hot
from onnxop_cli.gpu.layout import parse
from onnxop_cli.gpu.words import one_hot as words_one_hot
from onnxop_cli.gpu.words import select
from onnxop_cli.gpu.words.schedule import Words

ENTRY = re.compile(r"@compute\s+@workgroup_size\((\d+)\)\s*fn\s+(\w+)")
RENDERS = {"select": (select.Select, select.SCHEDULES, select.PARAMS),
           "one_hot": (words_one_hot.OneHot, words_one_hot.SCHEDULES, words_one_hot.PARAMS)}


@pytest.mark.parametrize("render, name", [(r, n) for r, (_, schedules, _) in RENDERS.items()
                                          for n in sorted(schedules)])
def test_each_schedule_renders_one_entry_point_with_the_declared_params(render, name):
    kernel, schedules, params = RENDERS[render]
    schedule = schedules[name]
    text = kernel(schedule).wgsl()
    assert ENTRY.findall(text) == [(str(schedule.wg), "main")]
    assert f"const WG: u32 = {schedule.wg}u;" in text and f"const WORDS: u32 = {schedule.words}u;" in text
    assert re.search(rf"^fn {name}\(", text, re.MULTILINE) and f"    {name}(wg, lid);" in text
    read_back = parse(text, "Params", name)
    assert [(f.name, f.offset, f.size) for f in read_back.fields] == [
        (f.name, f.offset, f.size) for f in params.layout.fields]
    assert read_back.size == params.size == 80
    assert "#specialise" not in text and "#include" not in text and "KERNEL" not in text


def test_select_params_pack_by_name_with_the_inputs_as_records():
    run = {"q0": 1, "r0": 2, "div": 3, "wrap": 0xFFFFFFFF}
    raw = select.PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, c_full=0, x_full=1, y_full=1, in_dst=2, c=run,
                             x=run, y=run)
    assert struct.unpack("<8I", raw[:32]) == (9, 2, 33, 8, 0, 1, 1, 2)
    assert struct.unpack("<12I", raw[32:]) == (1, 2, 3, 0xFFFFFFFF) * 3
    with pytest.raises(KeyError, match="'y' is not given"):
        select.PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, c_full=0, x_full=1, y_full=1, in_dst=2, c=run, x=run)


def test_the_host_picks_each_select_schedule_by_width_and_forms():
    n = 9 * 16
    assert elementwise.variant(32, [(1, 16), (1, n), (1, n)], n) == "rows"
    assert elementwise.variant(32, [(1, 15), (1, n), (1, n)], n) == "wide"  # a row under 16 bytes
    assert elementwise.variant(32, [(1, n), (1, n), (1, n)], n) == "wide"
    assert elementwise.variant(64, [(1, 16), (1, n), (1, n)], n) == "wide"
    assert elementwise.variant(16, [(1, 16), (1, n), (1, n)], n) == "small"
    assert {elementwise.variant(b) for b in (8, 16, 32, 64, 128)} == {"small", "wide"} <= set(select.SCHEDULES)


def test_one_hot_params_pack_by_name_with_the_values_as_words():
    raw = words_one_hot.PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, line=0xFFFFFFFF, depth=5, d0=1, q0=3,
                                    ibits=64, kind=2, swap=1, off=(1, 2, 3, 4), on=(5, 6, 7, 8))
    assert struct.unpack("<20I", raw) == (9, 2, 33, 8, 0xFFFFFFFF, 5, 1, 3, 64, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8)
    with pytest.raises(KeyError, match="'on' is not given"):
        words_one_hot.PARAMS.pack(words=9, groups_x=2, elems=33, bits=8, line=1, depth=5, d0=1, q0=3, ibits=64,
                                  kind=2, swap=1, off=(1, 2, 3, 4))


def test_the_host_picks_each_one_hot_body_by_width_and_line():
    assert [one_hot.variant(bits, 1) for bits in (2, 8, 16, 32, 64, 128)] == ["small"] * 3 + ["wide"] * 3
    assert [one_hot.variant(bits, 7) for bits in (8, 32, 128)] == ["small", "wide_lines", "wide_lines"]
    assert {one_hot.variant(b, i) for b in (8, 32) for i in (1, 2)} == set(words_one_hot.SCHEDULES)


BAD = {"select": [{"variant": "tiles"}, {"variant": "wide", "words": 8}, {"variant": "wide", "words": 48},
                  {"variant": "rows", "words": 136}, {"variant": "small", "wg": 100}],
       "one_hot": [{"variant": "rows"}, {"variant": "wide", "words": 8}, {"variant": "small", "wg": 100}]}


@pytest.mark.parametrize("render, bad", [(r, b) for r, bads in BAD.items() for b in bads], ids=repr)
def test_a_schedule_the_bodies_cannot_run_is_refused(render, bad):
    with pytest.raises(ValueError, match="no whole-word schedule"):
        RENDERS[render][0](Words(**bad))


LABELS = [("select", "rows", "select words rows[wg=256,words=128]"),
          ("one_hot", "wide_lines", "one-hot words wide_lines[wg=256,words=16]")]


@pytest.mark.parametrize("render, name, label", LABELS)
def test_labels_name_the_schedule(render, name, label):
    kernel, schedules, _ = RENDERS[render]
    assert kernel(schedules[name]).label == label
    assert len({kernel(s).label for s in schedules.values()}) == len(schedules)

"""One table style (tables.py): plain aligned text when piped, rich on a
terminal, and names never truncated -- checked under a real pseudo-terminal
at 80 and 120 columns, as a person sees it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from commands import terminal_output
from onnxop_cli.cli import tables
from onnxop_cli.docs.pages import seed_pages

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG = "test_cc_flatten_negative_axis_with_a_much_longer_name_than_usual"


def run_in_pty(argv: list[str], columns: int, cwd: Path = REPO, *, command: list[str] | None = None,
               env: dict[str, str] | None = None) -> str:
    """stdout and stderr of ``python -m onnxop_cli ARGV`` (or ``command``
    ARGV, with ``env`` in place of this process's) on a pseudo-terminal of
    ``columns`` columns, colour codes removed."""
    leader, follower = os.openpty()
    env = dict(os.environ if env is None else env, COLUMNS=str(columns), LINES="50", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "onnxop_cli"] if command is None else command
    proc = subprocess.Popen([*command, *argv], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, cwd=cwd, env=env)
    os.close(follower)
    text = terminal_output(leader, proc)
    proc.wait(timeout=60)
    return ANSI.sub("", text).replace("\r\n", "\n")


def cols():
    return tables.columns(["page", "example", "op", "inputs", "result"], names=("page", "example"), status=("result",))


ROWS = [["Flatten-25.txt", LONG, "Flatten", "a (2, 3, 4, 5) float32, b (120, 1) float32", "passed"],
        ["Flatten-25.txt", "test_x", "Flatten", "a (2,) float32", "FAILED"]]


def test_plain_is_aligned_text_with_right_justified_numbers():
    c = tables.columns(["name", "n"], names=("name",), right=("n",))
    assert tables.plain(c, [["a", "1"], ["bbb", "22"]]) == "name   n\na      1\nbbb   22"


@pytest.mark.parametrize("width", [40, 80, 120])
def test_rich_never_truncates_names_and_keeps_every_other_character(width):
    text = ANSI.sub("", tables.rich_text(cols(), ROWS, width=width))
    assert LONG in text and "…" not in text
    # wrapped and folded columns lose no character: every one of the cells is drawn
    drawn = re.sub(r"[\s│┃━─┏┓┗┛┡┩└┘┬┴┳╇]", "", text)
    given = "".join(c.header for c in cols()) + "".join("".join(r) for r in ROWS)
    assert sorted(drawn) == sorted(given.replace(" ", ""))


def test_a_table_that_fits_stays_within_the_terminal():
    text = ANSI.sub("", tables.rich_text(cols(), ROWS, width=200))
    assert max(len(line) for line in text.splitlines()) <= 200


@pytest.mark.parametrize("columns", [80, 120])
def test_doc_examples_listing_on_a_terminal_shows_every_name_in_full(columns):
    out = run_in_pty(["doc-examples"], columns)
    names = [ex.name for page in seed_pages() for ex in page.examples]
    assert len(names) == 17
    missing = [n for n in names if n not in out]
    assert missing == [] and "…" not in out
    assert "┃" in out  # the rich table, not the plain one


@pytest.mark.parametrize("columns", [80, 120])
def test_doc_examples_check_on_a_terminal_shows_every_name_in_full(backend, columns):
    out = run_in_pty(["doc-examples", "--check", "-b", backend], columns)
    names = [ex.name for page in seed_pages() for ex in page.examples]
    assert [n for n in names if n not in out] == [] and "…" not in out
    assert out.rstrip().splitlines()[-1] == "17 passed, 0 failed"


@pytest.mark.parametrize("columns", [80, 120])
def test_conformance_on_a_terminal_is_the_same_table_style(backend, columns):
    out = run_in_pty(["conformance", "samples/node", "-b", backend], columns)
    for name in ("test_flatten_axis1", "test_relu", "test_unsqueeze_two_axes", "Unsqueeze-25"):
        assert name in out
    assert "┃" in out and "…" not in out
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed, 1 skipped"


def test_piped_tables_are_plain(backend):
    out = subprocess.run([sys.executable, "-m", "onnxop_cli", "conformance", "samples/node", "-b", backend],
                         cwd=REPO, capture_output=True, text=True, env=dict(os.environ, COLUMNS="40")).stdout
    assert out.splitlines()[0] == "case                     operator      opset  data sets  result"
    assert "┃" not in out


def test_bench_table_goes_through_tables(monkeypatch):
    from onnxop_cli.cli.bench_report import EngineRun, Report, Row, render_table

    engine = EngineRun("wgpu", "gpu", "vulkan", "drv", "wall clock", "copy", "measured", {}, "mapped")
    report = Report("gpu", "vulkan", "drv", "today", "wall clock", 1, 0, "copy", "measured", {}, "mapped", 2, [0.1],
                    engines=[engine],
                    rows=[Row(1 << 20, "wgpu", "kernel", "copy", 1.5, 1.0, 2.0, 1, 0.5, 0.25, True),
                          Row(1 << 20, None, "numpy memcpy", None, 3.0, 2.5, 3.5, 1)])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    text = render_table(report)
    assert (
        "size   engine  measure        GB/s  (min-max)    kernel/copy  kernel/memcpy\n"
        "1 MiB  wgpu    kernel copy *  1.50  (1.00-2.00)        0.50x          0.25x\n"
        "               numpy memcpy   3.00  (2.50-3.50)\n"
    ) in text
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert "┃" in render_table(report)


@pytest.mark.parametrize("terminal", [False, True])
def test_control_characters_in_names_are_escaped(terminal):
    c = tables.columns(["case"], names=("case",))
    text = tables.render(c, [["evil\x1b]0;owned\x07name"]], terminal=terminal, width=80)
    assert "\x07" not in text and "evil\\x1b]0;owned\\x07name" in ANSI.sub("", text)


def test_a_columns_of_0_on_a_terminal_prints_every_value():
    """rich took COLUMNS=0 for a terminal of width 0 and printed nothing: show
    and every operator's print lost all their text on a terminal, exit 0. A 0
    reads as unset (the terminal's own width), for tables too."""
    text = run_in_pty(["show", "samples/x.npy"], 0)
    assert "x: shape=(3, 4, 5), dtype=float32" in text and "[55., 56., 57., 58., 59.]]]" in text
    table = run_in_pty(["show", "samples/x.npy", "--brief"], 0)
    assert "x" in table and "29.5" in table and "float32" in table


def test_bench_schedule_figures_carry_their_questions_unit(monkeypatch):
    """gather_source's figures are the share of a device buffer the process's memory grew by, not a
    speed: bench's text labelled them GB/s ('streamed 1.00 GB/s, resident 0.00 GB/s'), where info says
    them bare. Each question's figures carry its own unit."""
    from onnxop_cli.cli.bench_report import EngineRun, Report, render_table

    schedules = {"gather_source": {"name": "streamed", "reason": "cached", "gbps": {"streamed": 1.0, "resident": 0.0}},
                 "nd_run": {"name": "long", "reason": "measured", "gbps": {"long": 0.17, "short": 0.15}}}
    engine = EngineRun("wgpu", "gpu", "vulkan", "drv", "wall clock", "copy", "measured", {"copy": 2.5}, "mapped",
                       schedules)
    report = Report("gpu", "vulkan", "drv", "today", "wall clock", 1, 0, "copy", "measured", {}, "mapped", 2, [0.1],
                    engines=[engine])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    lines = render_table(report).splitlines()
    assert "  schedule gather_source: streamed (cached: streamed 1.00, resident 0.00)" in lines
    assert "  schedule nd_run: long (measured: long 0.17 GB/s, short 0.15 GB/s)" in lines
    assert "(measured: copy 2.50 GB/s)" in lines[1]

"""``onnxop doc-examples`` without --check: the listing (name, operator,
attributes, shapes), --name by glob or substring, --show as onnxop renders
each example, a rich table on a terminal, and the examples that cannot run
saying why."""

from __future__ import annotations

import pytest

from conftest import cli
from doc_pages import PAGES, row
from onnxop_cli.docs.check import Fail, Skip, check_all
from onnxop_cli.docs.page_cases import prepare
from onnxop_cli.docs.pages import parse_page, seed_pages
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


# ------------------------------------------------------------------ list, --name, --show


def test_listing_shows_name_op_attributes_and_shapes(capsys):
    code, out, err = cli(capsys, "doc-examples")  # no GPU needed to list
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["page", "example", "op", "opset", "attributes", "inputs", "outputs"]
    assert len(lines) == 18
    assert row(out, "test_cc_flatten_axis0").split() == [
        "Flatten-25.txt", "test_cc_flatten_axis0", "Flatten", "25", "axis=0", "a", "(2,", "3,", "4,", "5)",
        "float32", "b", "(1,", "120)", "float32"]
    assert "Unsqueeze  13                 data (2, 3) float32, axes=[0, 2]     expanded (1, 2, 1, 3) float32" \
        in row(out, "test_cc_unsqueeze_axes")


def test_name_selects_by_glob_or_substring(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--name", "test_cc_*")
    assert code == 0 and len(out.splitlines()) == 1 + 10
    code, out, _ = cli(capsys, "doc-examples", "--check", "--name", "negative", "-b", backend)
    assert code == 0 and out.splitlines()[-1] == "5 passed, 0 failed"
    code, out, err = cli(capsys, "doc-examples", "--name", "nothing_like_this")
    assert code == ExitCode.USAGE and out == ""
    assert err == "onnxop: error: no example name matches 'nothing_like_this' (e.g. test_cc_flatten_axis0)\n"


def test_show_prints_each_example_as_onnxop_renders_it(backend, capsys):
    from onnxop_cli.render.node import normalise

    code, out, _ = cli(capsys, "doc-examples", "--show", "--name", "test_cc_*axis0", "-b", backend)
    assert code == 0
    title, *block = out.rstrip("\n").split("\n")
    assert title == "# test_cc_flatten_axis0 (Flatten-25.txt)"
    (ex,) = [e for e in seed_pages()[0].examples if e.name == "test_cc_flatten_axis0"]
    assert normalise("\n".join(block)) == normalise(ex.block)
    code, out, _ = cli(capsys, "doc-examples", "--show", "--full", "--name", "test_cc_*axis0", "-b", backend)
    assert "..." not in out and "-29.5, -29. , -28.5, -28. , -27.5" in out


def test_show_with_check_and_a_skipped_example(backend, tmp_path, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--show", "--check", PAGES / "Flatten-13.rst",
                       "--name", "bfloat16", "-b", backend)
    assert code == ExitCode.ERROR  # only a skipped example: nothing checked
    assert out.startswith("# test_flatten_bfloat16 (Flatten-13.rst)\n(not run: input a: values of dtype bfloat16")
    assert out.splitlines()[-1] == "0 passed, 0 failed, 1 skipped"


def test_a_terminal_gets_a_rich_table(backend, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = cli(capsys, "doc-examples", "--check", "--name", "axis_1", "-b", backend)
    assert code == 0
    assert "┃" in out or "│" in out  # rich's box drawing
    assert "test_unsqueeze_axis_1" in out and out.splitlines()[-1] == "1 passed, 0 failed"


def _example(body: str, opset: int = 13):
    (ex,) = parse_page(f"Op#\nSince version: {opset}\nExamples#\ntest_x\nNode:\n{body}\n", "x.txt").examples
    return ex


FLAT_IO = "Inputs:\na: shape=(2,), dtype=float32\n[1., 2.]\nOutputs:\nb: shape=(1, 2), dtype=float32\n[[1., 2.]]"


@pytest.mark.parametrize("body,opset,kind,message", [
    (f"Flatten(a) -> (b)\nAttributes:\naxis = [0, 1]\n{FLAT_IO}", 13, Fail, "axis must be one integer"),
    (f"Flatten(a) -> (b)\nAttributes:\nkeepdims = 1\n{FLAT_IO}", 13, Fail, "Flatten-13 has no attribute keepdims"),
    (f"Flatten(a) -> (b)\n{FLAT_IO}", 30, Skip, "opset 30 is out of range [1, 28]"),
    ("Flatten(a) -> (b, c)\n" + FLAT_IO + "\nc: shape=(1, 2), dtype=float32\n[[1., 2.]]", 13, Fail,
     "Flatten-13 has 1 output, the example shows 2"),
    ("Unsqueeze(x, axes) -> (y)\nInputs:\nx: shape=(2,), dtype=int8\n[1, 2]\naxes: shape=(1,), dtype=int32\n[0]\n"
     "Outputs:\ny: shape=(1, 2), dtype=int8\n[[1, 2]]", 13, Fail, "axes must be a 1-D int64 tensor"),
    ("Unsqueeze(x) -> (y)\nAttributes:\naxes = 0\nInputs:\nx: shape=(2,), dtype=int8\n[1, 2]\n"
     "Outputs:\ny: shape=(1, 2), dtype=int8\n[[1, 2]]", 11, Fail, "Unsqueeze-11 takes axes as a list attribute"),
    ("Unsqueeze(x) -> (y)\nAttributes:\naxes = [0]\nInputs:\nx: shape=(2,), dtype=int8\n[1, 2]\n"
     "Outputs:\ny: shape=(1, 2), dtype=int8\n[[1, 2]]", 13, Fail, "Unsqueeze-13 takes 2 input(s), the example shows 1"),
    ("Flatten(a) -> (b)\nInputs:\na: shape=(2,), dtype=int8\n[1, 2.5]\nOutputs:\nb: shape=(1, 2), dtype=int8\n[[1, 2]]",
     13, Fail, "input a: '2.5' is not a int8 value"),
    ("Flatten(a) -> (b)\nInputs:\na: shape=(2,), dtype=string\n['x', 'y']\nOutputs:\nb: shape=(1, 2), dtype=string\n"
     "[['x', 'y']]", 13, Skip, "values of dtype string cannot be read"),
])
def test_examples_that_cannot_run_say_why(body, opset, kind, message):
    with pytest.raises(kind) as e:
        prepare(_example(body, opset))
    assert message in str(e.value)


def test_an_invalid_axis_fails_with_the_operator_message(backend):
    ex = _example("Unsqueeze(x, axes) -> (y)\nInputs:\nx: shape=(2,), dtype=int8\n[1, 2]\n"
                  "axes: shape=(2,), dtype=int64\n[ 0, -3]\nOutputs:\ny: shape=(1, 1, 2), dtype=int8\n[[[1, 2]]]")
    (outcome,) = check_all([ex], backend, contain=False)
    assert outcome.status == "failed"
    assert outcome.reason == "Unsqueeze: axes 0 and -3 both name output axis 0 (output rank 3); axes must be unique"

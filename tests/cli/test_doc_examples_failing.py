"""``onnxop doc-examples --check``: a page with one value, one shape or one
dtype changed FAILS, and says where; spacing is ignored token by token, and
the page's opset selects the rules."""

from __future__ import annotations

from conftest import cli
from doc_pages import FLATTEN_PAGE, REPO, row, write
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


UNSQUEEZE_PAGE = (REPO / "samples" / "Unsqueeze-13.rst").read_text()


def replace_once(text: str, old: str, new: str, after: str = "") -> str:
    """``text`` with the first ``old`` after ``after`` replaced (asserting it is there)."""
    start = text.index(after) if after else 0
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old):]


# ------------------------------------------------------------------ the checker can fail


def test_a_changed_output_value_fails(backend, tmp_path, capsys):
    # test_cc_flatten_axis0's output ends "28.5, 29. , 29.5]]": make it 29.25
    text = replace_once(FLATTEN_PAGE, "29. , 29.5]]", "29. , 29.25]]", after="b: shape=(1, 120)")
    code, out, err = cli(capsys, "doc-examples", "--check", write(tmp_path, "Flatten-25.txt", text), "-b", backend)
    assert code == ExitCode.ERROR and err == ""
    assert out.splitlines()[-1] == "8 passed, 1 failed"
    assert "FAILED" in row(out, "test_cc_flatten_axis0")
    assert (
        "FAILED test_cc_flatten_axis0 (Flatten-25.txt): output values differ from the page; "
        "rendered block differs from the page\n"
        "  page:   b[0, 119] = 29.25\n"
        "  onnxop: b[0, 119] = 29.5\n"
        "  first different line (Flatten-25.txt line 47, spacing ignored):\n"
        "  page:   [[-30. , -29.5, -29. , ..., 28.5, 29. , 29.25]]\n"
        "  onnxop: [[-30. , -29.5, -29. , ..., 28.5, 29. , 29.5]]\n"
    ) in out


def test_a_changed_full_output_value_fails_in_rst(backend, tmp_path, capsys):
    text = replace_once(UNSQUEEZE_PAGE, "[[3., 4., 5.]]]]", "[[3., 4., 7.]]]]", after="Outputs:")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "U.rst", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "7 passed, 1 failed"
    assert "  page:   expanded[0, 1, 0, 2] = 7.\n  onnxop: expanded[0, 1, 0, 2] = 5.\n" in out
    line = text.split("\n").index("          [[3., 4., 7.]]]]") + 1
    assert f"  first different line (U.rst line {line}, spacing ignored):\n" in out


def test_spacing_is_ignored_token_by_token_and_the_first_line_with_other_tokens_is_named(backend, tmp_path, capsys):
    # "[ -7.5, -7. , ..." written "[-7.5, -7., ...": the same tokens, so not a difference;
    # the wrong shape line after it is the first different line
    text = replace_once(FLATTEN_PAGE, "[ -7.5, -7. , -6.5, -6. , -5.5],", "[-7.5,-7.,  -6.5, -6.,-5.5 ],", after="axis = 1")
    text = replace_once(text, "b: shape=(2, 60)", "b: shape=(60, 2)")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "F.txt", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "8 passed, 1 failed"
    assert (
        "  first different line (F.txt line 80, spacing ignored):\n"
        "  page:   b: shape=(60, 2), dtype=float32\n"
        "  onnxop: b: shape=(2, 60), dtype=float32\n"
    ) in out


def test_tokens_ignore_spacing_but_not_values():
    from onnxop_cli.docs.check import tokens

    assert tokens("[1.5, -0., nan]") == tokens("[ 1.5, -0. , nan]") == ["[", "1.5", ",", "-0.", ",", "nan", "]"]
    assert tokens("a: shape=(2, 3)") == tokens("a:shape=( 2,3 )")
    assert tokens("[1.5, -0.]") != tokens("[1.5, 0.]")
    assert tokens("[15, 0]") != tokens("[1 5, 0]")


def test_a_changed_output_shape_fails(backend, tmp_path, capsys):
    text = replace_once(FLATTEN_PAGE, "b: shape=(2, 60)", "b: shape=(60, 2)")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "F.txt", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "8 passed, 1 failed"
    assert "FAILED test_cc_flatten_axis1 (F.txt): output shape differs from the page" in out
    assert "  page:   b: shape=(60, 2)\n  onnxop: b: shape=(2, 60)\n" in out


def test_a_changed_input_shape_fails(backend, tmp_path, capsys):
    text = replace_once(UNSQUEEZE_PAGE, "data: shape=(2, 3)", "data: shape=(3, 2)")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "U.rst", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "7 passed, 1 failed"
    assert "input data: axis 0 has length 3 but 2 entries are printed at []" in row(out, "test_cc_unsqueeze_axes")


def test_a_changed_input_value_fails(backend, tmp_path, capsys):
    """The output is computed from the input, so a changed input no longer
    gives the documented output."""
    text = replace_once(FLATTEN_PAGE, "[-30. , -29.5,", "[-31. , -29.5,", after="test_cc_flatten_axis2")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "F.txt", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "8 passed, 1 failed"
    assert "  page:   b[0, 0] = -30.\n  onnxop: b[0, 0] = -31.\n" in out


def test_a_changed_dtype_fails(backend, tmp_path, capsys):
    text = replace_once(UNSQUEEZE_PAGE, "expanded: shape=(1, 2, 1, 3), dtype=float32", "expanded: shape=(1, 2, 1, 3), dtype=float64")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "U.rst", text), "-b", backend)
    assert code == ExitCode.ERROR
    assert "  page:   dtype=float64\n  onnxop: dtype=float32\n" in out


def test_the_page_opset_selects_the_rules(backend, tmp_path, capsys):
    """The same Flatten examples at opset 9: negative axes are not allowed
    before Flatten-11, so those four examples fail, naming the rule."""
    text = FLATTEN_PAGE.replace("Since version: 25", "Since version: 9")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "Flatten-9.txt", text), "-b", backend)
    assert code == ExitCode.ERROR and out.splitlines()[-1] == "5 passed, 4 failed"
    assert "Flatten: axis -1 is out of range [0, 4] for an input of rank 4 (negative axes need opset 11; " \
           "this is Flatten-9)" in row(out, "test_cc_flatten_negative_axis1")
    # Unsqueeze-11 takes axes as an attribute: the opset-13 examples give an input
    text = UNSQUEEZE_PAGE.replace("version **13**", "version **11**")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "Unsqueeze-11.rst", text), "-b", backend)
    assert out.splitlines()[-1] == "0 passed, 8 failed"
    assert "Unsqueeze-11 takes 1 input(s), the example shows 2" in row(out, "test_unsqueeze_axis_0")

"""``onnxop doc-examples``: every seed example passes on the GPU; pages of new
examples in both formats check correctly; a page with one value or one shape
changed FAILS, and says where. In-process, on both software adapters."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli
from onnxop_cli.docs.check import Fail, Skip, check_all, summary_line
from onnxop_cli.docs.page_cases import prepare, reference
from onnxop_cli.docs.pages import parse_page, read_page, seed_pages
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]
PAGES = Path(__file__).resolve().parents[1] / "pages"
FLATTEN_PAGE = (REPO / "samples" / "Flatten-25.txt").read_text()
UNSQUEEZE_PAGE = (REPO / "samples" / "Unsqueeze-13.rst").read_text()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def replace_once(text: str, old: str, new: str, after: str = "") -> str:
    """``text`` with the first ``old`` after ``after`` replaced (asserting it is there)."""
    start = text.index(after) if after else 0
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old):]


def row(out: str, name: str) -> str:
    """The table row of example ``name`` (its second column)."""
    (line,) = [line for line in out.splitlines() if line.split()[1:2] == [name] and not line.startswith("FAILED")]
    return line


# ------------------------------------------------------------------ the seeds


def test_every_seed_example_passes_on_the_gpu(backend):
    outcomes = check_all([ex for page in seed_pages() for ex in page.examples], backend, contain=False)
    assert [(o.example.name, o.status, o.reason) for o in outcomes if o.status != "passed"] == []
    assert summary_line(outcomes) == "17 passed, 0 failed"


def test_check_prints_a_table_and_17_passed(backend, capsys):
    code, out, err = cli(capsys, "doc-examples", "--check", "--backend", backend)
    assert code == ExitCode.SUCCESS, err
    lines = out.splitlines()
    assert lines[-1] == "17 passed, 0 failed"
    assert lines[0].split() == ["page", "example", "result", "output", "note"]
    assert sum(" passed " in line for line in lines) == 17
    assert "Flatten-25.txt    test_cc_flatten_axis0           passed  b (1, 120) float32" in out
    assert row(out, "test_unsqueeze_three_axes").split() == [
        "Unsqueeze-13.rst", "test_unsqueeze_three_axes", "passed", "y", "(3,", "4,", "1,", "5,", "1,", "1)", "float32",
        "60/60", "values", "on", "the", "page"]
    assert err == ""


def test_reference_agrees_with_onnxruntime():
    """doccheck's reference (numpy) against an independent runtime, on every
    runnable example of the seeds and the fixture pages."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    from onnxop_cli.core.tensor import dtype_of_numpy

    pages = seed_pages() + [read_page(PAGES / "Flatten-13.rst"), read_page(PAGES / "Unsqueeze-11.txt")]
    compared = 0
    for ex in (ex for page in pages for ex in page.examples):
        try:
            prep = prepare(ex)
        except Exception:  # noqa: BLE001 - skipped examples have no reference
            continue
        if prep.data.dtype.kind == "c":
            continue  # onnxruntime's CPU kernels take no complex Flatten/Unsqueeze
        info = [helper.make_tensor_value_info(n, dtype_of_numpy(a.dtype).onnx_type, a.shape)
                for n, a in prep.feeds.items()]
        out = helper.make_tensor_value_info(ex.output_names[0], dtype_of_numpy(prep.data.dtype).onnx_type, None)
        node = helper.make_node(ex.op_type, ex.input_names, ex.output_names, **ex.attributes)
        model = helper.make_model(helper.make_graph([node], "g", info, [out]),
                                  opset_imports=[helper.make_opsetid("", ex.opset)])
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, prep.feeds)[0]
        want = reference(ex, prep)
        assert got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes(), ex.name
        compared += 1
    assert compared >= 17 + 15


# ------------------------------------------------------------------ new pages


def test_pages_of_new_examples_check_in_both_formats(backend, capsys):
    code, out, err = cli(capsys, "doc-examples", "--check", PAGES / "Flatten-13.rst", PAGES / "Unsqueeze-11.txt",
                         "-b", backend)
    assert code == ExitCode.SUCCESS, out + err
    assert out.splitlines()[-1] == "19 passed, 0 failed, 2 skipped"
    for name in ("test_flatten_int32_axis2", "test_flatten_int64_default_axis", "test_flatten_bool_axis0",
                 "test_flatten_float16_specials", "test_flatten_uint8_summarised", "test_flatten_complex64",
                 "test_flatten_scalar", "test_flatten_empty_int16", "test_unsqueeze_uint8_negative_axis",
                 "test_unsqueeze_float16_both_ends", "test_unsqueeze_int64_at_threshold",
                 "test_unsqueeze_uint16_unsorted"):
        assert " passed " in row(out, name), name
    assert " passed " in row(out, "test_reshape_other_operator")  # Reshape runs too now
    assert "input a is summarised with '...', so it cannot be run" in row(out, "test_flatten_summarised_input")
    assert "values of dtype bfloat16 cannot be read from a page" in row(out, "test_flatten_bfloat16")
    assert row(out, "test_flatten_uint8_summarised").split()[-7:] == [
        "b", "(4,", "30)", "uint8", "24/120", "values", "on", "the", "page"][-7:]


def test_seed_and_new_pages_together(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--check", REPO / "samples" / "Flatten-25.txt",
                       PAGES / "Unsqueeze-11.txt", "--backend", backend)
    assert code == 0 and out.splitlines()[-1] == "17 passed, 0 failed"


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


# ------------------------------------------------------------------ skipped, never a crash


def test_other_operators_and_unreadable_examples_are_skipped(backend, tmp_path, capsys):
    page = (
        "Pow#\nSince version: 13\nExamples#\n"
        "test_pow\nNode:\nPow(x, y) -> (z)\nInputs:\n"
        "x: shape=(2,), dtype=float32\n[1., 2.]\ny: shape=(1,), dtype=float32\n[1.]\n"
        "Outputs:\nz: shape=(2,), dtype=float32\n[0., 0.]\n"
        "test_garbled\nNode:\nFlatten(a) -> (b)\nInputs:\na: shape=(2,), dtype=float32\n[1., 2.\n"
        "Outputs:\nb: shape=(1, 2), dtype=float32\n[[1., 2.]]\n"
        "test_no_node\nNode:\nthis is prose\n"
    )
    code, out, err = cli(capsys, "doc-examples", "--check", write(tmp_path, "Pow.txt", page), "-b", backend)
    assert code == ExitCode.ERROR and err == ""  # nothing was checked: not a success
    assert out.splitlines()[-1] == "0 passed, 0 failed, 3 skipped"
    assert "Pow is not an operator onnxop runs" in row(out, "test_pow")
    assert "input a: cannot read the values: values end early (missing ']')" in row(out, "test_garbled")
    assert "cannot read the node line 'this is prose'" in row(out, "test_no_node")


def test_a_page_without_examples_is_reported_not_passed(backend, tmp_path, capsys):
    card = write(tmp_path, "card.md", "# ai.onnx.Flatten\nA kernel card: it describes the op, no examples.\n")
    code, out, err = cli(capsys, "doc-examples", "--check", card, REPO / "samples" / "Unsqueeze-13.rst", "-b", backend)
    assert code == ExitCode.SUCCESS and err == ""  # skips are shown, not failures
    assert out.splitlines()[-1] == "8 passed, 0 failed, 1 skipped"
    assert row(out, "(no").split()[:4] == ["card.md", "(no", "examples)", "skipped"]
    assert "no examples found (an example is a name line followed by 'Node:'" in out
    code, out, _ = cli(capsys, "doc-examples", write(tmp_path, "empty.txt", ""))
    assert code == 0 and "empty.txt  (no examples)" in out


def test_a_page_without_an_opset_is_skipped(backend, tmp_path, capsys):
    text = FLATTEN_PAGE.replace("Since version: 25", "")
    code, out, _ = cli(capsys, "doc-examples", "--check", write(tmp_path, "F.txt", text), "-b", backend)
    assert out.splitlines()[-1] == "0 passed, 0 failed, 9 skipped" and code == ExitCode.ERROR
    assert "the page does not state its opset ('Since version: N')" in out


@pytest.mark.parametrize("setup,message", [
    (lambda d: d / "nope.txt", "nope.txt: cannot read the page: No such file or directory"),
    (lambda d: d, "cannot read the page: Is a directory"),
    (lambda d: write(d, "bin.rst", "x") and (d / "bin.rst").write_bytes(b"\x89PNG\r\n") and d / "bin.rst",
     "bin.rst: not a text page (invalid UTF-8 at byte 0)"),
])
def test_bad_page_files_are_one_line_usage_errors(tmp_path, capsys, setup, message):
    code, out, err = cli(capsys, "doc-examples", "--check", setup(tmp_path))
    assert code == ExitCode.USAGE and out == ""
    (line,) = err.splitlines()
    assert line.startswith("onnxop: error: ") and message in line


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


# ------------------------------------------------------------------ --op: onnx's expect() cases

OP_EXAMPLES = {"Flatten": 9, "Unsqueeze": 7, "Identity": 1, "Reshape": 10, "Squeeze": 2, "Transpose": 7,
               "Expand": 2, "Slice": 8, "Tile": 2, "DepthToSpace": 2, "SpaceToDepth": 4}


@pytest.mark.parametrize("op,count", OP_EXAMPLES.items())
def test_every_operators_official_examples_check(backend, capsys, op, count):
    code, out, err = cli(capsys, "doc-examples", "--op", op, "--check", "-b", backend)
    assert code == ExitCode.SUCCESS, out + err
    skipped = ", 2 skipped" if op == "Identity" else ""  # its sequence and optional cases: onnxop runs tensors
    assert out.splitlines()[-1] == f"{count} passed, 0 failed{skipped}"


def test_op_examples_render_as_the_docs_print_them(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--op", "slice", "--show", "--name", "default_axes", "-b", backend)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "# test_slice_default_axes (Slice-13 (onnx expect cases))"
    assert lines[1:3] == ["Node:", "  Slice(x, starts, ends) -> (y)"]
    assert "  starts: shape=(3,), dtype=int64" in lines and "Attributes:" not in lines
    code, out, _ = cli(capsys, "doc-examples", "--op", "DepthToSpace", "--show", "--name", "crd", "-b", backend)
    assert "Attributes:\n  blocksize = 2\n  mode = CRD\n" in out


def test_op_examples_catch_a_wrong_kernel(backend, capsys, monkeypatch):
    """The check compares with the page and with onnx's reference evaluator:
    a Transpose that ignores perm fails every example but the identity one."""
    from onnxop_cli.ops import transpose

    monkeypatch.setattr(transpose.Transpose_1, "perm", classmethod(lambda cls, node, rank: list(range(rank))[::-1]))
    code, out, _ = cli(capsys, "doc-examples", "--op", "Transpose", "--check", "-b", backend)
    assert code == ExitCode.ERROR
    assert out.splitlines()[-1] == "2 passed, 5 failed"  # the default perm and perm [2, 1, 0] still agree


@pytest.mark.parametrize("argv,message", [
    (["--op", "Pow"], "--op Pow: not an operator onnxop runs (Flatten, Unsqueeze, Identity"),
    (["--op", "Transpose", "x.rst"], "give PAGE files or --op, not both"),
])
def test_op_refusals(capsys, argv, message):
    code, out, err = cli(capsys, "doc-examples", *argv)
    assert code == ExitCode.USAGE and out == "" and message in err and err.count("\n") == 1

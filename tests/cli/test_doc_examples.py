"""``onnxop doc-examples``: every seed example passes on the GPU; the test
pages (tests/pages) check correctly in both formats; other operators and
unreadable examples are skipped, never a crash; ``--op`` checks onnx's
expect() cases of every operator. In-process, on both software adapters."""

from __future__ import annotations

import pytest

from conftest import cli
from doc_pages import FLATTEN_PAGE, PAGES, REPO, row, write
from onnxop_cli.docs.check import check_all, summary_line
from onnxop_cli.docs.page_cases import prepare, reference
from onnxop_cli.docs.pages import read_page, seed_pages
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


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


# ------------------------------------------------------------------ the test pages (tests/pages)


def test_rst_and_txt_test_pages_check(backend, capsys):
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


def test_a_seed_page_and_a_test_page_together(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--check", REPO / "samples" / "Flatten-25.txt",
                       PAGES / "Unsqueeze-11.txt", "--backend", backend)
    assert code == 0 and out.splitlines()[-1] == "17 passed, 0 failed"


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

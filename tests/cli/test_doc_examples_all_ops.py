"""``onnxop doc-examples --op``: the official examples of every operator
onnxop runs (onnx's expect() cases, the examples of the ONNX operator
pages), the operators with tensor inputs (Concat, Split, Gather, Pad, ...)
included: every one listed, every one run on the GPU and held to its
expected outputs bit for bit, a wrong output or a refused example a failure
with its reason (the run goes on), and the seed pages' output unchanged.
``conformance`` with no DIR runs every tensor-op node test.

A CLI/format test: the kernels themselves fan out over the backends in
test_conformance_all_ops.py and test_conformance.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, cli_once
from onnxop_cli.docs.check import check_all
from onnxop_cli.docs.expect import examples as op_examples
from onnxop_cli.docs.nodetests import node_testcases
from onnxop_cli.docs.report import load_examples, operators
from onnxop_cli.errors import ExitCode
from onnxop_cli.ops import OPERATORS

ONE_BACKEND = True

TENSOR_OPS = {"Concat": 12, "Split": 16, "Where": 2, "Pad": 6, "Trilu": 18, "Gather": 4, "GatherElements": 3,
          "GatherND": 3, "ScatterElements": 7, "ScatterND": 7, "Scatter": 2, "TensorScatter": 3,
          "ReverseSequence": 3, "ConstantOfShape": 3, "EyeLike": 3, "Shape": 11, "Size": 2, "CenterCropPad": 6,
          "Compress": 5, "OneHot": 6, "BitCast": 10, "NonZero": 1,
          "Add": 8, "Sub": 9, "Mul": 9, "Div": 10, "Mod": 19, "Neg": 2, "Abs": 1, "Min": 14, "Max": 14,
          "Equal": 10, "Less": 8, "LessOrEqual": 8, "Greater": 8, "GreaterOrEqual": 8, "Not": 3, "And": 8, "Or": 8,
          "Xor": 8, "Cast": 60, "CastLike": 56, "Range": 4, "Resize": 39, "Upsample": 1}
# the integer operators' float (and string) cases: skipped as out of scope (ops/elementwise.py)
SCOPED = {"Add": 2, "Sub": 3, "Mul": 3, "Div": 3, "Mod": 9, "Neg": 2, "Abs": 1, "Min": 6, "Max": 6, "Equal": 2,
          "Less": 2, "LessOrEqual": 2, "Greater": 2, "GreaterOrEqual": 2, "Range": 3,
          "Resize": 24}  # and Resize's linear and cubic cases (ops/resize.py)
VIEWS = {"Flatten": 9, "Unsqueeze": 7, "Identity": 3, "Reshape": 10, "Squeeze": 2, "Transpose": 7, "Expand": 2,
         "Slice": 8, "Tile": 2, "DepthToSpace": 2, "SpaceToDepth": 4}
NOT_TENSORS = {"test_identity_sequence", "test_identity_opt"}  # skipped: onnxop runs tensors
TOTAL = sum(TENSOR_OPS.values()) + sum(VIEWS.values())

# `onnxop doc-examples --check` with only the seed pages' examples:
# the seed pages' results are the spec, and stay exactly so
SEEDS = """\
page              example                         result  output                         note
Flatten-25.txt    test_cc_flatten_axis0           passed  b (1, 120) float32             6/120 values on the page
Flatten-25.txt    test_cc_flatten_axis1           passed  b (2, 60) float32              12/120 values on the page
Flatten-25.txt    test_cc_flatten_axis2           passed  b (6, 20) float32              36/120 values on the page
Flatten-25.txt    test_cc_flatten_axis3           passed  b (24, 5) float32              30/120 values on the page
Flatten-25.txt    test_cc_flatten_default_axis    passed  b (5, 24) float32              30/120 values on the page
Flatten-25.txt    test_cc_flatten_negative_axis1  passed  b (24, 5) float32              30/120 values on the page
Flatten-25.txt    test_cc_flatten_negative_axis2  passed  b (6, 20) float32              36/120 values on the page
Flatten-25.txt    test_cc_flatten_negative_axis3  passed  b (2, 60) float32              12/120 values on the page
Flatten-25.txt    test_cc_flatten_negative_axis4  passed  b (1, 120) float32             6/120 values on the page
Unsqueeze-13.rst  test_cc_unsqueeze_axes          passed  expanded (1, 2, 1, 3) float32  6/6 values on the page
Unsqueeze-13.rst  test_unsqueeze_axis_0           passed  y (1, 3, 4, 5) float32         60/60 values on the page
Unsqueeze-13.rst  test_unsqueeze_axis_1           passed  y (3, 1, 4, 5) float32         60/60 values on the page
Unsqueeze-13.rst  test_unsqueeze_axis_2           passed  y (3, 4, 1, 5) float32         60/60 values on the page
Unsqueeze-13.rst  test_unsqueeze_negative_axes    passed  y (1, 3, 1, 1, 5) float32      15/15 values on the page
Unsqueeze-13.rst  test_unsqueeze_three_axes       passed  y (3, 4, 1, 5, 1, 1) float32   60/60 values on the page
Unsqueeze-13.rst  test_unsqueeze_two_axes         passed  y (3, 1, 4, 5, 1) float32      60/60 values on the page
Unsqueeze-13.rst  test_unsqueeze_unsorted_axes    passed  y (3, 4, 1, 5, 1, 1) float32   60/60 values on the page
17 passed, 0 failed
"""


def _array(value) -> np.ndarray:
    """An expected output: an array, or a TensorProto (the Cast cases' bfloat16, float8, int4 ...)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def rows(out: str) -> dict[str, list[str]]:
    """example name -> its row's cells (the table is plain when piped: 2+ spaces apart)."""
    import re

    lines = out.splitlines()
    table = lines[1 : lines.index("")] if "" in lines else lines[1:]
    return {cells[1]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in table) if len(cells) > 2}


# ------------------------------------------------------------------ every example is there


def test_every_official_example_of_every_operator_is_listed(capsys):
    assert set(TENSOR_OPS) | set(VIEWS) == set(OPERATORS)
    code, out, err = cli(capsys, "doc-examples", "--op", "all")  # no GPU needed to list
    assert code == ExitCode.SUCCESS, err
    listed = rows(out)
    assert set(listed) == {c.name for c in node_testcases()} and len(listed) == TOTAL
    by_op = {}
    for cells in listed.values():
        by_op[cells[2]] = by_op.get(cells[2], 0) + 1
    assert by_op == TENSOR_OPS | VIEWS


def test_each_example_names_the_page_example_it_belongs_to():
    """As the ONNX pages name them: the export method without ``export_``."""
    gather = {ex.name: ex.section for ex in op_examples("Gather")}
    assert gather == {"test_gather_0": "gather_0", "test_gather_1": "gather_1",
                      "test_gather_2d_indices": "gather_2d_indices",
                      "test_gather_negative_indices": "gather_negative_indices"}
    assert {ex.section for ex in op_examples("Concat")} == {"concat"}
    assert "scatternd_add" in {ex.section for ex in op_examples("ScatterND")}
    for op in TENSOR_OPS:
        assert all(ex.section and ex.case is not None and not ex.problem for ex in op_examples(op)), op


@pytest.mark.parametrize("given,names", [
    ("all", list(OPERATORS)),
    ("Concat", ["Concat"]),
    ("gather-nd,Scatter_ND,concat,Concat", ["GatherND", "ScatterND", "Concat"]),
])
def test_op_names_one_several_or_all(given, names):
    assert operators(given) == names


@pytest.mark.parametrize("argv,message", [
    (["--op", "Concat,Pow"], "--op Pow: not an operator onnxop runs (Flatten, Unsqueeze"),
    (["--op", "Concat,"], "not an operator onnxop runs"),
])
def test_an_unknown_operator_in_a_list_is_refused(capsys, argv, message):
    code, out, err = cli(capsys, "doc-examples", *argv)
    assert code == ExitCode.USAGE and out == "" and message in err and err.count("\n") == 1


# ------------------------------------------------------------------ every example passes


def test_every_official_example_passes_bit_exactly(backend, capsys):
    code, out, err = cli(capsys, "doc-examples", "--op", "all", "--check", "-b", backend)
    assert code == ExitCode.SUCCESS, out + err
    lines = out.splitlines()
    scoped = sum(SCOPED.values())
    assert lines[-1] == f"{TOTAL - 2 - scoped} passed, 0 failed, {2 + scoped} skipped"
    per_op = lines[-1 - len(OPERATORS) : -1]
    expected = {op: f"{n - SCOPED.get(op, 0)} passed, 0 failed" + (f", {SCOPED[op]} skipped" if op in SCOPED else "")
                for op, n in (TENSOR_OPS | VIEWS).items()}
    expected["Identity"] = "1 passed, 0 failed, 2 skipped"
    assert per_op == [f"{op}: {expected[op]}" for op in OPERATORS]
    table = rows(out)
    for case in node_testcases(list(TENSOR_OPS)):
        if table[case.name][2] == "skipped":
            assert case.model.graph.node[0].op_type in SCOPED and "not in its scope" in table[case.name][3]
            continue
        _, _, result, output, note = table[case.name]
        assert result == "passed", case.name
        # every output is reported, and the note says how many elements were compared
        assert output.count("(") == len(case.model.graph.output), (case.name, output)
        count = sum(int(_array(o).size) for o in case.data_sets[0][1])
        assert note.startswith(f"{count} element") and "bit-exact" in note, (case.name, note)
    assert table["test_shape"][4] == "3 elements bit-exact (metadata: no kernel)"
    for name in NOT_TENSORS:
        assert table[name][2:] == ["skipped", f"{'sequence' if 'sequence' in name else 'optional'}_type values; "
                                   "onnxop runs tensors"]


def test_the_seed_pages_results_are_unchanged(backend, capsys):
    code, out, err = cli(capsys, "doc-examples", "--check", "-b", backend)
    assert code == ExitCode.SUCCESS, err
    assert out == SEEDS


def test_one_operator_has_no_per_operator_lines(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--op", "Gather", "--check", "-b", backend)
    assert code == ExitCode.SUCCESS
    assert out.splitlines()[-2:] == [out.splitlines()[-2], "4 passed, 0 failed"]
    assert not out.splitlines()[-2].startswith("Gather:")


def test_show_prints_an_example_as_the_pages_do(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--op", "Split", "--show", "--name", "test_split_equal_parts_1d_opset18",
                       "-b", backend)
    assert code == ExitCode.SUCCESS
    assert out.splitlines() == [
        "# test_split_equal_parts_1d_opset18 (Split-18 (onnx expect cases), example 1d_opset18)",
        "Node:", "  Split(input) -> (output_1, output_2, output_3)", "",
        "Attributes:", "  axis = 0", "  num_outputs = 3", "",
        "Inputs:", "  input: shape=(6,), dtype=float32", "    [1., 2., 3., 4., 5., 6.]", "",
        "Outputs:", "  output_1: shape=(2,), dtype=float32", "    [1., 2.]",
        "  output_2: shape=(2,), dtype=float32", "    [3., 4.]",
        "  output_3: shape=(2,), dtype=float32", "    [5., 6.]",
    ]


def test_json_reports_each_example_and_the_page_example(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--op", "ScatterND", "--check", "--json", "-b", backend)
    assert code == ExitCode.SUCCESS
    doc = json.loads(out)
    assert doc["summary"] == {"passed": 7, "failed": 0, "skipped": 0}
    add = next(e for e in doc["examples"] if e["name"] == "test_scatternd_add")
    assert add["example_of"] == "scatternd_add" and add["result"] == "passed"
    assert add["attributes"] == {"reduction": "add"} and add["op"] == "ScatterND"


# ------------------------------------------------------------------ a wrong output fails


def corrupt(monkeypatch, which=lambda k: True):
    """Make the kernels' output wrong: the last byte of every chunk the k-th
    output's filler writes has its low bit flipped (for ``which(k)``)."""
    from onnxop_cli.core import apply_tensors

    original, calls = apply_tensors._filler, []

    def filler(gpu, p, tensors, *shared):  # shared: the node's gpu/pieces.Runs, when it has one
        fill = original(gpu, p, tensors, *shared)
        calls.append(p)
        if not which(len(calls) - 1):
            return fill

        def bad(sink):
            def flipped(chunk):
                data = bytearray(chunk)
                if data:
                    data[-1] ^= 1
                return sink(memoryview(bytes(data)))

            return fill(flipped)

        return bad

    monkeypatch.setattr(apply_tensors, "_filler", filler)
    return calls


def test_a_wrong_kernel_output_fails_every_example(backend, capsys, monkeypatch):
    corrupt(monkeypatch)
    code, out, _ = cli(capsys, "doc-examples", "--op", "Gather,Concat", "--check", "-b", backend)
    assert code == ExitCode.ERROR
    lines = out.splitlines()
    assert lines[-3:] == ["Gather: 0 passed, 4 failed", "Concat: 0 passed, 12 failed", "0 passed, 16 failed"]
    assert "FAILED test_gather_0 (Gather-13 (onnx expect cases)): output y differs from the example's expected output" in lines
    assert any(line.startswith("  1 of 72 elements differ; first y[") for line in lines)


def test_every_output_is_compared(backend, capsys, monkeypatch):
    corrupt(monkeypatch, which=lambda k: k == 1)  # the second output only
    code, out, _ = cli(capsys, "doc-examples", "--op", "Split", "--check", "--name",
                       "test_split_equal_parts_1d_opset18", "-b", backend)
    assert code == ExitCode.ERROR
    assert rows(out)["test_split_equal_parts_1d_opset18"][2:] == [
        "FAILED", "output_1 (2,) float32, output_2 (2,) float32, output_3 (2,) float32",
        "output output_2 differs from the example's expected output"]
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_the_comparison_is_bitwise(backend):
    """-0.0 for 0.0 in one expected output fails (a value comparison would pass it)."""
    found = [(ex, k) for op in TENSOR_OPS if op not in SCOPED for ex in op_examples(op)
             for k, o in enumerate(ex.case.data_sets[0][1])
             if isinstance(o, np.ndarray) and o.dtype == np.float32 and (o == 0).any()]
    assert found, "no example has a float32 zero to flip"
    ex, k = found[0]
    (passed,) = check_all([ex], backend)
    assert passed.status == "passed", passed.reason
    outputs = ex.case.data_sets[0][1]
    original = outputs[k]
    want = original.copy()
    want.reshape(-1)[np.flatnonzero(want.reshape(-1) == 0)[0]] = -0.0
    outputs[k] = want
    try:
        (failed,) = check_all([ex], backend)
    finally:
        outputs[k] = original  # the modules' cases are cached for the session
    assert failed.status == "failed" and "differs from the example's expected output" in failed.reason
    assert failed.details[0].startswith(f"1 of {original.size} elements differ") and "expected -0." in failed.details[0]


# ------------------------------------------------------------------ a refused example fails alone


def test_an_example_onnxop_refuses_fails_with_its_reason_and_the_run_goes_on(backend, capsys, monkeypatch):
    from onnxop_cli.errors import OpError
    from onnxop_cli.ops import tensor_nodes

    original = tensor_nodes.build_tensor_node

    def build(proto, opset):
        if "axes" in proto.input:
            raise OpError("Pad-25: refused for the test")
        return original(proto, opset)

    monkeypatch.setattr(tensor_nodes, "build_tensor_node", build)
    code, out, _ = cli(capsys, "doc-examples", "--op", "Pad", "--check", "-b", backend)
    assert code == ExitCode.ERROR
    table = rows(out)
    failed = [name for name, cells in table.items() if cells[2] == "FAILED"]
    assert failed == ["test_constant_pad_axes", "test_constant_pad_negative_axes"]
    assert all(table[name][-1] == "Pad-25: refused for the test" for name in failed)
    assert out.splitlines()[-1] == "4 passed, 2 failed"


def test_nothing_run_is_a_failure(capsys):
    """Only the examples onnxop cannot run (a sequence): exit 1, not success."""
    code, out, _ = cli(capsys, "doc-examples", "--op", "Identity", "--check", "--name", "test_identity_sequence")
    assert code == ExitCode.ERROR
    assert out.splitlines()[-1] == "0 passed, 0 failed, 1 skipped"


# ------------------------------------------------------------------ conformance with no DIR


def test_conformance_with_no_folder_runs_every_tensor_operator_node_test(backend, capsys):
    code, out, err = cli_once(capsys, "conformance", "-b", backend)
    assert code == ExitCode.SUCCESS, err
    lines = out.splitlines()
    per_op = {line.split(":")[0]: line.split(": ", 1)[1] for line in lines[lines.index("") + 1 : -2]}
    for op, n in TENSOR_OPS.items():
        if op in SCOPED:
            assert per_op[op].startswith(f"{n - SCOPED[op]} passed, 0 failed, {SCOPED[op]} skipped (skipped: "), op
        else:
            assert per_op[op] == f"{n} passed, 0 failed, 0 skipped", op
    scoped = sum(SCOPED.values())
    assert lines[-1] == f"{TOTAL - 2 - scoped} passed, 0 failed, {2 + scoped} skipped"


def test_load_examples_keeps_the_seed_pages_by_default():
    assert [ex.name for ex in load_examples(None)][:2] == ["test_cc_flatten_axis0", "test_cc_flatten_axis1"]
    assert len(load_examples(None)) == 17

"""``onnxop doc-examples --check``: one checker for both sources of examples.

An output that differs from the expected one by one bit, by -0.0 for 0.0 or
by a NaN's payload FAILS, whether the example came from a printed page (the
expected output is the reference result) or from onnx's node tests (the
case's expected output); an example with nothing to compare with never
passes. The page's printed values cannot see a NaN's payload, and the
rendering prints -0.0 and 0.0 alike where the page does not print them: only
the bitwise comparison catches these, so each is changed in the expected
output alone and the page and kernel stay as they are."""

from __future__ import annotations

import types

import numpy as np
import pytest

from onnxop_cli.docs import check, page_cases
from onnxop_cli.docs.check import check_all
from onnxop_cli.docs.expect import example_of
from onnxop_cli.docs.pages import parse_page

ONE_BACKEND = True  # the checker is under test, not the kernels

X = np.array([[0.0, np.nan, 1.0]], np.float32)
PAGE = ("Op#\nSince version: 13\nExamples#\ntest_bits\nNode:\nFlatten(a) -> (b)\n"
        "Inputs:\na: shape=(1, 3), dtype=float32\n[[0., nan, 1.]]\n"
        "Outputs:\nb: shape=(1, 3), dtype=float32\n[[0., nan, 1.]]\n")


def one_bit(a):
    a.view(np.uint32)[0, 2] ^= 1  # 1.0 -> 1.0000001


def negative_zero(a):
    a[0, 0] = -0.0


def nan_payload(a):
    a.view(np.uint32)[0, 1] = 0x7FC00001


def altered(a: np.ndarray, change) -> np.ndarray:
    a = np.array(a, copy=True)
    if change is not None:
        change(a)
    return a


def page_example(monkeypatch, change):
    """The page's example, its reference result changed by ``change``."""
    reference = page_cases.reference
    monkeypatch.setattr(page_cases, "reference", lambda ex, prep: altered(reference(ex, prep), change))
    (ex,) = parse_page(PAGE, "bits.txt").examples
    return ex


def node_test_example(monkeypatch, change, outputs=("y",)):
    """A one-node case of onnx's kind (Concat of one input: a copy), its expected output changed."""
    from onnx import helper

    node = helper.make_node("Concat", ["x"], list(outputs), axis=0)
    graph = helper.make_graph([node], "bits", [helper.make_tensor_value_info("x", 1, [1, 3])],
                              [helper.make_tensor_value_info(o, 1, [1, 3]) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    expected = [altered(X, change) for _ in outputs]
    return example_of(types.SimpleNamespace(name="test_bits", model=model, data_sets=[([X], expected)]))


SOURCES = {"page": (page_example, "the reference"), "node test": (node_test_example, "the example's expected output")}


@pytest.mark.parametrize("source", SOURCES)
def test_the_unchanged_example_passes(backend, monkeypatch, source):
    make, _ = SOURCES[source]
    (o,) = check_all([make(monkeypatch, None)], backend, contain=False)
    assert o.status == "passed", (o.reason, o.details)


@pytest.mark.parametrize("change,shown", [(one_bit, "1.0000001"), (negative_zero, "-0."), (nan_payload, "nan")])
@pytest.mark.parametrize("source", SOURCES)
def test_an_output_that_differs_in_its_bits_fails(backend, monkeypatch, source, change, shown):
    make, against = SOURCES[source]
    (o,) = check_all([make(monkeypatch, change)], backend, contain=False)
    name = "b" if source == "page" else "y"
    assert o.status == "failed" and o.reason == f"output {name} differs from {against}", (o.reason, o.details)
    assert o.details[0].startswith("1 of 3 elements differ; first ") and f"expected {shown}" in o.details[0]
    assert "(bytes " in o.details[0]  # a NaN's payload shows only in its bytes


@pytest.mark.parametrize("source", SOURCES)
def test_an_example_with_no_expected_output_never_passes(backend, monkeypatch, source):
    make, _ = SOURCES[source]
    ex = make(monkeypatch, None)
    case_of = check.case_of

    def nothing_expected(ex):
        case = case_of(ex)
        case.expected = []
        return case

    monkeypatch.setattr(check, "case_of", nothing_expected)
    (o,) = check_all([ex], backend, contain=False)
    assert o.status == "failed" and o.reason.startswith("no expected output: nothing to compare"), o.reason


def test_a_node_test_with_no_outputs_never_passes(backend, monkeypatch):
    (o,) = check_all([node_test_example(monkeypatch, None, outputs=())], backend, contain=False)
    assert o.status == "failed" and o.reason.startswith("no expected output"), o.reason


@pytest.mark.parametrize("change", [one_bit, negative_zero])
def test_a_view_operators_official_example_is_held_to_its_expected_output(backend, change):
    """A view operator's official examples are checked as pages (their blocks rendered from the case),
    and their outputs held to the case's expected ones, not only to the page's printed values."""
    from onnxop_cli.docs.report import op_examples

    ex = next(ex for ex in op_examples("Flatten") if ex.expected and ex.expected[0].dtype == np.float32)
    (o,) = check_all([ex], backend, contain=False)
    assert o.status == "passed", o.reason
    want = ex.expected[0].copy()
    flat = want.reshape(-1)
    if change is one_bit:
        flat.view(np.uint32)[0] ^= 1
    else:
        flat[0] = -flat[0]  # a sign the printed value may hide (0.0 for -0.0), never the bits
    ex.expected = [want]
    (o,) = check_all([ex], backend, contain=False)
    assert o.status == "failed" and "output b differs from the example's expected output" in o.reason, o.reason

"""onnxop prints a node exactly like the ONNX pages: every seed example,
rendered from its inputs (the outputs from numpy, not from onnxop), is the
page's text; the summary rule in render/values.py is the one the pages imply."""

from __future__ import annotations

import math

import numpy as np
import pytest

from onnxop_cli.render import values as render
from onnxop_cli.docs.pages import seed_pages
from onnxop_cli.docs.values import to_array
from onnxop_cli.ops import flatten_node, unsqueeze_node
from onnxop_cli.render.node import Shown, normalise, render_node

SEED_EXAMPLES = [ex for page in seed_pages() for ex in page.examples]


def numpy_output(ex, x: np.ndarray) -> np.ndarray:
    if ex.op_type == "Flatten":
        axis = ex.attributes.get("axis", 1)
        axis = axis + x.ndim if axis < 0 else axis
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    axes = to_array(ex.inputs[1].values, ex.inputs[1].shape, np.dtype("int64"))
    return np.expand_dims(x, tuple(int(a) for a in axes))


def rendered(ex, **kwargs) -> str:
    x_t = ex.inputs[0]
    x = to_array(x_t.values, x_t.shape, np.dtype(x_t.dtype))
    if ex.op_type == "Flatten":
        node = flatten_node(ex.attributes.get("axis"), ex.opset)
    else:
        axes = to_array(ex.inputs[1].values, ex.inputs[1].shape, np.dtype("int64"))
        node = unsqueeze_node(axes.tolist(), ex.opset)
    y = numpy_output(ex, x)
    (out,) = ex.output_names
    return render_node(node, [Shown(x_t.name, x.shape, str(x.dtype), x)], [Shown(out, y.shape, str(y.dtype), y)], **kwargs)


@pytest.mark.parametrize("ex", SEED_EXAMPLES, ids=lambda ex: ex.name)
def test_every_seed_example_renders_as_the_page_prints_it(ex):
    assert normalise(rendered(ex)) == normalise(ex.block)


def test_the_unsqueeze_page_matches_with_its_indentation():
    """The rst page kept its layout: there the text matches line for line,
    not only after normalising (blank lines inside a code block are spaces)."""
    for ex in SEED_EXAMPLES[9:]:
        page = [line.rstrip() for line in ex.block.split("\n")]
        assert rendered(ex).split("\n") == page, ex.name


def test_default_axis_prints_no_attributes():
    ex = next(e for e in SEED_EXAMPLES if e.name == "test_cc_flatten_default_axis")
    text = rendered(ex)
    assert "Attributes:" not in text and text.startswith("Node:\n  Flatten(a) -> (b)\n\nInputs:\n")
    axis0 = next(e for e in SEED_EXAMPLES if e.name == "test_cc_flatten_axis0")
    assert "\nAttributes:\n  axis = 0\n\nInputs:\n" in rendered(axis0)


def test_unsqueeze_axes_are_an_input_from_opset_13_and_an_attribute_before():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.expand_dims(x, (0, 2))
    shown = ([Shown("data", x.shape, "float32", x)], [Shown("expanded", y.shape, "float32", y)])
    new = render_node(unsqueeze_node([0, 2], 13), *shown)
    assert "Unsqueeze(data, axes) -> (expanded)" in new
    assert "  axes: shape=(2,), dtype=int64\n    [0, 2]\n" in new and "Attributes" not in new
    old = render_node(unsqueeze_node([0, 2], 11), *shown)
    assert "Unsqueeze(data) -> (expanded)\n\nAttributes:\n  axes = [0, 2]\n\nInputs:\n" in old
    assert "dtype=int64" not in old
    named = render_node(unsqueeze_node([0, 2], 13), *shown, axes_name="ax")
    assert "Unsqueeze(data, ax) -> (expanded)" in named and "  ax: shape=(2,)" in named


def _all_seed_blocks_render(monkeypatch, **settings) -> bool:
    for name, value in settings.items():
        monkeypatch.setattr(render, name, value)
    return all(normalise(rendered(ex)) == normalise(ex.block) for ex in SEED_EXAMPLES)


def test_the_summary_rule_is_the_one_the_pages_imply(monkeypatch):
    """values.py's docstring derives the rule; this re-derives it. Every
    threshold below 120 reproduces the 17 blocks, 120 and numpy's 1000 do not;
    only 3 edge items do."""
    assert 0 <= render.SUMMARY_THRESHOLD < 120 and render.EDGE_ITEMS == 3
    for threshold in (0, 60, 100, 119):
        assert _all_seed_blocks_render(monkeypatch, SUMMARY_THRESHOLD=threshold), threshold
    for threshold in (120, 1000):
        assert not _all_seed_blocks_render(monkeypatch, SUMMARY_THRESHOLD=threshold), threshold
    monkeypatch.setattr(render, "SUMMARY_THRESHOLD", 100)
    for edge in (2, 4):
        assert not _all_seed_blocks_render(monkeypatch, EDGE_ITEMS=edge), edge


def test_summary_threshold_boundary_and_full():
    at = np.arange(100, dtype=np.int32).reshape(1, 100)
    over = np.arange(101, dtype=np.int32).reshape(1, 101)
    assert "..." not in render.format_values(at)
    assert render.format_values(over) == "[[  0,   1,   2, ...,  98,  99, 100]]"
    assert "..." not in render.format_values(over, full=True)
    # many elements but no axis longer than 2 * EDGE_ITEMS: printed in full
    assert "..." not in render.format_values(np.zeros((6, 6, 6), np.uint8))


def test_global_print_options_do_not_leak_in():
    x = np.array([1 / 3, 2.0])
    before = render.format_values(x)
    with np.printoptions(precision=3, suppress=True, threshold=5, edgeitems=1, linewidth=20):
        assert render.format_values(x) == before == "[0.33333333, 2.        ]"

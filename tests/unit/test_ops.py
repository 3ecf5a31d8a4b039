"""Shape rules against numpy (reshape / expand_dims), valid and invalid halves.

Pure Python: no GPU here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnxop_cli.errors import OpError
from onnxop_cli.ops import flatten_node, op_version, unsqueeze_node

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=6).map(tuple)


def numpy_flatten(shape, axis):
    """ONNX's reference: reshape to (prod(d[:axis]), -1)."""
    x = np.empty(shape)
    if axis < 0:
        axis += len(shape)
    return x.reshape((math.prod(shape[:axis]), math.prod(shape[axis:]))).shape


@given(shape=shapes, data=st.data())
def test_flatten_valid_axes_match_numpy(shape, data):
    r = len(shape)
    axis = data.draw(st.integers(-r, r))
    assert flatten_node(axis).output_shape(shape) == numpy_flatten(shape, axis)


@given(shape=shapes, data=st.data())
def test_flatten_invalid_axes_are_refused_with_the_range(shape, data):
    r = len(shape)
    axis = data.draw(st.one_of(st.integers(r + 1, r + 50), st.integers(-r - 50, -r - 1)))
    with pytest.raises(OpError) as e:
        flatten_node(axis).output_shape(shape)
    assert str(e.value) == (
        f"Flatten: axis {axis} is out of range [{-r}, {r}] for an input of rank {r}"
    )


def test_flatten_documented_edges():
    assert flatten_node().output_shape((2, 3, 4, 5)) == (2, 60)  # default axis 1
    assert flatten_node(0).output_shape((2, 3, 4, 5)) == (1, 120)
    assert flatten_node(0).output_shape(()) == (1, 1)
    assert flatten_node(4).output_shape((2, 3, 4, 5)) == (120, 1)
    assert flatten_node(1).output_shape((2, 0, 3)) == (2, 0)
    assert flatten_node(-2).output_shape((2, 3, 4, 5)) == (6, 20)
    with pytest.raises(OpError, match=r"axis 1 is out of range \[0, 0\] for an input of rank 0"):
        flatten_node().output_shape(())


def test_an_axis_of_a_rank_0_input_says_there_is_none():
    """It said 'out of range [0, -1]', a range with nothing in it."""
    from onnxop_cli.ops import make_node

    node = make_node("Squeeze", 21, axes=[0])
    with pytest.raises(OpError) as e:
        node.output_shape(())
    assert str(e.value) == "Squeeze: axis 0 is out of range: there is no axis for an input of rank 0"
    with pytest.raises(OpError, match=r"^Slice: axis -1 is out of range: there is no axis for an input of rank 0$"):
        make_node("Slice", 21, starts=[0], ends=[1], axes=[-1]).output_shape(())


@given(shape=shapes, data=st.data())
def test_unsqueeze_valid_axes_match_numpy(shape, data):
    k = data.draw(st.integers(1, 4))
    r_out = len(shape) + k
    targets = data.draw(st.lists(st.integers(0, r_out - 1), min_size=k, max_size=k, unique=True))
    axes = [t - r_out if data.draw(st.booleans()) else t for t in targets]
    expected = np.expand_dims(np.empty(shape), tuple(axes)).shape
    assert unsqueeze_node(axes).output_shape(shape) == expected


@given(shape=shapes, data=st.data())
def test_unsqueeze_out_of_range_is_refused(shape, data):
    k = data.draw(st.integers(1, 3))
    r_out = len(shape) + k
    bad = data.draw(st.one_of(st.integers(r_out, r_out + 20), st.integers(-r_out - 20, -r_out - 1)))
    axes = [bad] + list(range(k - 1))
    with pytest.raises(OpError) as e:
        unsqueeze_node(axes).output_shape(shape)
    assert f"axis {bad} is out of range [{-r_out}, {r_out - 1}] for an output of rank {r_out}" in str(e.value)


@given(shape=shapes, data=st.data())
def test_unsqueeze_duplicates_after_normalising_are_refused(shape, data):
    r_out = len(shape) + 2
    target = data.draw(st.integers(0, r_out - 1))
    axes = [target, target - r_out]  # the same axis, once positive, once negative
    with pytest.raises(OpError, match="axes must be unique"):
        unsqueeze_node(axes).output_shape(shape)
    with pytest.raises(OpError, match="more than once"):
        unsqueeze_node([target, target]).output_shape(shape)


def test_unsqueeze_documented_cases():
    assert unsqueeze_node([0, 2]).output_shape((2, 3)) == (1, 2, 1, 3)
    assert unsqueeze_node([5, 4, 2]).output_shape((3, 4, 5)) == (3, 4, 1, 5, 1, 1)
    assert unsqueeze_node([-2]).output_shape((1, 3, 1, 5)) == (1, 3, 1, 1, 5)
    with pytest.raises(OpError, match="axes 1 and -4 both name output axis 1"):
        unsqueeze_node([1, -4]).output_shape((2, 3, 4))
    with pytest.raises(OpError, match="axes must not be empty"):
        unsqueeze_node([]).output_shape((2, 3))


def test_opset_versions():
    assert op_version("Flatten", 25).since_version == 25
    assert op_version("Flatten", 10).since_version == 9
    assert op_version("Flatten", 8).since_version == 1
    assert op_version("Unsqueeze", 12).since_version == 11
    assert op_version("Unsqueeze", 13).axes_is_input
    with pytest.raises(OpError, match=r"negative axes need opset 11"):
        flatten_node(-1, opset=9).output_shape((2, 3))
    assert unsqueeze_node([-1], opset=1).output_shape((2, 3)) == (2, 3, 1)  # as onnx.reference and onnxruntime

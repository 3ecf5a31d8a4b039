"""Random valid and invalid parameters for the view operators, each with the
numpy expression ONNX's spec gives for it (the test reference)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from onnxop_cli.ops import make_node, op_version

VIEW_OPS = ("Identity", "Reshape", "Squeeze", "Transpose", "Expand", "Slice", "Tile", "DepthToSpace", "SpaceToDepth")
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
BIG = 2**62


def depth_to_space(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x, b, mode):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b)
    t = t.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else t.transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def numpy_slice(start: int, end: int, step: int, dim: int) -> slice:
    """numpy's slice for ONNX's (start, end, step): the same, but for a negative
    step the spec clamps a start below the axis to 0 (numpy gives nothing) and
    an end below it to -1, "before the first element" (None to numpy)."""
    if step > 0:
        return slice(start, end, step)
    start = max(start + dim if start < 0 else start, 0)
    end = end + dim if end < 0 else end
    return slice(start, None if end < 0 else end, step)


def draw_shape(data, op: str) -> tuple[int, ...]:
    if op in ("DepthToSpace", "SpaceToDepth"):
        b = data.draw(st.integers(1, 3), label="b")
        n, c, h, w = (data.draw(st.integers(0 if i == 0 else 1, 3), label="nchw") for i in range(4))
        return (n, c * b * b, h, w) if op == "DepthToSpace" else (n, c, h * b, w * b)
    return data.draw(shapes, label="shape")


def draw_valid(data, op: str, shape: tuple[int, ...], opset: int = 28):
    """(node, reference) for random valid parameters of ``op`` on ``shape``."""
    r = len(shape)
    if op == "Identity":
        return make_node(op, opset), lambda x: x
    if op == "Transpose":
        perm = data.draw(st.none() | st.permutations(range(r)), label="perm")
        return make_node(op, opset, perm=perm), lambda x: np.transpose(x, perm)
    if op == "Expand":
        target = [d if d != 1 else data.draw(st.integers(0, 3)) for d in shape]
        target = [1 if data.draw(st.booleans()) else t for t in target]
        target = data.draw(st.lists(st.integers(0, 3), max_size=2), label="lead") + target
        out = np.broadcast_shapes(shape, tuple(target))
        return make_node(op, opset, shape=target), lambda x: np.broadcast_to(x, out)
    if op == "Slice":
        axes = data.draw(st.lists(st.integers(0, r - 1), unique=True, max_size=r), label="axes") if r else []
        if not axes:
            axes = list(range(r))[:1]
        if not axes:
            return make_node(op, opset, starts=[], ends=[]), lambda x: x
        bound = st.integers(-2 * max(shape) - 3, 2 * max(shape) + 3) | st.sampled_from([BIG, -BIG])
        starts = [data.draw(bound, label="start") for _ in axes]
        ends = [data.draw(bound, label="end") for _ in axes]
        steps = [data.draw(st.integers(-3, 3).filter(bool), label="step") for _ in axes]
        named = [a - r if data.draw(st.booleans()) else a for a in axes]
        index = [slice(None)] * r
        for a, s, e, k in zip(axes, starts, ends, steps):
            index[a] = numpy_slice(s, e, k, shape[a])
        node = make_node(op, opset, starts=starts, ends=ends, axes=named, steps=steps)
        return node, lambda x: x[tuple(index)]
    if op == "Tile":
        repeats = [data.draw(st.integers(0, 3), label="repeat") for _ in shape]
        return make_node(op, opset, repeats=repeats), lambda x: np.tile(x, repeats) if r else x
    if op == "Reshape":
        dims = list(data.draw(st.permutations(shape), label="dims")) if r else []
        if data.draw(st.booleans()):
            dims = dims + [1]
        size = math.prod(shape)
        wanted = list(dims)
        if dims and size and data.draw(st.booleans()):
            wanted[data.draw(st.integers(0, len(dims) - 1))] = -1
        if 0 in dims:  # a literal 0 copies the input's dim, unless allowzero (opset 14+)
            return make_node(op, opset, shape=wanted, allowzero=1), lambda x: x.reshape(dims)
        for i in range(min(r, len(wanted))):
            if wanted[i] == shape[i] and data.draw(st.booleans()):
                wanted[i] = 0
        return make_node(op, opset, shape=wanted), lambda x: x.reshape(dims)
    if op == "Squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        if data.draw(st.booleans()):
            return make_node(op, opset), lambda x: np.squeeze(x)
        axes = data.draw(st.lists(st.sampled_from(ones), unique=True), label="axes") if ones else []
        named = [a - r if data.draw(st.booleans()) else a for a in axes]
        return make_node(op, opset, axes=named), lambda x: np.squeeze(x, axis=tuple(axes) or None)
    b = data.draw(st.integers(1, 3), label="blocksize")
    n, c, h, w = shape
    if op == "DepthToSpace":
        b = max(k for k in (1, 2, 3) if c % (k * k) == 0 and k <= b) if c else b
    else:
        b = max(k for k in (1, 2, 3) if h % k == 0 and w % k == 0 and k <= b)
    has_mode = "mode" in op_version(op, opset).attribute_names
    mode = data.draw(st.sampled_from(["DCR", "CRD"]), label="mode") if has_mode else "DCR"
    ref = depth_to_space if op == "DepthToSpace" else space_to_depth
    return make_node(op, opset, blocksize=b, mode=mode if has_mode else None), lambda x: ref(x, b, mode)


def draw_invalid(data, op: str, shape: tuple[int, ...]):
    """(node or a thunk making it, text the refusal must hold) for parameters
    ONNX's spec rejects on ``shape``."""
    r = len(shape)
    if op == "Transpose":
        perm = list(range(r)) + [data.draw(st.integers(-2, r + 2))]
        return make_node(op, perm=perm), f"perm {perm} is not a permutation"
    if op == "Expand":
        big = [d for d in shape if d > 1]
        if not big:
            return make_node(op, shape=[-1]), "has a negative dim"
        target = [d + 1 if d > 1 else d for d in shape]
        return make_node(op, shape=target), f"shape {target} does not broadcast with input shape {shape}"
    if op == "Slice":
        if not r or data.draw(st.booleans()):
            axis = data.draw(st.integers(r, r + 5) | st.integers(-r - 5, -r - 1))
            return make_node(op, starts=[0], ends=[1], axes=[axis]), f"axis {axis} is out of range"
        return make_node(op, starts=[0], ends=[1], axes=[0], steps=[0]), "step 0 on axis 0"
    if op == "Tile":
        if data.draw(st.booleans()):
            repeats = [1] * r + [2]
            return make_node(op, repeats=repeats), f"repeats {repeats} has {r + 1} values for an input of rank {r}"
        repeats = [1] * r
        if r:
            repeats[0] = -1
            return make_node(op, repeats=repeats), f"repeats {repeats} has a negative count"
        return make_node(op, repeats=[3]), "has 1 values for an input of rank 0"
    if op == "Reshape":
        wanted = list(shape) + [2]
        if math.prod(shape) == 0:
            wanted = [-1, -1]
            return make_node(op, shape=wanted), "has more than one -1"
        if r and data.draw(st.booleans()):  # a 0 copies the input's dim: the message says the shape it meant
            wanted[0] = 0
            return make_node(op, shape=wanted), (f"shape {wanted} ({2 * math.prod(shape)} elements, as "
                                                 f"{tuple(shape) + (2,)}: the input's dim for each 0) does not fit")
        return make_node(op, shape=wanted), f"shape {wanted} ({2 * math.prod(shape)} elements) does not fit"
    if op == "Squeeze":
        wide = [i for i, d in enumerate(shape) if d != 1]
        if not wide:
            axis = r + 1
            return make_node(op, axes=[axis]), f"axis {axis} is out of range"
        axis = data.draw(st.sampled_from(wide))
        return make_node(op, axes=[axis]), f"axis {axis} of input shape {shape} has size {shape[axis]}, not 1"
    if op == "Identity":
        return None, ""
    if op == "DepthToSpace":
        if shape[1] % 4:
            return make_node(op, blocksize=2), f"{shape[1]} channels do not divide into blocks of 2x2"
        return make_node(op, blocksize=0), "blocksize 0 must be at least 1"
    if shape[2] % 2 or shape[3] % 2:
        return make_node(op, blocksize=2), f"height {shape[2]} and width {shape[3]} must be multiples of blocksize 2"
    return make_node(op, blocksize=-1), "blocksize -1 must be at least 1"

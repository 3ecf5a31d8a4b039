"""Shapes at the edges: Concat and Split past 8 bindings (one bind group),
Pad in every mode with pads up to and past the axis, ranks 5 to 8 (Transpose,
Expand), zero-size axes; and the big cases (``big_cases``): more than 65,535
workgroups and tensors past one 128 MiB binding."""

from __future__ import annotations

from .case import Case


def _rng(seed: int):
    import numpy as np

    return np.random.default_rng(seed)


def _f32(seed: int, shape):
    import numpy as np

    return _rng(seed).standard_normal(shape).astype(np.float32)


def bindings() -> list[Case]:
    """Concat of 9, 17, 33, 100 inputs and Split into as many outputs, widths 1 to 3."""
    import numpy as np

    out = []
    for n in (9, 17, 33, 100):
        widths = [1 + (i * 7) % 3 for i in range(n)]
        parts = [(f"x{i}", _f32(100 + i, (2, w))) for i, w in enumerate(widths)]
        out.append(Case(f"concat_{n}_inputs", "bindings", "Concat", parts, {"axis": 1}))
        whole = _f32(200 + n, (2, sum(widths)))
        out.append(Case(f"split_{n}_outputs", "bindings", "Split",
                        [("x", whole), ("split", np.array(widths, np.int64))], {"axis": 1}, outputs=n))
    return out


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pads() -> list[Case]:
    """Every mode on a (3, 4) input, each axis padded by the same p on both
    sides: p = d-1, d, d+1, 2d+1 of the axis (d = 3 and 4); cropping past
    the axis is an error. (Cropping within it is not here: onnx's reference
    evaluator refuses every negative pad.)"""
    import numpy as np

    x = _f32(300, (3, 4))
    out = []
    for mode in PAD_MODES:
        for tag, k in (("d_minus_1", -1), ("d", 0), ("d_plus_1", 1), ("2d_plus_1", None)):
            p = [d + k if k is not None else 2 * d + 1 for d in x.shape]
            out.append(_pad(f"pad_{mode}_{tag}", x, mode, p + p))
        out.append(_pad(f"pad_{mode}_crop_past_axis", x, mode, [0, -2, -4, -2],
                        error="Pad: pads -2 and -2 remove 4 of the 4 elements of axis 1, and -4 more "
                        "than the 3 of axis 0: a negative output size"))
    out.append(_pad("pad_constant_float32_value", x, "constant", [1, 2, 1, 2], value=np.float32(-0.0)))
    return out


def _pad(name, x, mode, pads, error="", value=None):
    import numpy as np

    inputs = [("x", x), ("pads", np.array(pads, np.int64))]
    if value is not None:
        inputs.append(("value", np.array(value, x.dtype)))
    return Case(name, "pad", "Pad", inputs, {"mode": mode}, error=error)


RANK_SHAPES = {5: (2, 3, 1, 2, 3), 6: (2, 1, 3, 2, 1, 3), 7: (2, 1, 2, 3, 1, 2, 2), 8: (1, 2, 2, 1, 3, 2, 1, 2)}


def ranks() -> list[Case]:
    """Transpose (reversed and rotated axes) and Expand (every 1 broadcast,
    and a lower-rank input) at ranks 5 to 8."""
    import numpy as np

    out = []
    for r, shape in RANK_SHAPES.items():
        x = _f32(400 + r, shape)
        out.append(Case(f"transpose_rank{r}_reversed", "ranks", "Transpose", [("x", x)],
                        {"perm": list(range(r))[::-1]}))
        rotated = [*range(1, r), 0]
        rotated = [rotated[(i * 3) % r] for i in range(r)] if r % 3 else rotated
        out.append(Case(f"transpose_rank{r}_mixed", "ranks", "Transpose",
                        [("x", x.astype(np.int64) if r % 2 else x.astype(np.uint8))], {"perm": rotated}))
        target = [3 if d == 1 else d for d in shape]
        out.append(Case(f"expand_rank{r}_ones", "ranks", "Expand",
                        [("x", x), ("shape", np.array(target, np.int64))]))
        low = _f32(410 + r, (shape[-1],))
        out.append(Case(f"expand_rank{r}_from_rank1", "ranks", "Expand",
                        [("x", low), ("shape", np.array(target, np.int64))]))
    return out


def zero_size() -> list[Case]:
    """Zero-size axes where each operator could forget them."""
    import numpy as np

    x = _f32(500, (0, 3, 2))
    y = _f32(501, (4, 3))
    i64 = np.int64
    return [
        Case("transpose_zero_size", "zero_size", "Transpose", [("x", x)], {"perm": [2, 0, 1]}),
        Case("expand_to_zero_size", "zero_size", "Expand", [("x", y[:1]), ("shape", np.array([0, 3], i64))]),
        Case("concat_with_zero_size_input", "zero_size", "Concat",
             [("a", y), ("b", np.zeros((4, 0), np.float32)), ("c", y)], {"axis": 1}),
        Case("split_zero_size_output", "zero_size", "Split", [("x", y), ("split", np.array([2, 0, 1], i64))],
             {"axis": 1}, outputs=3),
        Case("gather_empty_indices", "zero_size", "Gather", [("x", y), ("i", np.zeros((0, 2), i64))], {"axis": 0}),
        Case("gather_from_zero_size_data", "zero_size", "Gather",
             [("x", np.zeros((4, 0), np.float32)), ("i", np.array([3, -4], i64))], {"axis": 0}),
        Case("slice_to_zero_size", "zero_size", "Slice",
             [("x", y), ("starts", np.array([3], i64)), ("ends", np.array([1], i64))]),
        Case("tile_zero_repeats", "zero_size", "Tile", [("x", y), ("repeats", np.array([2, 0], i64))]),
        Case("pad_zero_size_input", "zero_size", "Pad",
             [("x", np.zeros((0, 3), np.float32)), ("pads", np.array([1, 0, 2, 1], i64))], {"mode": "constant"}),
        Case("scatter_nd_empty_updates", "zero_size", "ScatterND",
             [("x", y), ("i", np.zeros((0, 1), i64)), ("u", np.zeros((0, 3), np.float32))]),
    ]


def cases() -> list[Case]:
    return [*bindings(), *pads(), *ranks(), *zero_size()]


MIB = 1 << 20


def big_cases() -> list[Case]:
    """Past one 128 MiB binding (input, output or both), and dispatches of
    more than 65,535 workgroups: about 140 MiB each."""
    import numpy as np

    rows = 9 * 1024 + 1  # 9217 x 4001 float32: 147 MB in and out
    x = _rng(600).integers(0, 2**32, (rows, 4001), dtype=np.uint32).view(np.float32)
    part = _rng(601).integers(0, 256, 72 * MIB, dtype=np.uint8)
    table = _rng(602).integers(0, 2**32, (300, 1 << 17), dtype=np.uint32).view(np.float32)
    return [
        Case("transpose_big_float32", "big", "Transpose", [("x", x)], {"perm": [1, 0]}),
        Case("concat_big_uint8", "big", "Concat", [("a", part), ("b", part[::-1].copy())], {"axis": 0}),
        Case("gather_big_rows", "big", "Gather",
             [("x", table), ("i", np.arange(299, -301, -2, dtype=np.int64))], {"axis": 0}),
        Case("expand_big_uint8", "big", "Expand",
             [("x", part[: 1 << 16].reshape(1, -1)), ("shape", np.array([2200, 1], np.int64))]),
    ]

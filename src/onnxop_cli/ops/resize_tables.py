"""Resize nearest's per-axis index tables (ops/resize.py), made on the host
with the float arithmetic of onnx.reference's ``op_resize.py`` step for
step -- ``_interpolate_nd``'s sizes, scales and skips, ``_compute_x_ori``'s
coordinates (roi kept as the reference indexes it: numpy scalars of roi's
type, so its float32 sums round as there), ``_interpolate_1d_along_axis``'s
neighbour window and ``_nearest_coeffs``' pick -- so that every element is
the one the reference weighs 1. Pure numpy, no bytes of the data.
"""

from __future__ import annotations

import math
from typing import Optional

from ..errors import OpError, OutOfScope


def axis_tables(op: str, shape: tuple[int, ...], scales, sizes, roi, settings: dict, check_sizes,
                names: list[int]) -> list:
    """For each axis of ``shape`` (the resized axes' input sizes), the input
    index of each output position (an int64 array), or None where the
    reference leaves the axis alone; None where the output is empty.
    ``check_sizes(output sizes)`` refuses an output too large before any
    table is made, and says whether it is empty (an axis of 0, resized or
    not: no position is picked for, and another axis's table could be 2**40
    long); ``names``: the data's axis each is, for messages."""
    import numpy as np

    r = len(shape)
    if sizes is not None:
        scale_factors = [sizes[i] / shape[i] if shape[i] else math.inf for i in range(r)]
        output_size = [int(s) for s in sizes]
        policy = settings["policy"]
        if policy != "stretch":
            scale = np.array(scale_factors).min() if policy == "not_larger" else np.array(scale_factors).max()
            if not math.isfinite(scale):  # an axis of size 0 has no ratio; int(inf) was a traceback
                empty = names[scale_factors.index(math.inf)]
                raise OpError(f"{op}: keep_aspect_ratio_policy {policy} scales every resized axis by the "
                              f"{'smallest' if policy == 'not_larger' else 'largest'} of sizes {list(map(int, sizes))} "
                              f"over the input's {list(shape)}, and axis {empty} of size 0 makes that infinite")
            scale_factors = [scale] * r
            output_size = [int(scale * shape[i] + 0.5) for i in range(r)]
    else:
        scale_factors = scales
        product = scales * np.array(shape, dtype=np.int64)
        if (product >= 2.0 ** 62).any():
            raise OpError(f"{op}: scales {scales.tolist()} make an output of {product.tolist()} elements per axis")
        output_size = [int(v) for v in product.astype(np.int64)]
    if check_sizes(output_size):
        return None
    tables: list = []
    for axis in range(r):
        scale, out, width = float(scale_factors[axis]), output_size[axis], shape[axis]
        if math.isclose(scale, 1.0) and out == width and (
                roi is None or (math.isclose(float(roi[axis]), 0.0) and math.isclose(float(roi[axis + r]), 1.0))):
            tables.append(None)
            continue
        pair = None if roi is None else [roi[axis], roi[axis + r]]
        tables.append(_table(op, names[axis], width, out, scale, pair, settings))
    return tables


def _table(op: str, axis: int, width: int, out: int, scale: float, roi, settings: dict):
    import numpy as np

    if out == 0 or width == 0:
        return np.zeros(out, dtype=np.int64)
    mode = settings["coordinates"]
    x_ori, outside = _x_ori(op, mode, np.arange(out, dtype=np.float64), scale, width, scale * width, out, roi)
    if np.isnan(x_ori).any():  # onnx.reference, onnxruntime and a floor's cast each made something else of it
        raise OpError(f"{op}: tf_crop_and_resize's roi for axis {axis} is {float(roi[0])} to {float(roi[1])}, "
                      f"which puts {int(np.isnan(x_ori).sum())} of the {out} positions at a NaN coordinate")
    if settings["nearest"] == "simple":  # Resize-10, as onnxruntime: floor, or ceil where the axis shrinks
        picks = (np.ceil(x_ori) if scale < 1 else np.floor(x_ori)).astype(np.int64)
        return np.clip(picks, 0, width - 1)
    x_int = np.floor(x_ori).astype(np.int64)
    ratios = np.where(x_ori == x_int, 1.0, x_ori - x_int)
    second = _second(ratios, settings["nearest"])
    x_padded = x_ori + 1  # a window of 2 neighbours, the data edge-padded by 1
    p_padded = np.floor(x_padded).astype(np.int64)
    start = p_padded + np.where(x_padded - p_padded == 0, -1, 0) - 1
    picks = start + second
    if settings["exclude"]:
        outside = (picks < 0) | (picks >= width) if outside is None else outside | (picks < 0) | (picks >= width)
    if outside is not None and outside.any():
        why = ("exclude_outside 1 weighs a pick outside the input 0" if roi is None or mode != "tf_crop_and_resize"
               else f"tf_crop_and_resize (roi {float(roi[0])} to {float(roi[1])} there) reads outside the input")
        raise OutOfScope(f"{op}: {why} at {int(outside.sum())} of the {out} positions of axis {axis}; "
                         "onnxop runs the picks of elements, not fills")
    return np.clip(picks, 0, width - 1)


def _second(ratios, nearest: str):
    """1 where ``_nearest_coeffs`` weighs the right neighbour (an integer ratio always does)."""
    import numpy as np

    whole = ratios == np.floor(ratios)
    if nearest == "round_prefer_floor":
        right = ratios > 0.5
    elif nearest == "round_prefer_ceil":
        right = ratios >= 0.5
    else:
        right = np.full(ratios.shape, nearest == "ceil")
    return (whole | right).astype(np.int64)


def _x_ori(op: str, mode: str, y, scale: float, width: int, output_width: float, out: int, roi):
    """``_compute_x_ori``: (source coordinates, the positions tf_crop_and_resize puts outside or None)."""
    import numpy as np

    outside: Optional[object] = None
    if mode == "align_corners":
        x = np.zeros(out, dtype=np.float64) if output_width == 1 else y * (width - 1) / (output_width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        if roi is None:
            raise OpError(f"{op}: coordinate_transformation_mode 'tf_crop_and_resize' needs roi")
        if output_width == 1:
            x = np.full(out, (roi[1] - roi[0]) * (width - 1) / 2, dtype=np.float64)
        else:
            x = y * (roi[1] - roi[0]) * (width - 1) / (output_width - 1)
        x = x + roi[0] * (width - 1)
        outside = (x < 0) | (x > width - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out, -0.5, dtype=np.float64) if output_width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        adjustment = out / output_width
        center = width / 2
        x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5
    else:  # tf_half_pixel_for_nn (Resize-11): onnx.reference has none; the operator's text
        x = (y + 0.5) / scale
    return x, outside

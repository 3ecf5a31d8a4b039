"""What a matrix pass keeps of a test's element types: one per width.

The matrix passes (.ci/run, ``ONNXOP_TEST_MATRIX``) test the drivers and the engines: each backend's
compiler and each engine's buffer, dispatch and readback paths. A GPU test parametrised by ``dtype`` mostly
runs one kernel text per element width (a copy moves words: int32, uint32 and float32 are one kernel), so
on the matrix's backends it keeps the first ``dtype`` of each width and byte-swap unit (``>f4`` is not
``<f4``: big-endian input is swapped on the device) for each combination of its other parameters; the
README's pass runs every type on vulkan. A test whose kernel text depends on the type itself (arithmetic,
a reduction, NaN rules, a fill's value) says ``@pytest.mark.every_dtype`` and keeps them all.
``ONNXOP_TEST_KERNEL_LOG`` (tests/kernel_log/) logs what a pass runs on each backend.
"""

from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from onnxop_cli.core.tensor import DType, dtype_by_name, dtype_of_numpy, swap_unit, type_number


def width(value: Any) -> tuple[int, int]:
    """A ``dtype`` parameter's (bits, byte-swap unit): numpy's dtypes and their strings, ml_dtypes' types,
    onnxop's DType and ONNX's names, ``"4"`` for 4 bits; anything else raises: a new form is added here, not silently kept."""
    if isinstance(value, DType):
        return value.bits, 0
    if isinstance(value, str) and value.isdigit():
        return int(value), 0
    if isinstance(value, str) and type_number(value) is not None:  # "float" is ONNX's float32, not numpy's float64
        return dtype_by_name(value.strip().lower()).bits, 0
    np_dtype = np.dtype(value)
    return dtype_of_numpy(np_dtype).bits, swap_unit(np_dtype)


def _hashable(value: Any) -> Hashable:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def one_per_width(items: list) -> tuple[list, list]:
    """(kept, dropped): of the items of one function on one backend whose other parameters are the same,
    the first of each ``dtype`` width; items without a ``dtype`` parameter or marked ``every_dtype`` kept."""
    kept, dropped, seen = [], [], set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "dtype" not in params or item.get_closest_marker("every_dtype") is not None:
            kept.append(item)
            continue
        key = (item.nodeid.partition("[")[0], width(params["dtype"]),
               tuple(sorted((k, _hashable(v)) for k, v in params.items() if k != "dtype")))
        (dropped if key in seen else kept).append(item)
        seen.add(key)
    return kept, dropped

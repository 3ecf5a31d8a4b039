"""What a matrix pass keeps of a kernel test's data fan-out.

The matrix passes (.ci/run, ``ONNXOP_TEST_MATRIX``) test the drivers and the engines: each backend's
compiler and each engine's buffer, dispatch and readback paths. So on the matrix's backends every
distinct kernel and engine path must run, but the fan-outs that run one kernel text with other data need
not: the README's pass runs them all on vulkan. Two of them are cut here, for each test function, backend
and combination of its other parameters:

- ``dtype``: a kernel mostly moves words, so int32, uint32 and float32 are one kernel text: the first
  ``dtype`` of each width and byte-swap unit is kept (``>f4`` is not ``<f4``: big-endian input is
  swapped on the device). A test whose kernel text depends on the type itself (a reduction, NaN rules)
  says ``@pytest.mark.every_dtype`` and keeps them all.
- ``@pytest.mark.same_kernel("kind")``: the named parameters choose data (the shape of a view) for one
  kernel: only their first value is kept.

``ONNXOP_TEST_KERNEL_LOG`` (tests/kernel_log/) logs what a pass runs on each backend, to check that a cut
keeps every kernel.
"""

from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from onnxop_cli.core.tensor import DType, dtype_by_name, dtype_of_numpy, swap_unit, type_number


def width(value: Any) -> tuple[int, int]:
    """A ``dtype`` parameter's (bits, byte-swap unit): numpy's dtypes and their strings, ml_dtypes' types,
    onnxop's DType and ONNX's names, ``"4"`` for 4 bits; anything else raises: a new form is added here,
    not silently kept."""
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


def _key(item) -> tuple | None:
    """The kernel-and-engine-path part of an item's parameters (None: nothing of it is cut)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    marker = item.get_closest_marker("same_kernel")
    data = set(marker.args) if marker is not None else set()
    cut_dtype = "dtype" in params and item.get_closest_marker("every_dtype") is None
    if not (cut_dtype or data & set(params)):
        return None
    rest = tuple(sorted((k, _hashable(v)) for k, v in params.items() if k not in data and not (cut_dtype and k == "dtype")))
    return item.nodeid.partition("[")[0], width(params["dtype"]) if cut_dtype else None, rest


def one_per_kernel(items: list) -> tuple[list, list]:
    """(kept, dropped): the first item of each key (_key) in collection order, and every item without one."""
    kept, dropped, seen = [], [], set()
    for item in items:
        key = _key(item)
        (dropped if key is not None and key in seen else kept).append(item)
        seen.add(key)
    return kept, dropped

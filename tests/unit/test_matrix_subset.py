"""tests/matrix_subset.py: what a matrix pass keeps of a test's element types (one per width and byte-swap
unit) and of the parameters it marks same_kernel (the first value)."""

from __future__ import annotations

from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from matrix_subset import one_per_kernel, width
from onnxop_cli.core.tensor import dtype_by_name


def test_every_form_of_a_dtype_parameter_has_its_width():
    cases = [("<f4", (32, 0)), ("<i4", (32, 0)), (">f4", (32, 4)), (">c8", (64, 4)), ("<c8", (64, 0)), ("u1", (8, 0)),
             ("?", (8, 0)), ("4", (4, 0)), ("float", (32, 0)), ("bfloat16", (16, 0)), (np.bool_, (8, 0)),
             (ml_dtypes.int4, (4, 0)), (ml_dtypes.bfloat16, (16, 0)), (dtype_by_name("uint2"), (2, 0))]
    assert [(v, width(v)) for v, _ in cases] == cases
    with pytest.raises(TypeError):
        width("not a type")  # a new form fails the matrix pass's collection, never keeps or drops by chance


def _item(name: str, marker=None, **params):
    """A collected item's stand-in; ``marker``: "every_dtype", or a tuple of same_kernel's names."""
    ids = "-".join(str(v) for v in params.values())
    marks = {"every_dtype": SimpleNamespace(args=())} if marker == "every_dtype" else {}
    if isinstance(marker, tuple):
        marks["same_kernel"] = SimpleNamespace(args=marker)
    return SimpleNamespace(nodeid=f"tests/gpu/test_x.py::{name}[{ids}]", callspec=SimpleNamespace(params=params),
                           get_closest_marker=marks.get)


def test_the_first_type_of_each_width_and_the_first_same_kernel_value_are_kept_for_each_other_parameter():
    items = [_item("test_a", backend=b, path=p, dtype=d)
             for b in ("gl", "dawn-gl") for p in ("runs", "windows") for d in ("<f4", "<i4", ">f4", "<f2", "bfloat16")]
    items += [_item("test_b", backend="gl", dtype=d) for d in ("<f4", "<i4")]
    items += [_item("test_c", "every_dtype", backend="gl", dtype=d) for d in ("<f4", "<i4")]
    items += [_item("test_d", backend="gl", size=s) for s in (1, 2)]
    items += [_item("test_e", ("kind",), backend="gl", kind=k, binding=b, dtype=d)
              for k in ("transpose", "slice") for b in (None, 16) for d in ("<f4", "<i4", "u1")]
    kept, dropped = one_per_kernel(items)
    assert [i.nodeid.split("::")[1] for i in dropped] == [
        f"test_a[{b}-{p}-{d}]" for b in ("gl", "dawn-gl") for p in ("runs", "windows") for d in ("<i4", "bfloat16")
    ] + ["test_b[gl-<i4]"] + [f"test_e[gl-transpose-{b}-<i4]" for b in (None, 16)] + [
        f"test_e[gl-slice-{b}-{d}]" for b in (None, 16) for d in ("<f4", "<i4", "u1")]
    assert len(kept) + len(dropped) == len(items) and {id(i) for i in kept}.isdisjoint(map(id, dropped))

"""tests/matrix_widths.py: which of a test's element types a matrix pass keeps (one per width and byte-swap unit)."""

from __future__ import annotations

from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from matrix_widths import one_per_width, width
from onnxop_cli.core.tensor import dtype_by_name


def test_every_form_of_a_dtype_parameter_has_its_width():
    cases = [("<f4", (32, 0)), ("<i4", (32, 0)), (">f4", (32, 4)), (">c8", (64, 4)), ("<c8", (64, 0)), ("u1", (8, 0)),
             ("?", (8, 0)), ("4", (4, 0)), ("float", (32, 0)), ("bfloat16", (16, 0)), (np.bool_, (8, 0)),
             (ml_dtypes.int4, (4, 0)), (ml_dtypes.bfloat16, (16, 0)), (dtype_by_name("uint2"), (2, 0))]
    assert [(v, width(v)) for v, _ in cases] == cases
    with pytest.raises(TypeError):
        width("not a type")  # a new form fails the matrix pass's collection, never keeps or drops by chance


def _item(name: str, marker: bool = False, **params):
    ids = "-".join(str(v) for v in params.values())
    return SimpleNamespace(nodeid=f"tests/gpu/test_x.py::{name}[{ids}]", callspec=SimpleNamespace(params=params),
                           get_closest_marker=lambda m: object() if marker and m == "every_dtype" else None)


def test_the_first_type_of_each_width_is_kept_for_each_other_parameter_and_backend():
    items = [_item("test_a", backend=b, path=p, dtype=d)
             for b in ("gl", "dawn-gl") for p in ("runs", "windows") for d in ("<f4", "<i4", ">f4", "<f2", "bfloat16")]
    items += [_item("test_b", backend="gl", dtype=d) for d in ("<f4", "<i4")]
    items += [_item("test_c", True, backend="gl", dtype=d) for d in ("<f4", "<i4")]
    items += [_item("test_d", backend="gl", size=s) for s in (1, 2)]
    kept, dropped = one_per_width(items)
    assert [i.nodeid.split("::")[1] for i in dropped] == [
        f"test_a[{b}-{p}-{d}]" for b in ("gl", "dawn-gl") for p in ("runs", "windows") for d in ("<i4", "bfloat16")
    ] + ["test_b[gl-<i4]"]
    assert len(kept) + len(dropped) == len(items) and {id(i) for i in kept}.isdisjoint(map(id, dropped))

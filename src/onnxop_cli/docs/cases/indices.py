"""Indices at and past every edge of an axis of size d, for every operator
that looks values up by index: -d-1, -d, d-1, d, 2^31, 2^32, 2^32+1 and the
int64 extremes (int64 indices), -d-1, -d, d-1, d and the int32 extremes
(int32 indices). Only -d and d-1 are valid (OneHot: every one is, an index
out of [-depth, depth-1] gives a row of off values). And on an inner axis
(axis 1, of size 3): -4, 2 and 3, where a runtime that flattens before it
checks reads the next row's element for 3. A runtime that keeps the
low 32 bits of an int64 index reads 2^32 as 0, 2^32+1 as 1 and 2^63-1 as -1:
valid-looking rows where the spec requires a refusal."""

from __future__ import annotations

from .case import Case

D = 5  # the axis the indices address

INT64 = [
    ("minus_d_minus_1", -D - 1), ("minus_d", -D), ("d_minus_1", D - 1), ("d", D),
    ("2pow31", 2**31), ("2pow32", 2**32), ("2pow32_plus_1", 2**32 + 1),
    ("int64_min", -(2**63)), ("int64_max", 2**63 - 1),
]
INT32 = [
    ("minus_d_minus_1", -D - 1), ("minus_d", -D), ("d_minus_1", D - 1), ("d", D),
    ("int32_min", -(2**31)), ("int32_max", 2**31 - 1),
]


def _data(seed: int):
    import numpy as np

    return np.random.default_rng(seed).standard_normal((D, 3)).astype(np.float32)


def _lookups(v, dtype):
    """(op, inputs, attrs) of each operator, addressing axis 0 (of size D) with ``v``."""
    import numpy as np

    x = _data(1)
    upd = np.random.default_rng(2).standard_normal((1, 3)).astype(np.float32)
    idx = np.dtype(dtype)
    return [
        ("gather", "Gather", [("x", x), ("i", np.array([v, 0], idx))], {"axis": 0}),
        ("gather_elements", "GatherElements", [("x", x), ("i", np.array([[v, 0, 1]], idx))], {"axis": 0}),
        ("gather_nd", "GatherND", [("x", x), ("i", np.array([[v], [1]], np.int64))], {}),
        ("scatter_elements", "ScatterElements",
         [("x", x), ("i", np.array([[v, 0, 1]], idx)), ("u", upd)], {"axis": 0}),
        ("scatter_nd", "ScatterND", [("x", x), ("i", np.array([[v]], np.int64)), ("u", upd)], {}),
    ]


def inner_axis_cases() -> list[Case]:
    """Indices on axis 1 of a (5, 3) tensor: 3 and -4 are past its edges, 2 is its last."""
    import numpy as np

    x = _data(1)
    upd = np.random.default_rng(2).standard_normal((1, 3)).astype(np.float32)
    out = []
    for tag, v in (("minus_d_minus_1", -4), ("d_minus_1", 2), ("d", 3)):
        error = "" if v == 2 else f"index {v} is outside [-3, 2] for axis 1 of size 3"
        for short, op, inputs in (
            ("gather", "Gather", [("x", x), ("i", np.array([v, 0], np.int64))]),
            ("gather_elements", "GatherElements", [("x", x), ("i", np.array([[v, 0, 1]] * 5, np.int64))]),
            ("scatter_elements", "ScatterElements", [("x", x), ("i", np.array([[0, 1, v]], np.int64)), ("u", upd)]),
        ):
            out.append(Case(f"{short}_axis1_index_{tag}", "indices", op, inputs, {"axis": 1},
                            error=error and f"{op}: {error}"))
    return out


def cases() -> list[Case]:
    import numpy as np

    out: list[Case] = inner_axis_cases()
    for dtype, values in (("int64", INT64), ("int32", INT32)):
        for tag, v in values:
            valid = -D <= v <= D - 1
            why = f"index {v} is outside [-{D}, {D - 1}] for an axis of size {D}"
            for short, op, inputs, attrs in _lookups(v, dtype):
                if op in ("GatherND", "ScatterND") and dtype == "int32":
                    continue  # their indices are int64 only
                out.append(Case(f"{short}_{dtype}_index_{tag}", "indices", op, inputs, attrs,
                                error="" if valid else f"{op}: {why}"))
            depth = np.array(D, np.int64)
            on_off = np.array([0.0, 1.0], np.float32)
            out.append(Case(f"one_hot_{dtype}_index_{tag}", "indices", "OneHot",
                            [("i", np.array([v, 1], dtype)), ("depth", depth), ("values", on_off)], {"axis": -1}))
    return out

"""Write the fixture pages in this folder: NEW examples (not on the seed pages)
in both page formats, with other dtypes and opsets.

Independent of onnxop on purpose: outputs are computed with numpy
(``reshape`` / ``expand_dims``) and printed with numpy's own ``array2string``
in the pages' layout, so a test that checks these pages with onnxop compares
onnxop against numpy, not against itself. Run ``python tests/pages/make_pages.py``
to regenerate; tests/unit/test_docs.py checks the files are what this writes.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
RNG_SEED = 2024


def printed(a: np.ndarray) -> str:
    """numpy's printing with the pages' parameters: summarised above 100
    elements with 3 edge items, 75 columns, 8 digits."""
    return np.array2string(
        a, separator=", ", threshold=100, edgeitems=3, max_line_width=75, precision=8, floatmode="maxprec"
    )


def flatten(x: np.ndarray, axis: int = 1) -> np.ndarray:
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


def unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    r_out = x.ndim + len(axes)
    return np.expand_dims(x, tuple(a + r_out if a < 0 else a for a in axes))


def tensor_lines(name: str, a: np.ndarray, dtype_name: str | None = None) -> list[str]:
    lines = [f"  {name}: shape={tuple(a.shape)}, dtype={dtype_name or a.dtype}"]
    return lines + [f"    {line}" if line else "" for line in printed(a).split("\n")]


def block(op: str, attrs: dict, inputs: list, outputs: list) -> tuple[list[str], list[str]]:
    """(Node and Attributes lines, Inputs and Outputs lines) of one example."""
    node = ["Node:", f"  {op}({', '.join(n for n, _ in inputs)}) -> ({', '.join(n for n, _ in outputs)})"]
    if attrs:
        node += ["", "Attributes:"] + [f"  {k} = {v}" for k, v in attrs.items()]
    io = ["Inputs:"]
    for name, a in inputs:
        io += tensor_lines(name, a)
    io += ["", "Outputs:"]
    for name, a in outputs:
        io += tensor_lines(name, a)
    return node, io


def rst_page(op: str, version: int, examples: list) -> str:
    title = f"{op} - version {version}"
    out = [
        ":nosearch:", "", f".. _op_ai_onnx_{op}-{version}:", "", title, "=" * len(title), "",
        f"This page documents version **{version}** of operator **{op}**.", "",
        "- **Domain**: ``ai.onnx``", f"- **Since version**: {version}", "",
        "A fixture page of onnxop's tests: new examples, other dtypes.", "",
        "**Inputs**", "", "- **input** (*T*): a tensor", "",
        "Examples", "--------", "",
    ]
    for name, (node, io) in examples:
        out += [f"**{name}**", "", ".. code-block:: text", ""]
        out += [f"    {line}" if line else "" for line in node] + ["", ".. code-block:: text", ""]
        out += [f"    {line}" if line else "    " for line in io] + [""]
    out += ["Differences with previous version", "---------------------------------", "", "(none)", ""]
    return "\n".join(out)


def text_page(op: str, version: int, examples: list) -> str:
    """The flattened web text: indentation and blank lines lost, runs of
    spaces collapsed, as in the seed Flatten page."""
    out = [f"{op}#", "Domain:", f"ai.onnxSince version: {version}",
           "A fixture page of onnxop's tests: new examples, other dtypes.", "Examples#"]
    for name, (node, io) in examples:
        out.append(name)
        out += [" ".join(line.split()) for line in node + io if line.strip()]
    out += [f"Differences with previous version ({version - 1})#", "breaking: no", ""]
    return "\n".join(out)


def flatten_examples(rng: np.random.Generator) -> list:
    ex = []

    def add(name, x, axis=None, xname="a", yname="b"):
        attrs = {} if axis is None else {"axis": axis}
        y = flatten(x, 1 if axis is None else axis)
        ex.append((name, block("Flatten", attrs, [(xname, x)], [(yname, y)])))

    add("test_flatten_int32_axis2", rng.integers(-1000, 1000, (2, 3, 4), dtype=np.int32), 2)
    i64 = rng.integers(-(2**62), 2**62, (3, 2, 2), dtype=np.int64)
    i64.flat[0], i64.flat[-1] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    add("test_flatten_int64_default_axis", i64)
    add("test_flatten_bool_axis0", rng.integers(0, 2, (2, 3, 2)).astype(bool), 0, "mask", "flat")
    f16 = rng.standard_normal((2, 2, 3)).astype(np.float16)
    f16.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 65504, 6e-8]
    add("test_flatten_float16_specials", f16, -1)
    add("test_flatten_uint8_summarised", rng.integers(0, 256, (4, 5, 6), dtype=np.uint8), 1)
    add("test_flatten_float64_eight_digits", rng.standard_normal((2, 3)), -2)
    c64 = (rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2))).astype(np.complex64)
    add("test_flatten_complex64", c64, 1)
    add("test_flatten_int8_rank1", rng.integers(-128, 128, (5,), dtype=np.int8), 0)
    add("test_flatten_scalar", np.array(3.5, dtype=np.float32), 0)
    add("test_flatten_empty_int16", np.zeros((0, 3), dtype=np.int16), 1)

    # Not runnable, reported as skipped: another operator, an input printed
    # with '...', a dtype whose values cannot be read back.
    x = rng.integers(0, 9, (2, 3), dtype=np.int32)
    ex.append(("test_reshape_other_operator",
               block("Reshape", {}, [("data", x), ("shape", np.array([3, 2]))], [("reshaped", x.reshape(3, 2))])))
    add("test_flatten_summarised_input", np.arange(240, dtype=np.float32).reshape(2, 120), 1)
    bf16 = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    ex.append(("test_flatten_bfloat16", block("Flatten", {"axis": 1}, [("a", bf16)], [("b", bf16.reshape(2, 3))])))
    return ex


def unsqueeze_examples(rng: np.random.Generator) -> list:
    """Unsqueeze-11: axes is an attribute (printed under Attributes)."""
    ex = []

    def add(name, x, axes, xname="x", yname="y"):
        y = unsqueeze(x, axes)
        ex.append((name, block("Unsqueeze", {"axes": "[" + ", ".join(map(str, axes)) + "]"}, [(xname, x)], [(yname, y)])))

    add("test_unsqueeze_int32_two_axes", rng.integers(-50, 50, (2, 3), dtype=np.int32), [0, 3])
    add("test_unsqueeze_uint8_negative_axis", rng.integers(0, 256, (3, 4), dtype=np.uint8), [-1])
    add("test_unsqueeze_bool", rng.integers(0, 2, (2, 2)).astype(bool), [1], "data", "expanded")
    add("test_unsqueeze_float16_both_ends", rng.standard_normal(5).astype(np.float16), [0, -1])
    add("test_unsqueeze_int64_at_threshold", rng.integers(-9, 9, (2, 50), dtype=np.int64), [1])
    add("test_unsqueeze_float32_random", rng.standard_normal((3, 4)).astype(np.float32), [2, 0])
    add("test_unsqueeze_uint16_unsorted", rng.integers(0, 65536, (2, 2, 2), dtype=np.uint16), [4, 0])
    add("test_unsqueeze_float64_scalar", np.array(-1.25), [0])
    return ex


def main() -> None:
    rng = np.random.default_rng(RNG_SEED)
    (HERE / "Flatten-13.rst").write_text(rst_page("Flatten", 13, flatten_examples(rng)))
    (HERE / "Unsqueeze-11.txt").write_text(text_page("Unsqueeze", 11, unsqueeze_examples(rng)))


if __name__ == "__main__":
    main()

"""Reading ONNX operator pages: both formats, the printed values (full and
summarised), and every way a page can be malformed. No GPU here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnxop_cli.docs.pages import parse_page, read_page, seed_pages
from onnxop_cli.docs.values import (
    ValuesError,
    count_printed,
    first_difference,
    parse_printed,
    to_array,
    token_matches,
)
from onnxop_cli.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
PAGES = Path(__file__).resolve().parents[1] / "pages"
SEEDS = Path("/work/shared/seeds")

FLATTEN_NAMES = [
    "test_cc_flatten_axis0", "test_cc_flatten_axis1", "test_cc_flatten_axis2", "test_cc_flatten_axis3",
    "test_cc_flatten_default_axis", "test_cc_flatten_negative_axis1", "test_cc_flatten_negative_axis2",
    "test_cc_flatten_negative_axis3", "test_cc_flatten_negative_axis4",
]
UNSQUEEZE_NAMES = [
    "test_cc_unsqueeze_axes", "test_unsqueeze_axis_0", "test_unsqueeze_axis_1", "test_unsqueeze_axis_2",
    "test_unsqueeze_negative_axes", "test_unsqueeze_three_axes", "test_unsqueeze_two_axes",
    "test_unsqueeze_unsorted_axes",
]


def printed(a: np.ndarray, threshold: int = 100) -> str:
    return np.array2string(a, separator=", ", threshold=threshold, edgeitems=3)


# ------------------------------------------------------------------ seed pages


def test_seed_pages_are_shipped_unchanged():
    if not SEEDS.is_dir():
        pytest.skip("the seed folder is not on this machine")
    shipped = {p.name: p.read_bytes() for p in (REPO / "samples").glob("*-*.*") if p.suffix in (".txt", ".rst")}
    seeds = {p.read_bytes() for p in SEEDS.iterdir()}
    assert set(shipped) == {"Flatten-25.txt", "Unsqueeze-13.rst"}
    assert all(data in seeds for data in shipped.values())


def test_seed_pages_hold_the_17_examples():
    flatten, unsqueeze = seed_pages()
    assert (flatten.format, flatten.op_type, flatten.opset) == ("text", "Flatten", 25)
    assert (unsqueeze.format, unsqueeze.op_type, unsqueeze.opset) == ("rst", "Unsqueeze", 13)
    assert [e.name for e in flatten.examples] == FLATTEN_NAMES
    assert [e.name for e in unsqueeze.examples] == UNSQUEEZE_NAMES
    for ex in flatten.examples + unsqueeze.examples:
        assert not ex.problem, (ex.name, ex.problem)
        assert all(not t.problem and t.values is not None for t in ex.inputs + ex.outputs)


def test_flatten_example_fields():
    flatten, _ = seed_pages()
    ex = {e.name: e for e in flatten.examples}
    axis0 = ex["test_cc_flatten_axis0"]
    assert (axis0.op_type, axis0.input_names, axis0.output_names) == ("Flatten", ["a"], ["b"])
    assert axis0.attributes == {"axis": 0}
    assert ex["test_cc_flatten_negative_axis4"].attributes == {"axis": -4}
    assert ex["test_cc_flatten_default_axis"].attributes == {}  # no Attributes section at all
    a, b = axis0.inputs[0], axis0.outputs[0]
    assert (a.shape, a.dtype, a.values.summarised) == ((2, 3, 4, 5), "float32", False)
    assert (b.shape, b.dtype, b.values.summarised) == ((1, 120), "float32", True)
    # the page's input is -30, -29.5, ..., 29.5: read back exactly
    values = to_array(a.values, a.shape, np.dtype("float32"))
    assert values.tobytes() == (np.arange(120, dtype=np.float32) / 2 - 30).reshape(2, 3, 4, 5).tobytes()
    assert count_printed(b.values, b.shape) == 6


def test_unsqueeze_example_fields():
    _, unsqueeze = seed_pages()
    ex = unsqueeze.examples[0]
    assert (ex.op_type, ex.input_names, ex.output_names, ex.attributes) == (
        "Unsqueeze", ["data", "axes"], ["expanded"], {})
    axes = ex.inputs[1]
    assert (axes.shape, axes.dtype) == ((2,), "int64")
    assert to_array(axes.values, axes.shape, np.dtype("int64")).tolist() == [0, 2]
    unsorted = unsqueeze.examples[-1]
    assert to_array(unsorted.inputs[1].values, (3,), np.dtype("int64")).tolist() == [5, 4, 2]
    # the rst blocks are dedented and joined: Node block then Inputs/Outputs block
    assert ex.block.startswith("Node:\n  Unsqueeze(data, axes) -> (expanded)\n\nInputs:\n  data: shape=(2, 3)")


# ------------------------------------------------------------------ fixture pages


def test_fixture_pages_are_what_the_generator_writes(tmp_path):
    """tests/pages is generated from numpy alone (make_pages.py); regenerate
    into a temporary copy and compare, so the fixtures cannot drift."""
    script = (PAGES / "make_pages.py").read_text()
    (tmp_path / "make_pages.py").write_text(script)
    subprocess.run([sys.executable, tmp_path / "make_pages.py"], check=True)
    for name in ("Flatten-13.rst", "Unsqueeze-11.txt"):
        assert (tmp_path / name).read_text() == (PAGES / name).read_text(), name


def test_fixture_pages_parse_in_both_formats():
    flatten = read_page(PAGES / "Flatten-13.rst")
    unsqueeze = read_page(PAGES / "Unsqueeze-11.txt")
    assert (flatten.format, flatten.op_type, flatten.opset, len(flatten.examples)) == ("rst", "Flatten", 13, 13)
    assert (unsqueeze.format, unsqueeze.op_type, unsqueeze.opset, len(unsqueeze.examples)) == (
        "text", "Unsqueeze", 11, 8)
    dtypes = {t.dtype for p in (flatten, unsqueeze) for e in p.examples for t in e.inputs}
    assert {"int32", "int64", "bool", "float16", "uint8", "float64", "complex64", "uint16", "bfloat16"} <= dtypes
    ex = {e.name: e for e in unsqueeze.examples}
    assert ex["test_unsqueeze_int32_two_axes"].attributes == {"axes": [0, 3]}
    assert ex["test_unsqueeze_int32_two_axes"].input_names == ["x"]


# ------------------------------------------------------------------ page structure


def test_text_examples_end_at_the_differences_section():
    text = "Flatten#\nSince version: 9\nExamples#\nt1\nNode:\nFlatten(a) -> (b)\nInputs:\n" \
           "a: shape=(2,), dtype=int32\n[1, 2]\nOutputs:\nb: shape=(1, 2), dtype=int32\n[[1, 2]]\n" \
           "Differences with previous version (1)#\nt2\nNode:\nFlatten(a) -> (b)\n"
    page = parse_page(text, "p.txt")
    assert page.opset == 9 and [e.name for e in page.examples] == ["t1"]
    assert not page.examples[0].problem


def test_rst_bold_prose_is_not_an_example():
    text = "Op\n==\n\n- **Since version**: 7\n\n**Inputs**\n\n- x\n\nExamples\n--------\n\n**t1**\n\n" \
           ".. code-block:: text\n\n    Node:\n      Flatten(a) -> (b)\n\nOther\n-----\n\n**t2**\n\n" \
           ".. code-block:: text\n\n    Node:\n      Flatten(a) -> (b)\n"
    page = parse_page(text, "p.rst")
    assert (page.format, page.opset, page.op_type) == ("rst", 7, "Op")
    assert [e.name for e in page.examples] == ["t1"]  # the next section ends the examples
    assert "do not match" in page.examples[0].problem  # no Inputs shown for input a


def test_rst_opset_prefers_the_documented_version_over_the_latest():
    _, unsqueeze = seed_pages()
    # the page also says "(since version 25)" about the latest version
    assert unsqueeze.opset == 13


@pytest.mark.parametrize("body,problem", [
    ("Node:\nFlatten a -> b", "cannot read the node line"),
    ("Node:\nFlatten(a) -> (b)\nAttributes:\naxis: 1", "cannot read the attribute line"),
    ("Node:\nFlatten(a) -> (b)\nAttributes:\naxis = 1.5", "is not an integer"),
    ("Node:\nFlatten(a) -> (b)\nInputs:\n[1, 2]", "expected 'name: shape=(...), dtype=...'"),
    ("Node:\nFlatten(a) -> (b)\nInputs:\na: shape=(2,), dtype=int32\n[1, 2]\nOutputs:\nc: shape=(2,), dtype=int32\n[1, 2]",
     "outputs ['b'] do not match the outputs shown ['c']"),
    ("Node:\nFlatten(a) -> (b)\nInputs:\na: shape=(x,), dtype=int32\n[1]", "cannot read the shape"),
])
def test_malformed_examples_carry_the_reason(body, problem):
    page = parse_page(f"Flatten#\nSince version: 13\nExamples#\ntest_bad\n{body}\n", "bad.txt")
    (ex,) = page.examples
    assert problem in ex.problem


def test_unreadable_values_are_a_tensor_problem():
    page = parse_page("Flatten#\nSince version: 13\nExamples#\nt\nNode:\nFlatten(a) -> (b)\nInputs:\n"
                      "a: shape=(2,), dtype=int32\n[1, 2\nOutputs:\nb: shape=(1, 2), dtype=int32\n", "p.txt")
    a, b = page.examples[0].inputs[0], page.examples[0].outputs[0]
    assert "missing ']'" in a.problem and b.problem == "no values are printed"


def test_page_without_opset_or_examples():
    page = parse_page("Some text\nwithout anything\n", "x.txt")
    assert page.opset is None and page.examples == []


@pytest.mark.parametrize("make,message", [
    (lambda d: d / "missing.txt", "cannot read the page: No such file or directory"),
    (lambda d: d, "cannot read the page: Is a directory"),
    (lambda d: (d / "bin.txt", (d / "bin.txt").write_bytes(b"\xff\xfe\x00x"))[0], "not a text page (invalid UTF-8 at byte 0)"),
])
def test_unreadable_page_files_are_usage_errors(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(UsageError) as e:
        read_page(path)
    assert message in e.value.message and "\n" not in e.value.message


# ------------------------------------------------------------------ values


READABLE = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "complex64", "complex128"]


def random_values(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    span = 3 if dtype == np.float16 else 6  # float16 tops out at 65504
    scale = 10.0 ** rng.integers(-span, span, shape)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) * scale + 1j * rng.standard_normal(shape)).astype(dtype)
    a = (rng.standard_normal(shape) * scale).astype(dtype)
    if a.size >= 4:
        a.flat[:4] = [np.inf, -np.inf, -0.0, np.nan]
    return a


@pytest.mark.parametrize("dtype", READABLE)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3), (3, 1, 4), (2, 2, 2, 3)])
def test_printed_values_read_back(dtype, shape, rng):
    """What numpy prints reads back to the same values (floats: to what the
    8 printed digits say), and one changed value is found where it is."""
    a = np.asarray(random_values(rng, shape, dtype))
    p = parse_printed(printed(a))
    assert not p.summarised
    assert first_difference(p, a) is None
    back = to_array(p, a.shape, a.dtype)
    if a.dtype.kind in "biu" or a.dtype == np.float16:  # printed exactly: read back exactly
        assert np.array_equal(back, a, equal_nan=a.dtype.kind == "f")
        if a.dtype.kind == "f":
            assert np.array_equal(np.signbit(back), np.signbit(a))  # -0.0 stays -0.0
    if a.size:
        b = a.copy()
        where = tuple(int(rng.integers(0, d)) for d in shape)
        b[where] = a[where] + 1 if a.dtype.kind != "b" else not a[where]
        if not (a.dtype.kind in "fc" and not np.isfinite(a[where])):
            assert first_difference(p, b)[0] == where


def test_summarised_values_compare_at_the_printed_edges():
    a = np.arange(24 * 5, dtype=np.int32).reshape(24, 5)
    p = parse_printed(printed(a))
    assert p.summarised and count_printed(p, a.shape) == 30
    assert first_difference(p, a) is None
    hidden = a.copy()
    hidden[10, 2] = -1  # not printed: only the reference check can see it
    assert first_difference(p, hidden) is None
    shown = a.copy()
    shown[22, 4] = -1
    assert first_difference(p, shown) == ((22, 4), "114", -1)
    with pytest.raises(ValuesError, match="summarised"):
        to_array(p, a.shape, a.dtype)


def test_summarised_values_must_fit_the_shape():
    p = parse_printed(printed(np.arange(120, dtype=np.float32).reshape(1, 120)))
    with pytest.raises(ValuesError, match="axis 0 has length 2 but 1 entries"):
        first_difference(p, np.zeros((2, 60), np.float32))
    with pytest.raises(ValuesError, match="axis 1 has length 6 but 6 entries and '...'"):
        first_difference(p, np.zeros((1, 6), np.float32))


def test_flattened_web_text_reads_like_numpy_text():
    a = (np.arange(40, dtype=np.float32) / 2 - 10).reshape(2, 4, 5)
    text = printed(a)
    flat = "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())
    assert parse_printed(flat) == parse_printed(text)


def test_complex_tokens_with_inner_padding():
    a = np.array([1 + 2j, 10 + 20.5j, -0.5 - 1j, complex(np.nan, np.inf)], dtype=np.complex64)
    text = printed(a)
    assert "10. +20.5j" in text  # numpy pads inside the token
    assert first_difference(parse_printed(text), a) is None


def test_empty_and_scalar_values():
    assert to_array(parse_printed("[]"), (0, 3), np.dtype("int16")).shape == (0, 3)
    assert to_array(parse_printed("3.5"), (), np.dtype("float32")) == np.float32(3.5)
    with pytest.raises(ValuesError, match="no values but some"):
        to_array(parse_printed("[1]"), (0,), np.dtype("int8"))


@pytest.mark.parametrize("text,message", [
    ("", "no values printed"),
    ("[1, 2", "missing ']'"),
    ("[1, 2]]", "unexpected ']' after"),
    ("[1 2, 3]", None),  # "1 2" is one token, refused as a value (not read as 12)
    ("[..., ...]", None),
    ("...", "only '...'"),
    ("[1,, 2]", "unexpected ','"),
])
def test_malformed_values(text, message):
    if message is None:
        p = parse_printed(text)
        with pytest.raises(ValuesError):
            to_array(p, (2,) if "..." not in text else (9,), np.dtype("int32"))
        return
    with pytest.raises(ValuesError, match=message):
        parse_printed(text)


@pytest.mark.parametrize("token,value,dtype,ok", [
    ("0.33333333", 1 / 3, "float64", True),  # numpy rounded to 8 digits
    ("0.33333334", 1 / 3, "float64", False),  # more than half a digit away
    ("3.33333333e-01", 1 / 3, "float64", True),
    ("0.5", 0.5, "float32", True),
    ("0.5", 0.54, "float64", False),
    ("1.1", 1.100000001, "float64", True),  # rounded at 8 digits, trailing zeros dropped
    ("1.1", 1.10000001, "float64", False),
    ("-1.1", 1.1, "float64", False),
    ("1.5e-05", 1.5000000001e-05, "float64", True),
    ("1.5e-05", 1.50000001e-05, "float64", False),
    ("1.0000001", np.float32(1.0000001), "float32", True),
    ("1.", np.nextafter(np.float32(1), np.float32(2)), "float32", False),
    ("-0.", -0.0, "float32", True),
    ("-0.", 0.0, "float32", False),
    ("0.", -0.0, "float32", False),
    ("nan", np.nan, "float16", True),
    ("nan", np.inf, "float16", False),
    ("-inf", -np.inf, "float32", True),
    ("0.1", np.float32(0.1), "float32", True),
    ("True", True, "bool", True),
    ("1", True, "bool", False),
    ("255", 255, "uint8", True),
    ("256", 255, "uint8", False),
    ("-9223372036854775808", np.iinfo(np.int64).min, "int64", True),
    ("1.+2.j", 1 + 2j, "complex64", True),
    ("1.+2.j", 1 - 2j, "complex64", False),
    ("1.", 1, "int32", False),
])
def test_token_matches(token, value, dtype, ok):
    dtype = np.dtype(dtype)
    assert token_matches(token, dtype.type(value), dtype) is ok


def test_hostile_values_are_refused_without_allocating():
    with pytest.raises(ValuesError, match="nested more than 64 deep"):
        parse_printed("[" * 100 + "1" + "]" * 100)
    huge = parse_printed("[1, 2]")
    with pytest.raises(ValuesError, match="axis 0 has length 1000000000000 but 2 entries"):
        to_array(huge, (10**12,), np.dtype("int8"))  # checked before any array is made
    with pytest.raises(ValuesError, match="negative dimension"):
        to_array(huge, (-2,), np.dtype("int8"))
    with pytest.raises(ValuesError, match="out of range for uint8"):
        to_array(parse_printed("[1, 256]"), (2,), np.dtype("uint8"))
    assert np.isinf(to_array(parse_printed("[1e10]"), (1,), np.dtype("float16"))[0])

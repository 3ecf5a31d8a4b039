"""The indexed operators end to end: API functions against onnx.reference on
random bits, every opset's rule (negative indices from 11, reductions from
16 and 18, bfloat16 from 13), strings on the host, and the CLI's refusals
(exit 2, one line, nothing written, an existing output left as it was).

The kernels themselves (widths, bands, layouts, every backend) are tested in
test_indexed_kernels.py; these run on one backend.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import onnxop_cli as api
from conftest import cli, error_of, random_array
from onnxop_cli.errors import OpError, UsageError

BACKEND = "vulkan"


def reference(op: str, opset: int, inputs: list, **attrs):
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ------------------------------------------------------------------ API against the reference


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.bool_, np.complex64])
def test_gather_api_of_every_dtype(rng, dtype):
    x = random_array(rng, (4, 5, 3), dtype)
    i = rng.integers(-4, 4, (2, 3)).astype(np.int32)
    assert same(api.gather(x, i, axis=0, backend=BACKEND), reference("Gather", 13, [x, i], axis=0))
    e = rng.integers(-5, 5, (4, 2, 3)).astype(np.int64)
    assert same(api.gather_elements(x, e, axis=1, backend=BACKEND), reference("GatherElements", 13, [x, e], axis=1))
    nd = np.stack([rng.integers(0, 4, (4,)), rng.integers(-5, 5, (4,))], axis=-1).astype(np.int64)
    assert same(api.gather_nd(x, nd, backend=BACKEND), reference("GatherND", 13, [x, nd]))
    lens = rng.integers(0, 5, (4,)).astype(np.int64)
    got = api.reverse_sequence(x, lens, batch_axis=0, time_axis=1, backend=BACKEND)
    assert same(got, reference("ReverseSequence", 10, [x, lens], batch_axis=0, time_axis=1))


def test_fortran_and_big_endian_inputs(rng):
    x = np.asfortranarray(random_array(rng, (5, 6), ">f4"))
    i = np.asfortranarray(rng.integers(-5, 5, (3, 2)).astype(">i8"))
    want = reference("Gather", 13, [x.astype("<f4"), i.astype("<i8")], axis=0)
    assert same(api.gather(x, i, axis=0, backend=BACKEND).astype("<f4"), want)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16, np.int64])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_api(rng, reduction, dtype):
    x = random_array(rng, (5, 4), dtype)
    if reduction == "none":
        i = np.array([[3, 0, 1, 4], [1, 2, 0, 0]], np.int64)
    else:
        i = rng.integers(-5, 5, (6, 4)).astype(np.int64)
    u = random_array(rng, i.shape, dtype)
    got = api.scatter_elements(x, i, u, axis=0, reduction=reduction, backend=BACKEND)
    assert same(got, reference("ScatterElements", 18, [x, i, u], axis=0, reduction=reduction))
    nd = rng.integers(-5, 5, (7, 1)).astype(np.int64) if reduction != "none" else np.array([[2], [-1]], np.int64)
    un = random_array(rng, (len(nd), 4), dtype)
    got = api.scatter_nd(x, nd, un, reduction=reduction, backend=BACKEND)
    assert same(got, reference("ScatterND", 18, [x, nd, un], reduction=reduction))


def test_scatter_alias_and_tensor_scatter(rng):
    x = random_array(rng, (4, 3), np.int16)
    i = np.array([[1, 0, 3]], np.int64)
    u = random_array(rng, (1, 3), np.int16)
    # onnx.reference has no Scatter: it is ScatterElements under its old name
    assert same(api.scatter(x, i, u, axis=0, opset=9, backend=BACKEND),
                reference("ScatterElements", 11, [x, i, u], axis=0))
    cache = random_array(rng, (2, 5, 3), np.float32)
    upd = random_array(rng, (2, 2, 3), np.float32)
    w = np.array([4, 1], np.int64)
    for mode in ("linear", "circular"):
        if mode == "linear":
            w = np.array([3, 1], np.int64)
        got = api.tensor_scatter(cache, upd, w, axis=1, mode=mode, backend=BACKEND)
        assert same(got, reference("TensorScatter", 24, [cache, upd, w], axis=1, mode=mode))
    got = api.tensor_scatter(cache, upd, axis=-2, backend=BACKEND)  # write_indices left out: 0
    assert same(got, reference("TensorScatter", 24, [cache, upd], axis=-2))


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, object])
def test_a_circular_write_index_wraps_with_all_64_bits(rng, dtype):
    """TensorScatter circular: 'the write index is modulo max_sequence_length' (ONNX's pseudocode, Python's %),
    and onnx.reference wraps every int64 (onnxruntime too, but for negatives, which it refuses). onnxop refused
    3 on a cache of 2 (fuzz_graphs --draw wide, seed 60104), then every index from 2**32 - cache length and every
    negative one ('write_indices[1] = -1 is out of range [0, 4294967291] for a circular cache of 4'): the kernel
    added in 32 bits. The index check now writes each index mod the cache length, from all 64 bits."""
    edges = [5, 4 * 1000003 + 3, (1 << 32) - 1 - 4, (1 << 32) - 2, -1, (1 << 40) + 1, -(1 << 62) - 3, -(1 << 63)]
    w = np.concatenate([np.array(edges, np.int64), rng.integers(-(1 << 63), (1 << 63) - 8, 24, np.int64)])
    b = len(w)
    cache = random_array(rng, (b, 7, 2), dtype) if dtype is not object else \
        np.array([f"c{k}" for k in range(b * 14)], dtype=object).reshape(b, 7, 2)
    upd = random_array(rng, (b, 3, 2), dtype) if dtype is not object else \
        np.array([f"u{k}" for k in range(b * 6)], dtype=object).reshape(b, 3, 2)
    got = api.tensor_scatter(cache, upd, w, axis=1, mode="circular", backend=BACKEND)
    want = reference("TensorScatter", 24, [cache, upd, w], axis=1, mode="circular")
    assert (same(got, want) if dtype is not object else got.tolist() == want.tolist())


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_a_string_cache_without_write_indices_takes_0_for_every_batch_entry(mode):
    """Strings run on the host; with write_indices left out their index numbers held one 0, which batch entry 1
    read past: 'IndexError: index 1 is out of bounds for axis 0 with size 1', a traceback (fuzz_graphs --draw
    wide, seed 71522)."""
    cache = np.array([f"c{k}" for k in range(24)], dtype=object).reshape(3, 4, 2)
    upd = np.array([f"u{k}" for k in range(12)], dtype=object).reshape(3, 2, 2)
    got = api.tensor_scatter(cache, upd, axis=1, mode=mode, backend=BACKEND)
    assert got.tolist() == reference("TensorScatter", 24, [cache, upd], axis=1, mode=mode).tolist()


def test_packed_types_in_tensor_scatter(rng):
    cache = rng.integers(-8, 8, (2, 5, 3)).astype(ml_dtypes.int4)
    upd = rng.integers(-8, 8, (2, 2, 3)).astype(ml_dtypes.int4)
    w = np.array([0, 3], np.int64)
    got = api.tensor_scatter(cache, upd, w, axis=1, backend=BACKEND)
    want = cache.copy()
    want[0, 0:2], want[1, 3:5] = upd[0], upd[1]
    assert same(got, want)


def test_strings_run_on_the_host_with_the_same_checks(rng):
    s = np.array([["a", "bb"], ["ccc", "d"], ["e", "f"]], dtype=object)
    got = api.gather(s, np.array([2, -3]), axis=0, backend=BACKEND)
    assert got.tolist() == [["e", "f"], ["a", "bb"]]
    with pytest.raises(OpError, match=r"Gather: indices\[1\] = 3 is out of range \[-3, 2\] for axis 0 of size 3"):
        api.gather(s, np.array([0, 3]), axis=0, backend=BACKEND)
    got = api.scatter_nd(s, np.array([[1]]), np.array([["x", "y"]], dtype=object), backend=BACKEND)
    assert got.tolist() == [["a", "bb"], ["x", "y"], ["e", "f"]]
    with pytest.raises(OpError, match="two updates write one element"):
        api.scatter_nd(s, np.array([[1], [-2]]), np.array([["x", "y"], ["z", "w"]], dtype=object), backend=BACKEND)


def test_indices_of_an_empty_output_are_checked_all_the_same():
    """No element is read or written, but an index out of range is refused, as onnxruntime and
    onnx.reference refuse it: the output was made empty, its indices never checked, by the API,
    the commands and the graph executor (onnx's backend) alike."""
    import onnxop_cli.backend

    e30, e0 = np.zeros((3, 0), np.int32), np.zeros((0,), np.int32)
    calls = [
        (lambda: api.gather(e30, np.array([9]), backend=BACKEND), "Gather: indices[0] = 9 is out of range [-3, 2] "
         "for axis 0 of size 3"),
        (lambda: api.scatter_elements(e0, np.array([7]), np.array([1], np.int32), backend=BACKEND),
         "ScatterElements: indices[0] = 7 is out of range [0, -1] for axis 0 of size 0"),
        (lambda: api.scatter(e0, np.array([7]), np.array([1], np.int32), opset=9, backend=BACKEND),
         "Scatter: indices[0] = 7 is out of range [0, -1] for axis 0 of size 0"),
        (lambda: api.scatter_nd(np.zeros((2, 0, 1), np.int32), np.array([[1, 9, 0]]), np.array([1], np.int32),
                                backend=BACKEND), "ScatterND: indices[0, 1] = 9 is out of range [0, -1]"),
        (lambda: onnxop_cli.backend.run_node(helper.make_node("Gather", ["x", "i"], ["y"]), [e30, np.array([9])],
                                             backend=BACKEND), "Gather: indices[0] = 9 is out of range [-3, 2]"),
    ]
    for call, message in calls:
        with pytest.raises(OpError) as e:
            call()
        assert message in str(e.value), str(e.value)
    assert api.gather(e30, np.array([-3, 2]), backend=BACKEND).shape == (2, 0)  # in range: the empty output


# ------------------------------------------------------------------ each opset's rule


def test_negative_indices_need_opset_11(rng):
    x = random_array(rng, (3, 2), np.float32)
    with pytest.raises(OpError, match=r"Gather: indices\[0\] = -1 is out of range \[0, 2\]"):
        api.gather(x, np.array([-1]), axis=0, opset=10, backend=BACKEND)
    assert same(api.gather(x, np.array([-1]), axis=0, opset=11, backend=BACKEND), x[[-1]])
    with pytest.raises(OpError, match=r"Scatter: indices\[0, 0\] = -3 is out of range \[0, 2\]"):
        api.scatter(x, np.array([[-3, 0]]), x[:1], opset=9, backend=BACKEND)


def test_reductions_by_opset_and_type(rng):
    x = random_array(rng, (3, 2), np.float32)
    i, u = np.array([[0, 1]]), x[:1]
    with pytest.raises(OpError, match="ScatterElements-16: reduction 'max' is not one of none, add, mul; max and "
                                      "min need opset 18"):
        api.scatter_elements(x, i, u, reduction="max", opset=16, backend=BACKEND)
    with pytest.raises(UsageError, match="ScatterND-13 .opset 13. has no reduction"):
        api.scatter_nd(x, np.array([[0]]), u, reduction="add", opset=13, backend=BACKEND)
    d = random_array(rng, (3, 2), np.float64)
    with pytest.raises(OpError, match="ScatterND: reduction add on float64 is not run on the device .it runs on bfloat16, bool, float16, float32"):
        api.scatter_nd(d, np.array([[0]]), d[:1], reduction="add", backend=BACKEND)
    got = api.scatter_nd(d, np.array([[0], [0]]), d[:2], reduction="max", backend=BACKEND)
    assert same(got, reference("ScatterND", 18, [d, np.array([[0], [0]]), d[:2]], reduction="max"))


def test_bfloat16_needs_opset_13(rng):
    x = random_array(rng, (3, 2), ml_dtypes.bfloat16)
    with pytest.raises(OpError, match="Gather: opset 11 .Gather-11. does not allow bfloat16"):
        api.gather(x, np.array([0]), opset=11, backend=BACKEND)


@pytest.mark.parametrize("call,message", [
    (lambda x: api.gather(x, np.array([0]), axis=2), "Gather: axis 2 is out of range [-2, 1]"),
    (lambda x: api.gather(x, np.array([0.5])), "does not allow float64 for input indices (it takes int32, int64)"),
    (lambda x: api.gather_elements(x, np.zeros((2,), np.int64)), "GatherElements: indices have rank 1, the data 2"),
    (lambda x: api.gather_nd(x, np.zeros((2, 3), np.int64)), "GatherND: indices' last dimension is 3"),
    (lambda x: api.gather_nd(x, np.zeros((4, 1), np.int64), batch_dims=1), "first 1 dimensions of data"),
    (lambda x: api.scatter_nd(x, np.zeros((1, 1), np.int64), x), "ScatterND: updates have shape [3, 2], not [1, 2]"),
    (lambda x: api.reverse_sequence(x, np.array([1, 1, 1])), "ReverseSequence: sequence_lens has shape [3], not [2]"),
    (lambda x: api.tensor_scatter(x, x, axis=0), "TensorScatter: axis 0 is the batch axis"),
])
def test_shape_rules_refuse_with_one_line(rng, call, message):
    x = random_array(rng, (3, 2), np.float32)
    with pytest.raises(OpError) as e:
        call(x)
    assert message in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------ the command line


def test_cli_gather_writes_and_bad_index_writes_nothing(capsys, cwd, rng):
    x = random_array(rng, (4, 3), np.float32)
    np.save("x.npy", x)
    np.save("i.npy", np.array([[3, -4], [2**32 + 1, 0]], np.int64))
    np.save("ok.npy", np.array([3, -4], np.int32))
    code, out, err = cli(capsys, "gather", "x.npy", "--indices", "ok.npy", "--axis", "0", "-o", "y.npy", "-b", BACKEND)
    assert code == 0, err
    assert same(np.load("y.npy"), x[[3, -4]])
    before = (cwd / "y.npy").read_bytes()
    code, out, err = cli(capsys, "gather", "x.npy", "--indices", "i.npy", "-o", "y.npy", "-b", BACKEND)
    assert code == 2
    assert error_of(err) == "x.npy: Gather: indices[1, 0] = 4294967297 is out of range [-4, 3] for axis 0 of size 4" \
        or error_of(err) == "Gather: indices[1, 0] = 4294967297 is out of range [-4, 3] for axis 0 of size 4"
    assert (cwd / "y.npy").read_bytes() == before
    code, out, err = cli(capsys, "gather", "x.npy", "--indices", "i.npy", "-o", "new.npy", "-b", BACKEND)
    assert code == 2 and not (cwd / "new.npy").exists()
    assert sorted(p.name for p in cwd.iterdir()) == ["i.npy", "ok.npy", "x.npy", "y.npy"]


def test_cli_scatter_duplicates_exit_2_and_reduction_runs(capsys, cwd, rng):
    x = random_array(rng, (4, 3), np.float32)
    u = random_array(rng, (2, 3), np.float32)
    np.save("x.npy", x)
    np.save("u.npy", u)
    np.save("i.npy", np.array([[1], [-3]], np.int64))
    code, out, err = cli(capsys, "scatter-nd", "x.npy", "--indices", "i.npy", "--updates", "u.npy", "-o", "o.npy",
                         "-b", BACKEND)
    assert code == 2 and "two updates write one element with reduction none" in error_of(err)
    assert not (cwd / "o.npy").exists()
    code, out, err = cli(capsys, "scatter-nd", "x.npy", "--indices", "i.npy", "--updates", "u.npy", "--reduction",
                         "mul", "-o", "o.npy", "-b", BACKEND)
    assert code == 0, err
    want = reference("ScatterND", 18, [x, np.array([[1], [-3]]), u], reduction="mul")
    assert same(np.load("o.npy"), want)


def test_cli_batch_refused_up_front_when_indices_do_not_fit_one_job(capsys, cwd, rng):
    np.save("a.npy", random_array(rng, (5, 2), np.float32))
    np.save("b.npy", random_array(rng, (2, 2), np.float32))
    np.save("i.npy", np.array([4], np.int64))
    (cwd / "out").mkdir()
    code, out, err = cli(capsys, "gather", "a.npy", "b.npy", "--indices", "i.npy", "-o", "out/", "-b", BACKEND)
    assert code == 2
    assert error_of(err) == "b.npy: Gather: indices[0] = 4 is out of range [-2, 1] for axis 0 of size 2"
    assert not (cwd / "out" / "a.npy").exists()  # a.npy's job fits, but the batch is refused before it runs


def test_cli_json_names_the_kernel(capsys, cwd, rng):
    import json

    np.save("x.npy", random_array(rng, (3, 2), np.float32))
    code, out, err = cli(capsys, "gather-nd", "x.npy", "--indices", "1,0", "--json", "-b", BACKEND)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["op"] == "GatherND" and doc["runs"][0]["outputs"][0]["kernel"] == "indexed-gather"

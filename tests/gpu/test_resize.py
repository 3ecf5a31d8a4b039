"""Resize (mode nearest) byte for byte against onnx.reference, on every adapter.

onnx.reference computes nearest as x*1 + y*0 in float64 (op_resize.py), so
its values lose -0.0, turn a neighbour's inf into NaN and round int64
beyond 2^53: compared as values, only on data where that arithmetic is exact.
The bytes are compared against the reference's *index map*: the reference run
on X = arange(N) (float64, exact) says which input element each output
element is, and the expected output is the random bits (NaN payloads, -0.0,
every type) taken there. Random shapes x every coordinate mode x every
nearest mode, from the test's replayable seed (tests/conftest.py).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import onnxop_cli as api
from commands import run_commands
from conftest import random_array
from onnxop_cli.core.shown import shown_positions
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.summary import summarised_tensor_op
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.errors import OpError, OutOfScope
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu.index_table import NONNEG, Check, Table
from onnxop_cli.ops import Node, op_version
from onnxop_cli.ops.indexed_plan import separable_index
from tensor_refs import ort, reference, same
from test_indexed_kernels import pack

COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
               "half_pixel_symmetric")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
DTYPES = ("<f4", "<f2", "<f8", ml_dtypes.bfloat16, "u1", "<i2", "<i8", "<c8", "?")


def draw(rng, coordinates: str, nearest: str, dtype="<f4") -> tuple[tuple[int, ...], dict, int]:
    """A random shape, the node's inputs and attributes, and an opset that has them (and the type)."""
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 6, size=rank))
    opset = 19 if coordinates == "half_pixel_symmetric" else int(rng.choice([11, 13, 18, 19]))
    if dtype == ml_dtypes.bfloat16:
        opset = max(opset, 13)
    axes = list(range(rank))
    attrs = {"coordinate_transformation_mode": coordinates, "nearest_mode": nearest}
    if opset >= 18 and rng.random() < 0.5:
        axes = [int(a) for a in rng.permutation(rank)[: int(rng.integers(1, rank + 1))]]
        attrs["axes"] = axes
    n = len(axes)
    inputs: dict = {}
    if rng.random() < 0.5:
        inputs["scales"] = rng.choice([0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0], size=n).astype(np.float32)
    else:
        inputs["sizes"] = np.array([int(rng.integers(1, 9)) for _ in axes], np.int64)
        if opset >= 18 and rng.random() < 0.4:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(["stretch", "not_larger", "not_smaller"]))
    if coordinates == "tf_crop_and_resize":  # an roi inside [0, 1]: every pick inside the input
        starts, ends = rng.uniform(0, 0.5, n), rng.uniform(0.5, 1, n)
        inputs["roi"] = np.concatenate([starts, ends]).astype(np.float32)
    elif rng.random() < 0.2:
        inputs["roi"] = np.array([0.0] * n + [1.0] * n, np.float32)  # given and ignored
    if opset == 11:  # roi and scales are required inputs there, empty where not used
        inputs = {"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32), **inputs}
    return shape, {"inputs": inputs, "attrs": attrs}, opset


def reference_map(shape, node: dict, opset: int) -> np.ndarray:
    """The flat input element each output element is, by onnx.reference
    (opsets before 18 read as 18: its Resize needs keep_aspect_ratio_policy)."""
    ins = node["inputs"]
    index = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    out = reference("Resize", max(opset, 18), [index, ins.get("roi"), ins.get("scales"), ins.get("sizes")],
                    {"mode": "nearest", **node["attrs"]})[0]
    return out.astype(np.int64)


@pytest.mark.parametrize("coordinates", COORDINATES)
def test_every_mode_picks_the_references_elements_bit_for_bit(backend, rng, coordinates):
    for k, nearest in enumerate(NEAREST * 2):
        dtype = DTYPES[(k + COORDINATES.index(coordinates)) % len(DTYPES)]
        shape, node, opset = draw(rng, coordinates, nearest, dtype)
        x = random_array(rng, shape, dtype)
        picks = reference_map(shape, node, opset)
        try:
            got = api.resize(x, **node["inputs"], **node["attrs"], opset=opset, backend=backend)
        except OutOfScope:  # tf_crop_and_resize whose float end lands a hair past the input: a fill
            assert coordinates == "tf_crop_and_resize"
            continue
        want = x.reshape(-1)[picks]
        assert same(got, want), (shape, node, opset, np.dtype(dtype).name)


def test_the_references_values_where_its_arithmetic_is_exact(backend, rng):
    """The whole reference, not only its map: finite floats without -0.0, small integers."""
    for k in range(8):
        shape, node, opset = draw(rng, COORDINATES[k % 6], NEAREST[k % 4])
        for x in (rng.standard_normal(shape).astype(np.float32), rng.integers(-1000, 1000, shape).astype(np.int32)):
            ins = node["inputs"]
            try:
                got = api.resize(x, **ins, **node["attrs"], opset=opset, backend=backend)
            except OutOfScope:
                continue
            want = reference("Resize", max(opset, 18), [x, ins.get("roi"), ins.get("scales"), ins.get("sizes")],
                             {"mode": "nearest", **node["attrs"]})[0]
            assert same(got, want), (shape, node, opset)


def test_strings_and_fortran_inputs_take_the_same_picks(backend, rng):
    shape, node, opset = draw(rng, "asymmetric", "round_prefer_ceil")
    picks = reference_map(shape, node, opset)
    words = np.array([f"w{i}" for i in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    got = api.resize(words, **node["inputs"], **node["attrs"], opset=opset, backend=backend)
    assert got.reshape(-1).tolist() == words.reshape(-1)[picks.reshape(-1)].tolist()
    x = np.asfortranarray(random_array(rng, (3, 4, 5), "<f4"))
    node = {"inputs": {"scales": np.array([1.5, 0.6, 2.0], np.float32)}, "attrs": {}}
    assert same(api.resize(x, **node["inputs"], backend=backend), x.reshape(-1)[reference_map(x.shape, node, 19)])


def test_resize_10_is_onnxruntimes(backend, rng):
    """Resize-10 (asymmetric, floor; ceil where the axis shrinks): onnx.reference cannot run it."""
    for _ in range(6):
        x = rng.standard_normal(tuple(rng.integers(1, 7, size=3))).astype(np.float32)
        scales = rng.choice([0.3, 0.6, 0.75, 1.0, 1.5, 2.5], size=3).astype(np.float32)
        assert same(api.resize(x, scales=scales, opset=10, backend=backend),
                    ort("Resize", 10, [x, scales], {"mode": "nearest"})[0])


@pytest.mark.parametrize("dtype,bits", [("u1", 8), ("<i2", 16), ("<f4", 32), ("<c16", 128), ("u1", 4), ("u1", 2)])
def test_a_separable_table_reads_each_axis_vector_at_its_coordinate(gpu, rng, dtype, bits):
    """The gather kernel's separable case (core/region.py Lookup.axis, Resize's tables) on its own: random
    vectors over random axes (the last or not), every element width, int32 and int64 vectors, against
    numpy's np.ix_ pick (in one band, and in forced bands, windows of the source and a folded grid), the
    output poisoned first."""
    for k in range(4):
        shape = tuple(int(d) for d in rng.integers(1, 7, size=int(rng.integers(2, 5))))
        axes = sorted(int(a) for a in rng.choice(len(shape), size=int(rng.integers(1, len(shape) + 1)), replace=False))
        out = list(shape)
        vectors = {}
        for a in axes:
            out[a] = int(rng.integers(1, 12))
            vectors[a] = rng.integers(0, shape[a], out[a])
        codes = rng.integers(0, 1 << bits, shape, dtype=np.uint8) if bits < 8 else random_array(rng, shape, dtype)
        want = codes[np.ix_(*[vectors.get(a, np.arange(d)) for a, d in enumerate(shape)])]
        strides = [int(np.prod(shape[a + 1:])) for a in range(len(shape))]
        bounds = tuple(shape[a] for a in axes)
        made = separable_index([vectors[a] for a in axes], bounds).astype(("<i4", "<i8")[k % 2])
        width = made.shape[1]
        table = Table.over(out, [0 if a in vectors else s for a, s in enumerate(strides)], (0,) * len(out),
                           [(strides[a], t * width, a) for t, a in enumerate(axes)])
        check = Check(bounds, "Resize", "the made indices", NONNEG, inner=width)
        data = ix.Data(MemoryBytes(pack(codes, bits) if bits < 8 else codes), shape, bits)
        index = ix.Index(MemoryBytes(made), made.shape, made.itemsize == 8)
        for kw in ({}, {"binding_bytes": 16, "window_bytes": 16, "max_groups_per_dim": 2}):
            got = bytearray()
            ix.gather_indexed(gpu, data, index, check, table, got.extend, poison=0xA5, **kw)
            assert bytes(got) == (pack(want, bits).tobytes() if bits < 8 else want.tobytes()), (shape, axes, kw)


def test_a_printed_page_is_the_whole_outputs_entries_there(backend, rng):
    """A printed output is made as its page alone (core/shown_values.py): a separable table cut to the shown
    entries of every long axis (ops/indexed_plan.py ``_cut_made``), each a vector of those entries only. The
    page against the whole output's entries there, over random axes, modes, scales or sizes and types."""
    for k in range(12):
        coordinates, dtype = COORDINATES[k % 6], DTYPES[k % len(DTYPES)]
        shape, node, opset = draw(rng, coordinates, NEAREST[k % 4], dtype)
        x = random_array(rng, shape, dtype)
        ins = node["inputs"]
        try:
            whole = api.resize(x, **ins, **node["attrs"], opset=opset, backend=backend)
        except OutOfScope:
            continue
        op = op_version("Resize", opset)
        tensors = [Tensor.from_numpy(x, "X")] + [None if ins.get(n) is None else Tensor.from_numpy(ins[n], n)
                                                 for n in op.inputs[1:]]
        while tensors[-1] is None:
            tensors.pop()
        lazy = summarised_tensor_op(Node(op, node["attrs"], opset=opset), tensors, edge=1, threshold=0,
                                    backend=backend)
        ((page, _),) = lazy.shown  # an empty output is shown whole
        want = whole[np.ix_(*[shown_positions(d, 1) for d in whole.shape])] if whole.size else whole
        assert same(page, want), (shape, node, opset)


@pytest.mark.parametrize("x", [np.zeros((0, 2), np.float32), np.zeros((0, 2), ml_dtypes.bfloat16),
                               np.array([["a", "b"]], dtype=object)[:0]])
@pytest.mark.parametrize("how", [{"sizes": np.array([0, 1 << 40])}, {"scales": np.array([1.0, 2.0 ** 39], np.float32)},
                                 {"sizes": np.array([1 << 40]), "axes": [1]}])
def test_an_empty_output_with_a_huge_axis_makes_no_table(backend, x, how):
    """(0, 2) to (0, 2**40) is an empty output: no element is picked, so no index table is made. The
    table of the 2**40-long axis was made all the same (its source coordinates in float64) and the run
    ended 'out of memory: Unable to allocate 8.00 TiB' (exit 1); Upsample, which plans as Resize-10, too."""
    opset = 18 if "axes" in how else 13
    got = api.resize(x, **how, opset=opset, backend=backend)
    assert got.shape == (0, 1 << 40) and got.dtype == x.dtype
    if "scales" in how and x.dtype == np.float32:  # (Upsample takes no bfloat16)
        up = api.upsample(x, scales=how["scales"], opset=9, backend=backend)
        assert up.shape == (0, 1 << 40) and up.dtype == x.dtype


@pytest.mark.parametrize("params,message", [
    ({"scales": [1.0, 2.0], "sizes": [2, 4]}, "Resize: scales [1.0, 2.0] and sizes [2, 4] are both given; give one"),
    ({}, "Resize: neither scales nor sizes is given (or both are empty); give one"),
    ({"scales": [1.0, 0.0]}, "Resize: scales [1.0, 0.0] must all be positive and finite"),
    ({"scales": [2.0]}, "Resize: scales [2.0] has 1 values for 2 resized axes; it needs one per axis"),
    ({"sizes": [2, -1]}, "Resize: sizes [2, -1] has a negative size"),
    ({"sizes": [2, 2], "antialias": 1}, "Resize: antialias 1 applies to modes linear and cubic, not nearest"),
    ({"sizes": [2, 2], "roi": [0.0, 1.0]}, "Resize: roi [0.0, 1.0] has 2 values for 2 resized axes; it needs 4"),
    ({"sizes": [2, 2], "nearest_mode": "up"}, "Resize: nearest_mode 'up' is not one of round_prefer_floor"),
    ({"sizes": [2], "axes": [2]}, "Resize: axis 2 is out of range [-2, 1] for an input of rank 2"),
    # a NaN source coordinate: onnx.reference made zeros (not extrapolation_value), onnxruntime row 0
    ({"sizes": [2, 2], "roi": [0.0, math.nan, 1.0, 1.0], "coordinate_transformation_mode": "tf_crop_and_resize"},
     "Resize: tf_crop_and_resize's roi for axis 1 is nan to 1.0, which puts 2 of the 2 positions at a NaN coordinate"),
    ({"sizes": [2, 2], "roi": [0.0, -math.inf, 1.0, math.inf], "coordinate_transformation_mode": "tf_crop_and_resize"},
     "Resize: tf_crop_and_resize's roi for axis 1 is -inf to inf, which puts 2 of the 2 positions at a NaN"),
])
def test_bad_inputs_are_refused_with_their_values(params, message):
    with pytest.raises(OpError) as e:
        api.resize(np.zeros((2, 3), np.float32), **params)
    assert e.value.message.startswith(message)


def test_a_kept_aspect_ratio_over_an_empty_axis_is_refused_with_the_sizes():
    """keep_aspect_ratio_policy takes one scale for every axis, sizes over the input's sizes; an
    axis of size 0 makes it infinite (as onnxruntime: "input dim is zero"), which was an
    OverflowError traceback (onnx.reference fails the same way)."""
    with pytest.raises(OpError, match=r"^Resize: keep_aspect_ratio_policy not_smaller scales every resized axis by "
                                      r"the largest of sizes \[2, 3\] over the input's \[0, 3\], and axis 1 of "
                                      r"size 0 makes that infinite$"):
        api.resize(np.zeros((4, 0, 3), np.float32), sizes=[2, 3], axes=[1, 2], keep_aspect_ratio_policy="not_smaller")


def test_the_cli_refuses_arithmetic_modes_and_fills_in_one_line(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4))
    linear, crop, ok = run_commands([
        (tmp_path, ["resize", "x.npy", "--scales", "1,1,2,2", "--mode", "linear", "-o", "y.npy"]),
        (tmp_path, ["resize", "x.npy", "--sizes", "1,1,2,2", "--coordinate-transformation-mode", "tf_crop_and_resize",
                    "--roi", "0,0,0,0,1,1,1,1.5", "-o", "y.npy"]),
        (tmp_path, ["resize", "x.npy", "--scales", "1,1,2,1.5", "--nearest-mode", "ceil", "-o", "y.npy"]),
    ])
    assert linear.returncode == 2 and linear.stderr == (
        "onnxop: error: x.npy: Resize: mode 'linear' is arithmetic, not in its scope: onnxop runs mode 'nearest' "
        "(in a model, run --others onnxruntime runs such a node on onnxruntime)\n")
    assert crop.returncode == 2 and crop.stderr.count("\n") == 1 and "reads outside the input" in crop.stderr
    assert ok.returncode == 0, ok.stderr
    want = reference("Resize", 19, [np.load(tmp_path / "x.npy"), None, np.array([1, 1, 2, 1.5], np.float32)],
                     {"mode": "nearest", "nearest_mode": "ceil"})[0]
    assert same(np.load(tmp_path / "y.npy"), want)


def test_run_others_takes_nearest_and_leaves_linear_to_onnxruntime(tmp_path):
    """A model as PP-OCR's detector holds them (an empty Constant roi, asymmetric floor), and a linear one:
    onnxop runs the nearest Resize, onnxruntime the linear, and --verify checks every onnxop node."""
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper

    consts = [helper.make_node("Constant", [], ["roi"], value=helper.make_tensor("roi", TP.FLOAT, [0], [])),
              helper.make_node("Constant", [], ["s"], value=helper.make_tensor("s", TP.FLOAT, [4], [1, 1, 2, 2]))]
    nodes = [helper.make_node("Resize", ["x", "roi", "s"], ["near"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Resize", ["near", "roi", "s"], ["y"], mode="linear")]
    graph = helper.make_graph(consts + nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 3, 4])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32))
    r, = run_commands([(tmp_path, ["run", "m.onnx", "--input", "x=x.npy", "--others", "onnxruntime", "--verify",
                                   "-o", "out/"])])
    assert r.returncode == 0, r.stderr
    assert "onnxruntime (CPU): 1 (Resize x1)" in r.stdout and "onnxop (WebGPU): 3 (Constant x2, Resize x1)" in r.stdout
    assert "Verified 3 node(s) bit for bit" in r.stdout

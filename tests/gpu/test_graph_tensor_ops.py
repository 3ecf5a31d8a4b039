"""Graphs that hold tensor operators (Concat, Gather, Split, Where, ...):
each node a graph step on the device (core/graph_steps.py), exact against
onnx.reference and onnxruntime CPU on random data, through the backend on
every backend (kernels under test) and through ``onnxop run`` as a real
process; --json shows that only inputs, outputs and the named host values
crossed; print mode makes only a large output's summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from conftest import error_of, random_array
import onnxop_cli.backend as onnxop_backend
from graph_models import i64, same_bits


def model(nodes, inputs, outputs, inits=(), opset=21):
    """inputs and outputs: (name, onnx type, rank); every dim symbolic, so one model takes any shape."""
    ins = [helper.make_tensor_value_info(n, t, [f"{n}{k}" for k in range(r)]) for n, t, r in inputs]
    outs = [helper.make_tensor_value_info(n, t, [f"{n}{k}" for k in range(r)]) for n, t, r in outputs]
    m = helper.make_model(helper.make_graph(nodes, "g", ins, outs, initializer=list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10  # what onnxruntime 1.2x reads
    return m


def references(m, feeds: dict) -> tuple[list, list]:
    ref = ReferenceEvaluator(m).run(None, feeds)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return ref, sess.run(None, feeds)


def check(m, feeds: dict, backend: str, ort_zero_signs: bool = True) -> list:
    """onnxop's outputs, byte-identical to onnx.reference's and onnxruntime's
    (``ort_zero_signs`` False: onnxruntime's Where gives +0.0 for a chosen
    -0.0, so there its zeros are compared by value)."""
    ref, rt = references(m, feeds)
    if not ort_zero_signs:
        rt = [np.where(o == 0, r, o) for r, o in zip(ref, rt)]
    got = onnxop_backend.prepare(m, backend=backend).run([feeds[i.name] for i in m.graph.input
                                                           if i.name not in {t.name for t in m.graph.initializer}])
    assert len(got) == len(ref) == len(rt)
    for k, (g, r, o) in enumerate(zip(got, ref, rt)):
        assert same_bits(r, o), f"the references differ on output {k}"
        assert same_bits(g, r), f"output {k}: {g!r} != {r!r}"
    return list(got)


# ------------------------------------------------------------------ the graphs


def shape_gather_concat_reshape():
    """Shape -> Gather -> Concat -> Reshape: the new shape made on the device, read back for the Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "keep"], ["g"], axis=0),
        helper.make_node("Concat", ["g", "rest"], ["c"], axis=0),
        helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
        helper.make_node("Reshape", ["t", "c"], ["y"]),
    ]
    return model(nodes, [("x", TP.FLOAT, 3)], [("y", TP.FLOAT, 2)], [i64("keep", [1]), i64("rest", [-1])])


def transpose_reshape_split(halves: bool = False):
    """Transpose -> Reshape -> Split into [5, 15] (or, ``halves``, two equal parts)."""
    split = helper.make_node("Split", ["r"], ["a", "b"], axis=1, num_outputs=2) if halves else \
        helper.make_node("Split", ["r", "parts"], ["a", "b"], axis=1)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        split,
    ]
    return model(nodes, [("x", TP.UINT16, 3)], [("a", TP.UINT16, 2), ("b", TP.UINT16, 2)],
                 [i64("shape", [6, -1])] + ([] if halves else [i64("parts", [5, 15])]))


def slice_concat():
    nodes = [
        helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["p"]),
        helper.make_node("Slice", ["x", "s1", "e1", "ax", "neg"], ["q"]),
        helper.make_node("Slice", ["q", "s0", "e0", "ax"], ["q2"]),
        helper.make_node("Concat", ["p", "q2", "x"], ["y"], axis=1),
    ]
    return model(nodes, [("x", TP.DOUBLE, 2)], [("y", TP.DOUBLE, 2)],
                 [i64("s0", [1]), i64("e0", [4]), i64("ax", [1]), i64("s1", [-1]), i64("e1", [-100]),
                  i64("neg", [-1])])


def where_after_expand():
    """Expand (a view) feeding Where, which broadcasts its other inputs."""
    nodes = [
        helper.make_node("Expand", ["cond", "shape"], ["ce"]),
        helper.make_node("Where", ["ce", "x", "y"], ["w"]),
        helper.make_node("Transpose", ["w"], ["z"], perm=[1, 0, 2]),
    ]
    return model(nodes, [("cond", TP.BOOL, 2), ("x", TP.FLOAT, 3), ("y", TP.FLOAT, 1)], [("z", TP.FLOAT, 3)],
                 [i64("shape", [3, 4, 5])])


def pad_gather():
    nodes = [
        helper.make_node("Pad", ["x", "pads", "value"], ["p"], mode="constant"),
        helper.make_node("Gather", ["p", "idx"], ["y"], axis=1),
    ]
    return model(nodes, [("x", TP.INT32, 2), ("idx", TP.INT64, 2)], [("y", TP.INT32, 3)],
                 [i64("pads", [1, 2, 0, 1]), numpy_helper.from_array(np.array(7, np.int32), "value")])


def scatter_nd_after_transpose():
    nodes = [
        helper.make_node("Transpose", ["data"], ["t"], perm=[1, 0, 2]),
        helper.make_node("ScatterND", ["t", "idx", "upd"], ["y"]),
    ]
    return model(nodes, [("data", TP.FLOAT, 3), ("idx", TP.INT64, 2), ("upd", TP.FLOAT, 2)], [("y", TP.FLOAT, 3)])


def constants_and_fills():
    """Constant nodes and initializers as inputs; Shape -> ConstantOfShape; a Concat of both."""
    nodes = [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
            np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5, "k")),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["f"], value=numpy_helper.from_array(np.array([-0.0], np.float32))),
        helper.make_node("Concat", ["x", "k", "f", "w"], ["c"], axis=0),
        helper.make_node("Trilu", ["c"], ["y"], upper=1),
    ]
    return model(nodes, [("x", TP.FLOAT, 2)], [("y", TP.FLOAT, 2), ("s", TP.INT64, 1)],
                 [numpy_helper.from_array(np.full((2, 4), np.float32(2.5)), "w")])


def compress_on_a_view():
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Compress", ["t", "cond"], ["y"], axis=0),
        helper.make_node("Size", ["y"], ["n"]),
    ]
    return model(nodes, [("x", TP.INT8, 2), ("cond", TP.BOOL, 1)], [("y", TP.INT8, 2), ("n", TP.INT64, 0)])


# ------------------------------------------------------------------ through the backend, every backend


@pytest.mark.parametrize("shape", [(2, 3, 4), (5, 1, 7)])
def test_shape_gather_concat_reshape(backend, rng, shape):
    x = random_array(rng, shape, np.float32)
    (y,) = check(shape_gather_concat_reshape(), {"x": x}, backend)
    assert y.shape == (shape[1], x.size // shape[1])


def test_one_prepared_model_takes_new_shapes(backend, rng):
    rep = onnxop_backend.prepare(shape_gather_concat_reshape(), backend=backend)
    for shape in [(3, 2, 2), (1, 6, 5)]:
        x = random_array(rng, shape, np.float32)
        assert same_bits(rep.run([x])[0], ReferenceEvaluator(shape_gather_concat_reshape()).run(None, {"x": x})[0])


def test_transpose_reshape_split(backend, rng):
    a, b = check(transpose_reshape_split(), {"x": random_array(rng, (4, 6, 5), np.uint16)}, backend)
    assert a.shape == (6, 5) and b.shape == (6, 15)


def test_slice_concat(backend, rng):
    check(slice_concat(), {"x": random_array(rng, (5, 6), np.float64)}, backend)


def test_where_with_broadcast_after_expand(backend, rng):
    feeds = {"cond": random_array(rng, (4, 1), np.bool_), "x": random_array(rng, (3, 1, 5), np.float32),
             "y": random_array(rng, (5,), np.float32)}
    check(where_after_expand(), feeds, backend, ort_zero_signs=False)


def test_pad_then_gather(backend, rng):
    idx = rng.integers(-6, 6, size=(2, 3)).astype(np.int64)  # the padded axis has 3 + 2 + 1 = 6 entries
    check(pad_gather(), {"x": random_array(rng, (4, 3), np.int32), "idx": idx}, backend)


def test_scatter_nd_after_transpose(backend, rng):
    idx = np.array([[2, 0], [0, 3], [1, 1]], np.int64)
    feeds = {"data": random_array(rng, (4, 3, 5), np.float32), "idx": idx,
             "upd": random_array(rng, (3, 5), np.float32)}
    check(scatter_nd_after_transpose(), feeds, backend)


def test_constants_initializers_and_fills(backend, rng):
    y, s = check(constants_and_fills(), {"x": random_array(rng, (2, 4), np.float32)}, backend)
    assert y.shape == (9, 4) and list(s) == [2, 4]


def test_compress_of_a_view(backend, rng):
    feeds = {"x": random_array(rng, (3, 6), np.int8), "cond": np.array([1, 0, 1, 1, 0, 1], bool)}
    check(compress_on_a_view(), feeds, backend)


def test_a_bad_index_inside_a_graph_is_refused_naming_the_node(backend, rng):
    from onnxop_cli.errors import OpError

    idx = np.array([[0, 9, 1]], np.int64)
    with pytest.raises(OpError, match=r"node 1 \(Gather-13\).*9 is out of range"):
        onnxop_backend.prepare(pad_gather(), backend=backend).run([random_array(rng, (4, 3), np.int32), idx])


def test_device_buffers_are_released(backend, rng, monkeypatch):
    """Every buffer made for a step is destroyed by the end of the run (most before it)."""
    from onnxop_cli.gpu import resident

    made, released = [], []
    real_init, real_release = resident.DeviceBuffer.__init__, resident.DeviceBuffer.release

    def init(self, *a, **k):
        real_init(self, *a, **k)
        made.append(self)

    def release(self):
        if self.buffer is not None:
            released.append(self)
        real_release(self)

    monkeypatch.setattr(resident.DeviceBuffer, "__init__", init)
    monkeypatch.setattr(resident.DeviceBuffer, "release", release)
    check(transpose_reshape_split(), {"x": random_array(rng, (4, 6, 5), np.uint16)}, backend)
    check(shape_gather_concat_reshape(), {"x": random_array(rng, (2, 3, 4), np.float32)}, backend)
    assert made and len(released) == len(made) and all(b.buffer is None for b in made)


# ------------------------------------------------------------------ onnxop run: real commands, one backend


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Each case's folder, input and ``onnxop run`` (on the first backend): what the commands write and
    print is under test, not the process, so the four run in one (tests/commands.py)."""
    from commands import run_commands
    from conftest import BACKENDS, seeded_rng

    rng = seeded_rng(request)
    unsupported = [helper.make_node("Concat", ["x", "x"], ["c"], axis=0), helper.make_node("Relu", ["c"], ["y"])]
    hostile = [helper.make_node("Transpose", ["x"], ["t"]), helper.make_node("Concat", ["t", "t"], ["y"], axis=1.5)]
    cases = {  # name: model, input, the run's arguments after the model and x.npy
        "tensor_ops": (transpose_reshape_split(), random_array(rng, (4, 6, 5), np.uint16), ["-o", "out/", "--json"]),
        "host_values": (shape_gather_concat_reshape(), random_array(rng, (2, 3, 4), np.float32),
                        ["-o", "y.npy", "--json"]),
        "unsupported": (model(unsupported, [("x", TP.FLOAT, 1)], [("y", TP.FLOAT, 1)]), np.ones(3, np.float32),
                        ["-o", "y.npy"]),
        "hostile": (model(hostile, [("x", TP.FLOAT, 2)], [("y", TP.FLOAT, 2)]), np.ones((2, 2), np.float32), []),
    }
    commands = []
    for name, (m, x, argv) in cases.items():
        folder = tmp_path_factory.mktemp(name)
        onnx.save(m, folder / "m.onnx")
        np.save(folder / "x.npy", x)
        commands.append((folder, ["run", "m.onnx", "x.npy", *argv, "-b", BACKENDS[0]]))
    done = run_commands(commands, env=dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp")))
    assert len(done) == len(cases)
    return {name: (folder, m, x, r) for (name, (m, x, _)), (folder, _), r in zip(cases.items(), commands, done)}


def test_run_process_writes_a_tensor_op_graph_exactly(ran):
    folder, m, x, r = ran["tensor_ops"]
    assert r.returncode == 0, r.stderr
    ref, rt = references(m, {"x": x})
    for name, want, also in zip(["a", "b"], ref, rt):
        got = np.load(folder / "out" / f"{name}.npy")
        assert same_bits(got, want) and same_bits(got, also)
    doc = json.loads(r.stdout)
    # only the input went up and only the outputs came back: the split's parts stayed on the device
    assert doc["transfers"] == {"uploaded": x.nbytes, "read_back": x.nbytes}
    assert doc["host_values"] == {}
    # the Split's parts are views of the step (one strided copy each): streamed out by the output gathers
    assert doc["kernels"] == ["node 2 (Split-18): view"] and doc["gathers"] == 3  # the step, two outputs


def test_json_names_the_host_values_read_back(ran):
    """Shape -> Gather -> Concat -> Reshape: the Concat's 16 bytes come back for the Reshape, named;
    the Shape's 24 bytes and the small index tensors are what went up besides x."""
    folder, m, x, r = ran["host_values"]
    assert r.returncode == 0, r.stderr
    assert same_bits(np.load(folder / "y.npy"), ReferenceEvaluator(m).run(None, {"x": x})[0])
    doc = json.loads(r.stdout)
    assert doc["host_values"] == {"c": 16}
    # up: x, the shape (3 x int64), the Gather's index (1 x int64), the Concat's "rest" (1 x int64)
    small_up = 3 * 8 + 8 + 8
    assert doc["transfers"] == {"uploaded": x.nbytes + small_up, "read_back": x.nbytes + 16}


def test_run_refuses_an_unsupported_node_among_tensor_op_nodes(ran):
    folder, _, _, r = ran["unsupported"]
    assert r.returncode == 2
    msg = error_of(r.stderr)
    assert msg == ("m.onnx: 1 node(s) onnxop does not run: Relu x1; --others onnxruntime runs them on onnxruntime "
                   "(--others reference: on onnx.reference)")
    assert not (folder / "y.npy").exists()


def test_hostile_tensor_op_node_exits_2(ran):
    _, _, _, r = ran["hostile"]
    assert r.returncode == 2
    msg = error_of(r.stderr)
    assert "node 1 (Concat-13)" in msg and "axis" in msg


# ------------------------------------------------------------------ print mode: summaries only


def test_print_mode_makes_only_a_large_outputs_summary(rng, capsys, monkeypatch):
    """Printed, an output past the threshold is made as its summary's elements (core/summary.py);
    the text is the same as when the whole output is made."""
    from conftest import BACKENDS, cli
    from onnxop_cli.core import graph, sources

    m = transpose_reshape_split(halves=True)
    x = random_array(rng, (40, 6, 50), np.uint16)
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"graph-tensor-ops-{os.getpid()}"
    path.mkdir(exist_ok=True)
    onnx.save(m, path / "m.onnx")
    np.save(path / "x.npy", x)
    code, whole, err = cli(capsys, "run", path / "m.onnx", path / "x.npy", "-b", BACKENDS[0])
    assert code == 0, err
    made = []
    real = graph.Fill.__call__

    def fill(self, sink):
        made.append(self.v.name)
        real(self, sink)

    monkeypatch.setattr(graph.Fill, "__call__", fill)
    monkeypatch.setattr(sources, "MAP_THRESHOLD", 1024)
    code, summarised, err = cli(capsys, "run", path / "m.onnx", path / "x.npy", "-b", BACKENDS[0])
    assert code == 0, err
    assert made == [] and summarised == whole and "..." in whole


def test_fortran_and_big_endian_inputs(tmp_path, rng, capsys):
    """A column-major, big-endian .npy feeds Concat as it lies (its strides and byte swap go to the
    pieces kernel) and Slices (gathered with the swap): the result is the reference's."""
    from conftest import BACKENDS, cli

    x = random_array(rng, (5, 6), np.float64)
    np.save(tmp_path / "x.npy", np.asfortranarray(x.astype(">f8")))
    m = slice_concat()
    onnx.save(m, tmp_path / "m.onnx")
    code, _, err = cli(capsys, "run", tmp_path / "m.onnx", tmp_path / "x.npy", "-o", tmp_path / "y.npy",
                       "-b", BACKENDS[0])
    assert code == 0, err
    ref, rt = references(m, {"x": x})
    got = np.load(tmp_path / "y.npy")
    assert same_bits(got, ref[0]) and same_bits(got, rt[0])

"""Cast as real commands: float types onnxop once refused (bfloat16,
float8 with --saturate, float8e8m0 with --round-mode, int4) written to .pb
files and read back bit for bit against onnx.reference, from the operator
command and from a model; strings cast on the host say so (the note and
``--json``'s kernel ``host``), and a text that is no number, or a float6
target (onnxop has no float6 tensors), is one ``onnxop: error:`` line,
exit 2, no output file.

What the commands write, print and exit with is under test, not the process:
the tests' commands run in one process (tests/commands.py; fixture ``ran``),
each test's in a folder of its own that its ``prepared`` function fills."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import pytest

from commands import Prepared
from tensor_refs import reference


def _read_pb(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _bits(x: np.ndarray) -> bytes:
    return np.ascontiguousarray(x).view(np.uint8).tobytes()


X = np.array([1.5, 500.0, -np.inf, np.nan, 0.3, -0.0, 3e-39, 65520.0, 1 + 2**-8], np.float32)
prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Each prepared folder and its commands' results, all run in one process."""
    return prepared.run(tmp_path_factory)


FLOAT_CASES = ((16, []), (10, []), (11, []), (17, ["--saturate", "0"]), (19, []), (24, ["--round-mode", "nearest"]),
               (22, []))


@prepared
def float_casts(folder):
    np.save(folder / "x.npy", X)
    return [["cast", "x.npy", "--to", to, *options, "-o", f"y{to}.pb"] for to, options in FLOAT_CASES]


def test_float_casts_write_what_onnx_reference_makes(ran):
    tmp_path, done = ran["float_casts"]
    cases = FLOAT_CASES
    assert len(done) == 7
    for (to, options), r in zip(cases, done):
        assert r.returncode == 0, r.stderr
        attrs = {"to": to, **({options[0][2:].replace("-", "_"): options[1]} if options else {})}
        attrs = {k: (int(v) if k != "round_mode" else v) for k, v in attrs.items()}
        want = reference("Cast", 25, [X], attrs, out_types=[to])[0]
        got = _read_pb(tmp_path / f"y{to}.pb")
        assert got.dtype == want.dtype and _bits(got) == _bits(want), (to, got, want)


def _casts_model():
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["b"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("CastLike", ["h", "like"], ["y"], saturate=0)]
    like = numpy_helper.from_array(np.zeros(1, ml_dtypes.float8_e5m2), "like")
    graph = helper.make_graph(nodes, "casts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT8E5M2, None)], [like])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


@prepared
def model_of_casts(folder):
    onnx.save(_casts_model(), folder / "casts.onnx")
    np.save(folder / "x.npy", X)
    return [["run", "casts.onnx", "x.npy", "-o", "y.pb", "--json"]]


def test_a_model_of_float_casts_runs_them_on_the_gpu(ran):
    tmp_path, [r] = ran["model_of_casts"]
    assert r.returncode == 0, r.stderr
    from onnx.reference import ReferenceEvaluator

    want = ReferenceEvaluator(_casts_model()).run(None, {"x": X})[0]
    assert _bits(_read_pb(tmp_path / "y.pb")) == _bits(want)


@prepared
def strings(folder):
    np.save(folder / "s.npy", np.array(["1.5", "-0.0", "1e40"]))
    np.save(folder / "f.npy", np.array([0.1, -np.inf], np.float32))
    return [["cast", "s.npy", "--to", "1", "-o", "y.npy"], ["cast", "f.npy", "--to", "8", "-o", "t.npy", "--json"],
            ["non-zero", "s.npy", "-o", "nz.npy"]]


def test_strings_are_cast_on_the_host_and_say_so(ran):
    tmp_path, (to_float, to_string, non_zero) = ran["strings"]
    r = to_float
    assert r.returncode == 0, r.stderr
    assert "wrote y.npy (host: string tensors have no GPU form)" in r.stdout
    assert np.load(tmp_path / "y.npy").tolist() == [1.5, -0.0, np.inf]
    r = to_string
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["outputs"][0]["kernel"] == "host"
    assert np.load(tmp_path / "t.npy").tolist() == ["0.1", "-inf"]
    # the sibling: NonZero of strings is host work too, not metadata
    r = non_zero
    assert r.returncode == 0, r.stderr
    assert "(host: string tensors have no GPU form)" in r.stdout


FLOAT6 = ((27, "float6e2m3"), (28, "float6e3m2"))  # ONNX types onnxop has no tensors of


@prepared
def refusals(folder):
    np.save(folder / "s.npy", np.array([["1", "2"], ["x\nonnxop: forged", "3"]]))
    np.save(folder / "b.npy", np.array(["1"]))
    np.save(folder / "x.npy", X)
    return ([["cast", "s.npy", "--to", "6", "-o", "y.npy"], ["cast", "b.npy", "--to", "16", "-o", "z.pb"]]
            + [["cast", "x.npy", "--to", to, "-o", f"f6-{to}.pb"] for to, _ in FLOAT6])


def test_a_text_that_is_no_number_is_one_error_line_and_no_output(ran):
    tmp_path, (not_a_number, to_bfloat16, *to_float6) = ran["refusals"]
    float6 = FLOAT6
    r = not_a_number
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnxop: error: s.npy: Cast: input input element (1, 0) is "
                                                   "'x\\nonnxop: forged', which int32 cannot take"), r.stderr
    assert not (tmp_path / "y.npy").exists()
    r = to_bfloat16
    assert r.returncode == 2 and "string to bfloat16 is not in its scope" in r.stderr
    assert not (tmp_path / "z.pb").exists()
    assert len(to_float6) == 2
    for (to, name), r in zip(float6, to_float6):
        assert r.returncode == 2 and r.stderr == (f"onnxop: error: x.npy: Cast: to {to} is {name}: onnxop has no "
                                                  f"{name} tensors; a cast to it is not in its scope\n"), r.stderr
        assert not (tmp_path / f"f6-{to}.pb").exists()


NAMED_X = np.array([1.5, -0.0, np.nan, 65504.0, 1e-8, 3.14159], np.float32)


@prepared
def type_names(folder):
    np.save(folder / "x.npy", NAMED_X)
    np.save(folder / "m.npy", np.zeros((2, 3), np.float32))
    bf16, f8 = ["bfloat16", "BFLOAT16", "16"], ["float8_e4m3fn", "float8e4m3fn", "17"]
    return ([["-q", "cast", "x.npy", "--to", to, "-o", f"b{k}.pb"] for k, to in enumerate(bf16)]
            + [["-q", "cast", "x.npy", "--to", to, "-o", f"f{k}.pb"] for k, to in enumerate(f8)]
            + [["-q", "eye-like", "m.npy", "--dtype", "int64", "-o", "e.npy"],
               ["cast", "x.npy", "--to", "bfloat17", "-o", "z.pb"]])


def test_a_type_is_taken_by_its_name_as_by_its_number(ran):
    """--to bfloat16, BFLOAT16 and 16 are one type (ONNX's, numpy's and ml_dtypes' names: float, float32,
    float8_e4m3fn, float8e4m3fn); EyeLike's --dtype too; a name no type has is one line."""
    tmp_path, done = ran["type_names"]
    x = NAMED_X
    assert len(done) == 8
    for r in done[:6]:
        assert r.returncode == 0, r.stderr
    got = [_bits(_read_pb(tmp_path / f"b{k}.pb")) for k in range(3)]
    assert got[0] == got[1] == got[2] == _bits(x.astype(ml_dtypes.bfloat16))
    assert len({_bits(_read_pb(tmp_path / f"f{k}.pb")) for k in range(3)}) == 1
    r = done[6]
    assert r.returncode == 0 and np.load(tmp_path / "e.npy").dtype == np.int64, r.stderr
    r = done[7]
    assert r.returncode == 2 and r.stderr == ("onnxop: error: Cast: --to must be a type name or a TensorProto number, "
                                              "got 'bfloat17' (example: --to bfloat16, or --to 16)\n")
    assert not (tmp_path / "z.pb").exists()


def test_the_api_takes_a_type_by_name_dtype_or_number():
    import onnxop_cli as o
    from onnxop_cli.api import ParameterValueError

    x = np.array([1.5, -0.0, 3.14159], np.float32)
    by = [o.cast(x, to=t) for t in ("bfloat16", 16, ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16))]
    assert all(b.dtype == ml_dtypes.bfloat16 and _bits(b) == _bits(by[0]) for b in by)
    assert o.cast(x, to=np.float16).dtype == np.float16
    try:
        o.cast(x, to="nope")
    except ParameterValueError as e:
        assert "to must be a type name, a numpy dtype or a TensorProto number, got 'nope'" in str(e)
    else:
        raise AssertionError("a type no one has was taken")


def _same_type_model(op: str, to: int):
    node = helper.make_node(op, ["x"], ["y"], to=to)
    graph = helper.make_graph([node], "same", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", to, [3, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26 if op == "BitCast" else 21)])


LAID = np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(-1.25)
LAYOUTS = {"fortran": np.asfortranarray(LAID), "big": LAID.astype(">f4"),
           "fortran-big": np.asfortranarray(LAID.astype(">f4"))}


@prepared
def same_type_layouts(folder):
    onnx.save(_same_type_model("Cast", TensorProto.FLOAT), folder / "cast.onnx")
    onnx.save(_same_type_model("BitCast", TensorProto.INT32), folder / "bitcast.onnx")
    commands = []
    for name, x in LAYOUTS.items():
        np.save(folder / f"{name}.npy", x)
        commands += [["cast", f"{name}.npy", "--to", "float32", "-o", f"cast-{name}.npy"],
                     ["bit-cast", f"{name}.npy", "--to", "int32", "-o", f"bitcast-{name}.npy"],
                     ["run", "cast.onnx", f"{name}.npy", "-o", f"run-cast-{name}.npy"],
                     ["run", "bitcast.onnx", f"{name}.npy", "-o", f"run-bitcast-{name}.npy"],
                     ["cast", f"{name}.npy", "--to", "float32"]]
    return commands


def test_a_cast_to_its_own_type_and_a_bitcast_read_the_input_where_it_lies(ran):
    """The same type (or width) keeps the elements, not the storage's byte
    order: a Fortran-order or big-endian .npy comes out row-major and
    little-endian, written, from a model, and printed -- once they were its
    bytes as they lay (the elements transposed, the floats byte-swapped)."""
    tmp_path, done = ran["same_type_layouts"]
    assert len(done) == 5 * len(LAYOUTS)
    for k, name in enumerate(LAYOUTS):
        written = done[5 * k: 5 * k + 4]
        assert all(r.returncode == 0 for r in written), [r.stderr for r in written]
        for out in (f"cast-{name}", f"run-cast-{name}"):
            assert _bits(np.load(tmp_path / f"{out}.npy")) == _bits(LAID), out
        for out in (f"bitcast-{name}", f"run-bitcast-{name}"):
            assert _bits(np.load(tmp_path / f"{out}.npy")) == _bits(LAID.view(np.int32)), out
        printed = done[5 * k + 4]
        assert printed.returncode == 0, printed.stderr
        shown_in, shown_out = (part.split("dtype=float32\n", 1)[1] for part in printed.stdout.split("Outputs:"))
        assert shown_out.strip() == shown_in.strip() and "[ -0.  ,  -1.25,  -2.5 ,  -3.75]," in shown_out, printed.stdout

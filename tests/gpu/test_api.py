"""The Python API: ``from onnxop_cli import flatten, unsqueeze`` on numpy
arrays, byte-exact against numpy, through the GPU kernel, with the
project's exceptions; importing it stays light."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import onnxop_cli
from conftest import random_array
from onnxop_cli import OnnxopError, OpError, UsageError, flatten, unsqueeze
from onnxop_cli.core.tensor import pack_subbyte, dtype_by_name

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

DTYPES = ["float32", "float64", "float16", "int8", "uint16", "int64", "bool", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_flatten_matches_numpy_reshape(backend, rng, dtype):
    a = random_array(rng, (2, 3, 4, 5), dtype)
    for axis in range(-4, 5):
        got = flatten(a, axis, backend=backend)
        split = axis if axis >= 0 else axis + a.ndim
        want = a.reshape(int(np.prod(a.shape[:split])), -1)
        assert got.shape == want.shape and got.dtype == a.dtype
        assert got.tobytes() == want.tobytes()  # bit for bit: NaN payloads, -0.0
        assert got.flags.c_contiguous and not np.shares_memory(got, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unsqueeze_matches_numpy_expand_dims(backend, rng, dtype):
    x = random_array(rng, (3, 4, 5), dtype)
    for axes in ([0], [2, 4, 5], [-1], [5, 0, -3], (1,), 3, np.int64(0), np.array([0, 2])):
        got = unsqueeze(x, axes, backend=backend)
        want = np.expand_dims(x, tuple(np.atleast_1d(axes).tolist()))
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2fnuz", "int4", "uint4", "float4_e2m1fn", "int2"])
def test_ml_dtypes_arrays_round_trip(backend, rng, name):
    dtype = dtype_by_name(name)
    width = dtype.numpy.itemsize  # ml_dtypes keeps 4- and 2-bit values one per byte
    codes = rng.integers(0, 256, size=(3, 7 * width), dtype=np.uint8)
    if dtype.is_packed:
        codes &= (1 << dtype.bits) - 1
    x = codes.view(dtype.numpy)
    got = flatten(x, 0, backend=backend)
    assert got.dtype == x.dtype and got.shape == (1, 21)
    assert got.view(np.uint8).tobytes() == codes.tobytes()
    assert unsqueeze(x, [1], backend=backend).view(np.uint8).tobytes() == codes.tobytes()


def test_packed_types_travel_packed(backend, monkeypatch):
    """A 4-bit array crosses the GPU as ONNX packs it: two elements a byte."""
    import onnxop_cli.gpu as gpu_pkg

    seen = []
    real = gpu_pkg.copy_through_kernel

    def spy(gpu, source, sink, **kw):
        seen.append(source.to_array().tobytes())
        return real(gpu, source, sink, **kw)

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", spy)
    x = np.array([1, -2, 3, -4, 5], dtype=ml_dtypes.int4)
    assert flatten(x, 0, backend=backend).tolist() == [[1, -2, 3, -4, 5]]
    assert seen == [pack_subbyte(x, dtype_by_name("int4")).tobytes()]


def test_the_data_goes_through_the_gpu_kernel(backend, monkeypatch, rng):
    """Same path as the CLI: core.apply -> copy_through_kernel, once per call;
    a kernel that writes garbage would show in the result."""
    import onnxop_cli.gpu as gpu_pkg

    calls = []
    real = gpu_pkg.copy_through_kernel

    def corrupting(gpu, source, sink, **kw):
        calls.append(source.nbytes)

        def flip(chunk):
            sink(memoryview(bytes(b ^ 0xFF for b in chunk)))

        return real(gpu, source, flip, **kw)

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", corrupting)
    a = random_array(rng, (4, 4), "uint8")
    got = flatten(a, backend=backend)
    assert calls == [16]
    assert got.tobytes() == (~a).tobytes()


def test_lists_and_scalars_are_array_like(backend):
    assert flatten([[1.0, 2.0], [3.0, 4.0]], 0, backend=backend).tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert unsqueeze(np.float32(2.5), 0, backend=backend).tolist() == [2.5]


def test_opset_selects_the_rules(backend):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(OpError, match=r"negative axes need opset 11; this is Flatten-9"):
        flatten(a, -1, opset=9, backend=backend)
    assert flatten(a, -1, opset=11, backend=backend).shape == (2, 3)


def test_fortran_big_endian_and_string_arrays(backend, rng):
    """Fortran order and big-endian bytes are re-laid out on the GPU; strings
    take the host path. Each result is what numpy gives."""
    f = np.asfortranarray(random_array(rng, (3, 4, 5), "float64"))
    assert flatten(f, 2, backend=backend).tobytes() == f.reshape(12, 5).tobytes()
    b = random_array(rng, (2, 3), "int32").astype(">i4")
    got = unsqueeze(b, [0], backend=backend)
    assert got.dtype == np.dtype("<i4") and got.tobytes() == b.astype("<i4").reshape(1, 2, 3).tobytes()
    s = np.array([["a", "bé"], ["", "xyz"]])
    assert flatten(s, 0, backend=backend).tolist() == [["a", "bé", "", "xyz"]]


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: flatten(np.zeros((2, 3, 4, 5)), 5), OpError,
         "Flatten: axis 5 is out of range [-4, 4] for an input of rank 4"),
        (lambda: unsqueeze(np.zeros(3), [0, -3]), OpError,
         "Unsqueeze: axes 0 and -3 both name output axis 0 (output rank 3); axes must be unique"),
        (lambda: flatten(np.zeros(3), "1"), UsageError, "Flatten: axis must be an integer, got '1'"),
        (lambda: unsqueeze(np.zeros(3), [0.5]), UsageError, "Unsqueeze: axes must be integers, got 0.5"),
        (lambda: flatten(np.zeros(3), opset=99), UsageError, "opset 99 is out of range [1, 28]"),
        (lambda: flatten(np.zeros(3), backend="cuda"), UsageError,
         "unknown backend 'cuda'; choose one of auto, vulkan, metal, d3d12, gl"),
        # api.md named InputError for a type the opset does not allow: it is the rules', an OpError
        (lambda: onnxop_cli.transpose(np.zeros(2, ml_dtypes.float4_e2m1fn), opset=21), OpError,
         "Transpose: opset 21 (Transpose-21) does not allow float4_e2m1fn; float4_e2m1fn was added in Transpose-23 "
         "(opset 23)"),
        (lambda: flatten(np.zeros(2, "datetime64[D]")), onnxop_cli.InputError, "x: dtype datetime64[D] has no ONNX "
                                                                               "tensor type"),
    ],
)
def test_errors_are_the_projects_exceptions(backend, call, error, message):
    with pytest.raises(error) as info:
        call()
    assert info.value.message == message and str(info.value) == message
    assert isinstance(info.value, OnnxopError) and info.value.exit_code in (1, 2)


def test_docstrings_are_runnable_examples(backend, monkeypatch):
    monkeypatch.setenv("ONNXOP_BACKEND", backend)
    for module in (onnxop_cli.api, onnxop_cli):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_help_is_useful():
    for fn in (flatten, unsqueeze):
        doc = fn.__doc__
        assert ">>> " in doc and "Raises" in doc and "opset" in doc
    text = subprocess.run(
        [sys.executable, "-c", "import onnxop_cli; help(onnxop_cli)"],
        capture_output=True, text=True, env={"PAGER": "cat", "TERM": "dumb", "PATH": "/usr/bin:/bin"},
    ).stdout
    assert "flatten(x, axis=1, *, opset=28, backend=None, engine=None)" in text
    assert "unsqueeze(x, axes, *, opset=28, backend=None, engine=None)" in text
    assert "OnnxopError" in text


def test_lazy_exports_keep_import_light():
    code = (
        "import sys, onnxop_cli\n"
        "assert 'numpy' not in sys.modules and 'onnxop_cli.api' not in sys.modules, sorted(sys.modules)\n"
        "from onnxop_cli import flatten, unsqueeze\n"
        "assert 'onnxop_cli.api' in sys.modules and 'wgpu' not in sys.modules\n"
        "assert {'flatten', 'unsqueeze', 'OnnxopError'} <= set(dir(onnxop_cli))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        onnxop_cli.nope  # noqa: B018


VIEW_CALLS = [
    ("transpose", lambda f, x: f(x, [2, 0, 1]), lambda x: x.transpose(2, 0, 1)),
    ("transpose", lambda f, x: f(x), lambda x: x.T),
    ("slice_", lambda f, x: f(x, [5, 1], [-100, 3], axes=[-1, 0], steps=[-2, 1]), lambda x: x[1:3, :, 5::-2]),
    ("expand", lambda f, x: f(x[:, :1], [2, 2, 3, 6]), lambda x: np.broadcast_to(x[:, :1], (2, 2, 3, 6))),
    ("tile", lambda f, x: f(x, [1, 2, 3]), lambda x: np.tile(x, (1, 2, 3))),
    ("reshape", lambda f, x: f(x, [0, -1]), lambda x: x.reshape(2, 18)),
    ("squeeze", lambda f, x: f(x[:, :1], 1), lambda x: x[:, 0]),
    ("identity", lambda f, x: f(x), lambda x: x),
    ("depth_to_space", lambda f, x: f(x.reshape(1, 4, 3, 3), 2, "CRD"),
     lambda x: x.reshape(1, 1, 2, 2, 3, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 6, 6)),
    ("space_to_depth", lambda f, x: f(x.reshape(1, 1, 6, 6), 3),
     lambda x: x.reshape(1, 1, 2, 3, 2, 3).transpose(0, 3, 5, 1, 2, 4).reshape(1, 9, 2, 2)),
]


@pytest.mark.parametrize("name,call,reference", VIEW_CALLS, ids=[c[0] for c in VIEW_CALLS])
def test_view_functions_match_numpy(backend, rng, name, call, reference):
    x = random_array(rng, (2, 3, 6), "float32")
    got = call(getattr(onnxop_cli, name), x)
    expected = np.ascontiguousarray(reference(x))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes() and got.flags.c_contiguous


def test_view_functions_refuse_in_one_line():
    with pytest.raises(OpError, match=r"^Transpose: perm \[0, 0\] is not a permutation of 0\.\.1 for an input of rank 2$"):
        onnxop_cli.transpose(np.zeros((2, 3)), [0, 0])
    with pytest.raises(UsageError, match=r"^Slice: steps must be integers, got 'x'$"):
        onnxop_cli.slice_(np.zeros(3), [0], [1], steps=["x"])
    # a string parameter of another type was taken as its str(): mode=1 was refused as "mode '1' is not DCR or CRD"
    for mode in (1, b"DCR"):
        with pytest.raises(onnxop_cli.api.ParameterTypeError, match=rf"^DepthToSpace: mode must be a string, got {mode!r}$"):
            onnxop_cli.depth_to_space(np.zeros((1, 4, 1, 1)), 2, mode=mode)


def test_none_in_an_inputs_place_leaves_it_out_or_is_refused_in_one_line(backend):
    """None positionally is an input left out, as an empty name in a node: Pad's constant_value takes its default,
    Resize reads scales after an absent roi; a required input or a variadic one is refused by name (it once became
    an object array: 'a string tensor holds a value of type NoneType')."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    pads = np.array([0, 1, 0, 1], np.int64)
    assert onnxop_cli.pad(x, pads, None, backend=backend).tobytes() == np.pad(x, ((0, 0), (1, 1))).tobytes()
    assert onnxop_cli.resize(x, None, np.array([1, 2], np.float32), backend=backend).tobytes() == np.repeat(
        x, 2, axis=1).tobytes()
    with pytest.raises(OpError, match=r"^Pad-\d+ needs input data$"):
        onnxop_cli.pad(None, pads, backend=backend)
    with pytest.raises(UsageError, match=r"^Concat-\d+: input 1 is None; its inputs are arrays, none of them can be "
                                         r"left out$"):
        onnxop_cli.concat(x, None, axis=0, backend=backend)


def test_python_numbers_keep_their_value_or_are_refused(backend):
    """A Python number or list given for an input becomes that input's type only where every value survives the
    cast: numpy's astype made Pad's constant_value 128 an int8 -128, -1 a uint64 2**64 - 1, 1.7 an int8 1, and
    a list with an int past int64 an OverflowError or 'a string tensor holds a value of type int'."""
    i8, u64 = np.arange(3, dtype=np.int8), np.arange(3, dtype=np.uint64)
    x = np.zeros((3, 4), np.float32)
    refused = [
        (lambda: onnxop_cli.pad(i8, pads=[1, 0], constant_value=128), "constant_value 128 cannot be int8"),
        (lambda: onnxop_cli.pad(u64, pads=[1, 0], constant_value=-1), "constant_value -1 cannot be uint64"),
        (lambda: onnxop_cli.pad(i8, pads=[1, 0], constant_value=1.7), "constant_value 1.7 cannot be int8"),
        (lambda: onnxop_cli.pad(np.array([True]), pads=[1, 0], constant_value=2), "constant_value 2 cannot be bool"),
        (lambda: onnxop_cli.pad(x, pads=[0, 10**20, 0, 0]), f"pads [0, {10**20}, 0, 0] cannot be int64"),
        (lambda: onnxop_cli.gather(x, indices=[-1, 2**63]), f"indices [-1, {2**63}] cannot be int64"),
        (lambda: onnxop_cli.trilu(x, k=2**63), f"k {2**63} cannot be int64"),
        (lambda: onnxop_cli.gather(x, [10**20]), f"indices [{10**20}] cannot be int64"),
        (lambda: onnxop_cli.flatten([10**20]), f"x: [{10**20}] holds an integer past int64 and uint64"),
        (lambda: onnxop_cli.eye_like(x, k=2**63), "k must be an integer in int64's range"),
        (lambda: onnxop_cli.shape(x, start=-2**63 - 1), "start must be an integer in int64's range"),
        (lambda: onnxop_cli.slice_(x, [2**63], [1]), "starts must be integers in int64's range"),
    ]
    for call, message in refused:
        with pytest.raises(UsageError) as info:
            call()
        assert message in info.value.message and "\n" not in info.value.message, info.value.message
    kept = [(onnxop_cli.pad(i8, pads=[1, 0], constant_value=-128, backend=backend), [-128, 0, 1, 2]),
            (onnxop_cli.pad(u64, pads=[1, 0], constant_value=2**64 - 1, backend=backend), [2**64 - 1, 0, 1, 2]),
            (onnxop_cli.pad(np.arange(2, dtype=ml_dtypes.int4), pads=[1, 0], constant_value=-8, backend=backend),
             [-8, 0, 1]),
            (onnxop_cli.trilu(x[:2, :2] + 1, k=-2**63, backend=backend), [[1, 1], [1, 1]]),
            (onnxop_cli.gather(np.arange(5), indices=[-5, 4], backend=backend), [0, 4]),
            (onnxop_cli.resize(np.arange(2.0, dtype=np.float32), scales=[2], backend=backend), [0, 0, 1, 1])]
    # a list whose own type the input takes keeps it: OneHot's values (any type) as given, not int64 [0, 1]
    got = onnxop_cli.one_hot([0, 2], 3, values=[-0.5, 1.5], backend=backend)
    assert got.tolist() == [[1.5, -0.5, -0.5], [-0.5, -0.5, 1.5]]
    for got, want in kept:
        assert [[int(v) for v in row] for row in got] == want if got.ndim == 2 else [int(v) for v in got] == want


def test_tensor_operators_check_their_attributes_types(backend):
    """The tensor operators' attributes are held to their schema's type, as the view functions' parameters are:
    a float for an INT attribute was truncated (axis=1.5 gathered along axis 1, upper=0.5 made Trilu lower),
    a string one taken ('1'), a list a TypeError."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for call, message in [
        (lambda: onnxop_cli.gather(x, [0], axis=1.5), r"^Gather-13: axis must be an integer, got 1\.5$"),
        (lambda: onnxop_cli.trilu(x, upper=0.5), r"^Trilu-14: upper must be an integer, got 0\.5$"),
        (lambda: onnxop_cli.split(x, num_outputs=2.7), r"^Split-18: num_outputs must be an integer, got 2\.7$"),
        (lambda: onnxop_cli.shape(x, start="1"), r"^Shape-\d+: start must be an integer, got '1'$"),
        (lambda: onnxop_cli.gather(x, [0], axis=[1]), r"^Gather-13: axis must be an integer, got \[1\]$"),
        (lambda: onnxop_cli.center_crop_pad(x, [1, 1], axes=[0, 1.0]), r"^CenterCropPad-18: axes must be integers"),
        (lambda: onnxop_cli.pad(x, [0, 1, 0, 1], mode=3), r"^Pad-\d+: mode must be a string, got 3$"),
        # a FLOAT attribute took anything (cubic_coeff_a='x', extrapolation_value=[1.0]); a TENSOR one's
        # [None] was int()'s TypeError and 2**70 'ConstantOfShape: no opset allows string'
        (lambda: onnxop_cli.resize(x, None, [1, 2], cubic_coeff_a="x"), r"^Resize-19: cubic_coeff_a must be a number, "
                                                                        r"got 'x'$"),
        (lambda: onnxop_cli.resize(x, None, [1, 2], extrapolation_value=[1.0]), r"^Resize-19: extrapolation_value "
                                                                                r"must be a number, got \[1\.0\]$"),
        (lambda: onnxop_cli.constant_of_shape([2], value=[None]), r"^value: \[None\] holds None, which is no number"),
        (lambda: onnxop_cli.constant_of_shape([2], value=2**70), r"^value: \d+ holds an integer past int64 and uint64"),
    ]:
        with pytest.raises(UsageError, match=message):
            call()
    assert onnxop_cli.gather(x, [0], axis=np.int64(1), backend=backend).tolist() == [[0.0], [3.0]]
    assert onnxop_cli.trilu(x, upper=False, backend=backend).tolist() == [[0, 0, 0], [3, 4, 0]]
    assert [a.shape for a in onnxop_cli.split(x, axis=-1, num_outputs=3, backend=backend)] == [(2, 1)] * 3


def test_lists_numpy_cannot_type_are_refused_by_what_they_hold():
    """A ragged list was numpy's ValueError (no OnnxopError), a list with None 'a string tensor holds a value of type
    int, not text'; each is a UsageError naming what numpy could not make an array of."""
    for value, message in [([[1], [2, 3]], "x: [[1], [2, 3]] is no array: setting an array element with a sequence"),
                           ([1, None], "x: [1, None] holds None, which is no number or text an ONNX tensor holds"),
                           ({"a": 1}, "x: {'a': 1} is no number or text an ONNX tensor holds")]:
        with pytest.raises(UsageError) as info:
            flatten(value)
        assert info.value.message.startswith(message), info.value.message
    with pytest.raises(UsageError, match=r"^inputs_1: \[2, None\] holds None"):
        onnxop_cli.concat([1], [2, None], axis=0)


def test_positional_lists_take_their_inputs_type_as_named_ones_do(backend):
    """A list given positionally was numpy's own type (int64, float64), where the same list by name took the
    data's: concat(int8s, [[9], [9]]) and pad(int8s, pads, 7) were refused as two types, where(c, float32s,
    [0.25, 0.5]) as float32 and float64. A variadic input's lists take the first array's type; a value the type
    cannot hold is refused as by name; more inputs than the operator has are refused in one line."""
    a = np.arange(4, dtype=np.int8).reshape(2, 2)
    f = np.array([1.5, 2.0], np.float32)
    got = onnxop_cli.concat([[9], [9]], a, axis=1, backend=backend)
    assert got.dtype == np.int8 and got.tolist() == [[9, 0, 1], [9, 2, 3]]
    assert onnxop_cli.pad(a, [1, 0, 0, 0], 7, backend=backend).tolist() == [[7, 7], [0, 1], [2, 3]]
    got = onnxop_cli.where(np.array([True, False]), f, [0.25, -0.0], backend=backend)
    assert got.dtype == np.float32 and got.tobytes() == np.array([1.5, -0.0], np.float32).tobytes()
    got = onnxop_cli.scatter_elements(a, [[0]], [[5]], backend=backend)
    assert got.dtype == np.int8 and got.tolist() == [[5, 1], [2, 3]]
    for call, message in [
        (lambda: onnxop_cli.concat(a, [[300], [9]], axis=1), r"^Concat-13: inputs_1 \[\[300\], \[9\]\] cannot be int8"),
        (lambda: onnxop_cli.pad(a, [1, 0, 0, 0], 7.5), r"^Pad-\d+: constant_value 7\.5 cannot be int8"),
        (lambda: onnxop_cli.gather(a, [0], [1]), r"^Gather-13 takes 2 input\(s\) \(data, indices\), 3 were given$"),
        (lambda: onnxop_cli.pad(a, [1, None]), r"^pads: \[1, None\] holds None"),
    ]:
        with pytest.raises(UsageError, match=message):
            call()


def test_a_second_wgpu_backend_in_one_process_says_why_it_is_refused():
    """A call naming another backend than the process's first (wgpu opens one instance, for the backends of its
    first call) said only 'was not initialised in this process (instance has vulkan)': it says an earlier call
    opened it and what to do."""
    code = ("import numpy as np, onnxop_cli as O\n"
            "O.transpose(np.zeros((2, 3)), backend='vulkan')\n"
            "try:\n    O.transpose(np.zeros((2, 3)), backend='gl')\n"
            "except O.GpuError as e:\n    print(e.message)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if "no adapter" in done.stderr.lower() or "NoAdapterError" in done.stderr:
        pytest.skip("no vulkan adapter here")
    assert done.stdout == ("backend 'gl' was not initialised in this process (instance has vulkan: an earlier call "
                           "opened wgpu for it, and wgpu takes the backends of its first call only; use one backend "
                           "per process)\n"), done.stderr


@pytest.mark.parametrize("call", [lambda: onnxop_cli.tile(np.ones((1, 1, 1), np.float32), [2**40, 1, 1]),
                                  lambda: onnxop_cli.constant_of_shape([2**40])])
def test_an_output_larger_than_memory_is_refused_in_one_line(backend, call):
    # numpy's MemoryError ("Unable to allocate 4.00 TiB ...") reached the caller before
    with pytest.raises(onnxop_cli.OutputError) as info:
        call()
    assert re.fullmatch(r"output 'output': it needs 4398046511104 bytes \(4\.0 TiB\) of memory and \d+ \(.+\) "
                        r"are available; not made", info.value.message)

"""NonZero: the coordinates of the non-zero elements, written by
gpu/render/nonzero.py's kernel (gpu/nonzero.py), exact against onnx.reference and
onnxruntime on random bits with zeros, -0.0 and NaNs mixed in; every type
of NonZero-13, ranks 0-5, several workgroups and a 2-D dispatch grid,
Fortran order, big-endian, no non-zero element at all; the CLI and --json."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxop_cli
from conftest import cli, random_array
from tensor_refs import ort, reference, same
from onnxop_cli.core.tensor import dtype_by_name
from onnxop_cli.errors import GpuError, OpError
from onnxop_cli.ops import op_version

TYPES = sorted(op_version("NonZero", 13).allowed_types() - {"string"})


def with_zeros(rng, shape, dtype) -> np.ndarray:
    """Random bits (never zero on their own), about a third of them made zero."""
    x = random_array(rng, shape, dtype).copy()
    flat = x.reshape(-1)
    if flat.size:
        zero = rng.random(flat.size) < 0.35
        flat.view(np.uint8).reshape(flat.size, -1)[zero] = 0
    return x


def check(x: np.ndarray, backend: str, opset: int = 13) -> np.ndarray:
    got = onnxop_cli.non_zero(x, backend=backend, opset=opset)
    native = x.astype(x.dtype.newbyteorder("="))  # onnxruntime reads a big-endian float16 array's bytes as they are
    (want,) = reference("NonZero", opset, [native], out_types=[7])
    assert got.dtype == np.int64 and same(got, want.astype(np.int64)), (x.dtype, x.shape)
    found = ort("NonZero", opset, [native], out_types=[7])
    if found is not None and x.ndim:  # onnxruntime answers a scalar (1, count); the reference, (0, count)
        assert same(got, found[0])
    return got


@pytest.mark.parametrize("name", TYPES)
def test_every_type_against_the_references(backend, rng, name):
    x = with_zeros(rng, (3, 7, 37), dtype_by_name(name).numpy)  # 777 elements: four workgroups
    if x.dtype.kind == "f" or name == "bfloat16":
        bits = x.reshape(-1).view(f"u{x.dtype.itemsize}")
        bits[1] = 1 << (8 * x.dtype.itemsize - 1)  # -0.0 is zero
    got = check(x, backend)
    assert 0 < got.shape[1] < x.size


@pytest.mark.parametrize("shape", [(1,), (5,), (256,), (257,), (2, 3, 4, 5, 6), (0, 3), (4, 0), (300, 1)])
def test_shapes(backend, rng, shape):
    check(with_zeros(rng, shape, np.float32), backend)


def test_complex_parts_and_float_signs(backend):
    x = np.array([0, -0.0, complex(-0.0, -0.0), complex(0, -0.0), complex(-0.0, 1e-45), complex(np.nan, 0)],
                 np.complex64)
    assert check(x, backend).tolist() == [[4, 5]]
    d = np.array([-0.0, 0.0, 5e-324, -5e-324, np.inf], np.float64)
    assert check(d, backend).tolist() == [[2, 3, 4]]


def test_nothing_and_everything(backend, rng):
    assert check(np.zeros((4, 5), np.int32), backend).shape == (2, 0)
    x = random_array(rng, (9, 31), np.int16) | 1
    assert check(x, backend).shape == (2, 9 * 31)


def test_a_scalar_is_rank_zero(backend):
    assert onnxop_cli.non_zero(np.float32(2.5), backend=backend).shape == (0, 1)
    assert onnxop_cli.non_zero(np.float32(-0.0), backend=backend).shape == (0, 0)
    # a string scalar too: numpy's nonzero refuses a 0-d array, which was a traceback ('Calling nonzero on 0d
    # arrays is not allowed') where onnx.reference gives (0, 1) and (0, 0)
    for text, count in (("abc", 1), ("", 0)):
        got = onnxop_cli.non_zero(np.array(text, dtype=object), backend=backend)
        assert got.shape == (0, count) and got.dtype == np.int64


def test_fortran_and_big_endian(backend, rng):
    x = with_zeros(rng, (6, 5, 4), np.float64)
    check(np.asfortranarray(x), backend)
    check(x.astype(">f8"), backend)
    check(with_zeros(rng, (40, 3), np.float16).astype(">f2"), backend)
    check(with_zeros(rng, (3, 50), np.complex64).astype(">c8"), backend)
    bf = with_zeros(rng, (7, 11), dtype_by_name("bfloat16").numpy)
    check(np.asfortranarray(bf), backend)


def test_strings_take_the_host_path(backend):
    s = np.array([["a", ""], ["", "xyz"]], dtype=object)
    got = onnxop_cli.non_zero(s, backend=backend)
    assert got.tolist() == [[0, 1], [0, 1]] and got.dtype == np.int64


def test_the_opset_decides_bfloat16(backend):
    x = np.ones(3, dtype_by_name("bfloat16").numpy)
    with pytest.raises(OpError, match=r"NonZero: opset 12 \(NonZero-9\) does not allow bfloat16; "
                                      r"bfloat16 was added in NonZero-13"):
        onnxop_cli.non_zero(x, opset=12, backend=backend)


def test_a_two_dimensional_grid_and_the_count_check(gpu, rng):
    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.gpu.indexed import Data
    from onnxop_cli.gpu.nonzero import nonzero_indices

    x = with_zeros(rng, (33, 41), np.int32)  # 1353 elements, 6 workgroups on a 4-wide grid: 2 rows
    e = Data(MemoryBytes(x), x.shape, 32, 0, (41, 1))
    total = int(np.count_nonzero(x))
    out = bytearray()
    assert nonzero_indices(gpu, e, "int32", total, out.extend, max_groups_per_dim=4) == 16 * total
    assert np.frombuffer(bytes(out), np.int64).reshape(2, total).tolist() == np.array(np.nonzero(x)).tolist()
    with pytest.raises(GpuError, match=rf"NonZero: the device counted {total} non-zero elements, the host {total + 1}"):
        nonzero_indices(gpu, e, "int32", total + 1, bytearray().extend)


def test_the_data_goes_through_the_kernel(backend, rng, monkeypatch):
    import onnxop_cli.gpu.nonzero as kernel

    calls = []
    real = kernel.nonzero_indices
    monkeypatch.setattr(kernel, "nonzero_indices", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    check(with_zeros(rng, (20, 20), np.uint8), backend)
    assert len(calls) == 1


def test_cli_and_json(cwd, capsys):
    np.save("x.npy", np.array([[1.5, 0.0, -0.0], [np.nan, 0.0, 2.0]], np.float32))
    code, out, err = cli(capsys, "non-zero", "x.npy", "-o", "nz.npy")
    assert code == 0, err
    assert out == "NonZero: x (2, 3) float32 -> Y (2, 3) int64, wrote nz.npy\n"
    assert np.load("nz.npy").tolist() == [[0, 1, 1], [0, 0, 2]]
    code, out, err = cli(capsys, "non-zero", "x.npy", "--json")
    assert code == 0, err
    (output,) = json.loads(out)["runs"][0]["outputs"]
    assert output["kernel"] == "nonzero" and output["shape"] == [2, 3]


def _sparse_npy(path: str, shape: tuple[int, ...]) -> None:
    """An .npy of uint8 zeros of ``shape``, its data a hole in the file (no disk, no time)."""
    import io
    import os

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "|u1", "fortran_order": False, "shape": shape})
    with open(path, "wb") as f:
        f.write(head.getvalue())
    os.truncate(path, len(head.getvalue()) + int(np.prod(shape)))


def test_data_of_2_32_elements_is_refused_before_it_is_read(cwd, capsys, monkeypatch):
    """The kernel indexes fewer than 2^32 elements. The plan counted every element on the host
    before the device refused: a 4.3 GB .npy took 18 s and 4.3 GB of RSS to be refused. The plan
    refuses it first, and Gather's refusal of such data says the same bound (it said 'at most 2^32')."""
    from onnxop_cli.core.tensor import Tensor
    from onnxop_cli.errors import ExitCode
    from conftest import error_of

    _sparse_npy("z.npy", (1 << 16, 1 << 16))

    def unread(*_, **__):
        raise AssertionError("the data was read")

    with monkeypatch.context() as patch:
        patch.setattr(Tensor, "to_numpy", unread)
        code, out, err = cli(capsys, "non-zero", "z.npy")
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err) == "z.npy: NonZero: the data has 4294967296 elements; the device indexes at most 2^32 - 1"
    code, out, err = cli(capsys, "gather", "z.npy", "--indices", "0")
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err) == "Gather: the data has 4294967296 elements; the device indexes at most 2^32 - 1"

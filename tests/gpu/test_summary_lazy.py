"""Printing and --json make only what they show.

- Tile, string tensors and every operator that tiles its output with pieces
  (Concat, Split, Pad, CenterCropPad, Where, Trilu, Compress, BitCast,
  ConstantOfShape, OneHot, EyeLike): the whole output's pieces are cut to the
  shown entries (core/shown.py) and only those are made. The summary text is
  the whole result's, for every op kind, dtype and layout (the first tests).
- A real process: huge results printed with $TMPDIR on a 1 MiB tmpfs and
  ``ulimit -v`` at 3 GB, so neither a spill file nor an allocation of the
  result could happen (every case's commands in one: tests/commands.py).
- ``show`` of a large file reads its statistics slice by slice: peak RSS far
  below the file's size, the statistics those of the whole array, and a
  SIGTERM during the read ends the run through onnxop's handler.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core import apply as core
from onnxop_cli.core import apply_tensors as fam
from onnxop_cli.core.region import Access, Fill
from onnxop_cli.core.shown import narrow, view_piece
from onnxop_cli.core.summary import EDGE_ITEMS, summarised_tensor_op, summarised_result
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.ops import make_node, op_version
from onnxop_cli.ops.base import Node
from onnxop_cli.render.values import SUMMARY_THRESHOLD, format_values

I64 = np.int64

# (op, opset, attributes, inputs: a function of (rng, dtype) -> arrays)
TENSOR_OPS = [
    ("Concat", 13, {"axis": 1}, lambda r, d: [random_array(r, (9, 13, 11), d), random_array(r, (9, 5, 11), d)]),
    ("Split", 18, {"axis": 2}, lambda r, d: [random_array(r, (9, 7, 30), d), np.array([4, 26], I64)]),
    *[("Pad", 19, {"mode": m}, lambda r, d: [random_array(r, (9, 13, 11), d), np.array([2, 30, 1, 1, 25, -2], I64)])
      for m in ("constant", "reflect", "edge", "wrap")],
    ("Pad", 19, {"mode": "wrap"}, lambda r, d: [random_array(r, (2, 3), d), np.array([0, 40, 30, 47], I64)]),
    ("CenterCropPad", 18, {}, lambda r, d: [random_array(r, (9, 13, 11), d), np.array([5, 20, 9], I64)]),
    ("Where", 16, {}, lambda r, d: [r.integers(0, 2, (9, 13, 11)).astype(bool), random_array(r, (9, 1, 11), d),
                                    random_array(r, (13, 1), d)]),
    ("Trilu", 14, {"upper": 1}, lambda r, d: [random_array(r, (3, 17, 19), d), np.array(2, I64)]),
    ("Trilu", 14, {"upper": 0}, lambda r, d: [random_array(r, (3, 19, 17), d), np.array(-4, I64)]),
    ("Compress", 11, {"axis": 1}, lambda r, d: [random_array(r, (9, 30, 11), d), r.integers(0, 2, 30).astype(bool)]),
    ("Compress", 11, {}, lambda r, d: [random_array(r, (9, 30, 11), d), r.integers(0, 2, 2000).astype(bool)]),
    ("EyeLike", 9, {"k": 3}, lambda r, d: [random_array(r, (40, 37), d)]),
    ("EyeLike", 9, {"k": -5}, lambda r, d: [random_array(r, (37, 40), d)]),
    ("ConstantOfShape", 9, {}, lambda r, d: [np.array([30, 40, 7], I64)]),
    ("OneHot", 11, {"axis": 1}, lambda r, d: [r.integers(-10, 10, (7, 9)).astype(I64), np.array(20, I64),
                                              random_array(r, (2,), d)]),
    ("BitCast", 26, {"to": 7}, lambda r, d: [random_array(r, (9, 13, 11), "float64")]),
]
KINDS = [("float32", "C"), ("int8", "C"), ("bool", "C"), ("float64", "F"), ("float32", ">")]


def _layouts(arrays, layout):
    """The inputs as stored: row-major, Fortran-ordered or big-endian (the
    GPU re-lays those out; the narrowed pieces must read them as the whole
    plan does)."""
    out = []
    for a in arrays:
        if layout == "F" and a.ndim > 1:
            a = np.asfortranarray(a)
        elif layout == ">" and a.dtype.itemsize > 1 and a.dtype.kind in "fiu":
            a = a.astype(a.dtype.newbyteorder(">"))
        out.append(a)
    return out


def _tensor_op_texts(op_type, opset, attrs, arrays, backend):
    op = op_version(op_type, opset)
    names = op.expanded_inputs(len(arrays))
    tensors = [Tensor.from_numpy(a, n) for a, n in zip(arrays, names)]
    node = Node(op, attrs, opset=opset)
    lazy = summarised_tensor_op(node, tensors, edge=EDGE_ITEMS, threshold=0, backend=backend)
    whole = fam.apply_node(node, tensors, backend=backend)
    assert lazy is not None, f"{op_type}: made whole"
    assert all(t.data is None and t.strings is None for t in lazy.outputs)
    assert [t.shape for t in lazy.outputs] == [t.shape for t in whole.outputs]
    assert lazy.note == whole.note
    return [(format_values(v, summarised=s), format_values(t.to_numpy()), t.size)
            for (v, s), t in zip(lazy.shown, whole.outputs)]


# ConstantOfShape's and BitCast's input types are their own: float32 only (not made only to be skipped)
TENSOR_OP_KINDS = [
    pytest.param(c, dtype, layout, id=f"{c[0]}-{c[2].get('mode', '')}{i}-{dtype}-{layout}")
    for i, c in enumerate(TENSOR_OPS) for dtype, layout in KINDS
    if c[0] not in ("ConstantOfShape", "BitCast") or dtype == "float32"
]


# The summary's text against the whole result's (core/shown.py cuts the plan, render/ prints): host code. The cut
# pieces run the whole plan's kernels, on every backend in their own tests; the cut pieces' dispatches, poisoned,
# on every backend in test_shown_cuts.py and test_shown_chains.py.
@pytest.mark.one_backend
@pytest.mark.parametrize("case,dtype,layout", TENSOR_OP_KINDS)
def test_a_tensor_operator_summary_is_the_whole_results(gpu, backend, rng, case, dtype, layout):
    op_type, opset, attrs, make = case
    arrays = _layouts(make(rng, dtype), layout)
    for lazy, whole, size in _tensor_op_texts(op_type, opset, attrs, arrays, backend):
        assert size > SUMMARY_THRESHOLD  # summarised by numpy: the only case the caller meets
        assert lazy == whole


VIEW = [
    ("Tile", {"repeats": [2, 3, 1]}, (9, 13, 11)),
    ("Tile", {"repeats": [5, 1, 4]}, (9, 13, 11)),
    ("Tile", {"repeats": [3, 7, 2]}, (3, 5, 2)),
    ("Tile", {"repeats": [400, 3, 9]}, (2, 3, 1)),
    ("Tile", {"repeats": [2000]}, (3,)),
    ("Tile", {"repeats": [1, 1]}, (40, 41)),
]


@pytest.mark.one_backend  # as above: a Tile's summary text; the view kernels fan out in test_view_ops.py
@pytest.mark.parametrize("dtype,layout", KINDS)
@pytest.mark.parametrize("case", VIEW, ids=[f"{c[0]}{c[1]['repeats']}" for c in VIEW])
def test_a_tile_summary_is_the_whole_results(gpu, backend, rng, case, dtype, layout):
    op, attrs, shape = case
    (a,) = _layouts([random_array(rng, shape, dtype)], layout)
    node = make_node(op, **attrs)
    tensor = Tensor.from_numpy(a, "x")
    found = summarised_result(node, tensor, edge=EDGE_ITEMS, threshold=0, backend=backend)
    assert found is not None
    result = found
    ((values, _),) = result.shown
    whole = core.apply(node, tensor, backend=backend)
    assert result.output.data is None and result.output.shape == whole.output.shape
    assert format_values(values, summarised=True) == format_values(np.tile(a, attrs["repeats"]))
    assert format_values(values, summarised=True) == format_values(whole.output.to_numpy())


def _strings(rng, shape):
    words = np.array(["", "a", "bb", "ünï", "x\ny", "long word"], dtype=object)
    return words[rng.integers(0, len(words), shape)]


@pytest.mark.parametrize("case", [
    ("Tile", {"repeats": [1, 200, 3]}), ("Transpose", {"perm": [2, 0, 1]}), ("Expand", {"shape": [40, 13, 11]}),
    ("Slice", {"starts": [0, 12], "ends": [9, 0], "axes": [0, 1], "steps": [1, -1]}),
], ids=lambda c: c[0] if isinstance(c, tuple) else str(c))
def test_a_string_summary_is_made_from_the_shown_strings_only(rng, case):
    op, attrs = case
    a = _strings(rng, (1, 13, 11) if op == "Expand" else (9, 13, 11))
    node = make_node(op, **attrs)
    tensor = Tensor.from_numpy(a, "s")
    found = summarised_result(node, tensor, edge=EDGE_ITEMS, threshold=0)
    assert found is not None
    result = found
    ((values, _),) = result.shown
    whole = core.apply(node, tensor)
    assert result.note == whole.note and result.adapter == "host"
    assert values.size < whole.output.size
    assert format_values(values, summarised=True) == format_values(whole.output.to_numpy())


@pytest.mark.parametrize("case", [
    ("Concat", 13, {"axis": 2}, lambda s: [s, s]),
    ("Pad", 19, {"mode": "reflect"}, lambda s: [s, np.array([2, 3, 1, 1, 4, 2], I64)]),
    ("Where", 16, {}, lambda s: [s != "a", s, s[:, :1]]),
], ids=lambda c: c[0] if isinstance(c, tuple) else str(c))
def test_a_tensor_operator_string_summary_is_the_whole_results(rng, case):
    op_type, opset, attrs, make = case
    s = _strings(rng, (9, 13, 11))
    for lazy, whole, _ in _tensor_op_texts(op_type, opset, attrs, make(s), None):
        assert lazy == whole


def test_only_the_shown_entries_are_made():
    """The narrowed pieces of a 24 TiB Tile cover 8 x 8 elements, and a
    piece laid out across the axes (a diagonal) is cut element by element."""
    from onnxop_cli.core.pieces import Piece

    pieces = narrow([view_piece(Access((100000, 2, 100000, 3), (0, 3, 0, 1), 0))], (200000, 300000), EDGE_ITEMS)
    assert pieces is not None and sum(p.size for p in pieces) == 8 * 8
    diagonal = Piece((10**6,), (10**6 + 1,), 0, Fill(b"\x01\0\0\0"))
    pieces = narrow([diagonal], (10**6, 10**6), EDGE_ITEMS)
    assert pieces is not None and [p.dst_offset for p in pieces] == [0, 9, 18, 27, 36, 45, 54, 63]


# ------------------------------------------------------------ real processes


@contextlib.contextmanager
def _small_tmpdir(tmp: Path):
    """A 1 MiB tmpfs mounted on ``tmp`` while the caller runs."""
    tmp.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(tmp)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield tmp
    finally:
        subprocess.run(["umount", str(tmp)], capture_output=True)


def _limited() -> None:  # an address space far below any of these results
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _output_block(stdout: str) -> tuple[str, str]:
    """The output's header line and its values, unindented."""
    head, _, body = stdout.rpartition("Outputs:\n")[2].partition("\n")
    return head.strip(), "\n".join(line[4:] for line in body.rstrip("\n").splitlines())


def _one_hot_shown() -> np.ndarray:
    """Indices 0, 5, 999999999, -1 at depth 10^9: the shown entries of the
    last axis are 0-3 and the last four, so 5 shows as zeros."""
    shown = np.zeros((2, 2, 8), np.float32)
    shown[0, 0, 0] = shown[1, 0, 7] = shown[1, 1, 7] = 1
    return shown


def _huge_cases(rng):
    a = random_array(rng, (2, 3), "float32")
    s = _strings(rng, (2, 3))
    idx = np.array([[0, 5], [999_999_999, -1]], I64)
    return {
        "x.npy": a, "s.npy": s.astype(str), "shape.npy": np.array([1_000_000, 1_000_000, 3], I64), "i.npy": idx,
    }, [
        # (argv, output header, the same summary from a small array)
        (["tile", "x.npy", "--repeats", "100000,100000"], "output: shape=(200000, 300000), dtype=float32",
         np.tile(a, (4, 3))),
        (["tile", "s.npy", "--repeats", "100000,100000"], "output: shape=(200000, 300000), dtype=object",
         np.tile(s.astype(str).astype(object), (4, 3))),
        (["expand", "s.npy", "--shape", "1048576,1048576,2,3"], "output: shape=(1048576, 1048576, 2, 3), dtype=object",
         np.broadcast_to(s.astype(str).astype(object), (8, 8, 2, 3))),
        (["constant-of-shape", "shape.npy", "--value", "7"], "output: shape=(1000000, 1000000, 3), dtype=float32",
         np.full((8, 8, 3), 7, np.float32)),
        (["one-hot", "i.npy", "--depth", "1000000000", "--values", "0,1"],
         "output: shape=(2, 2, 1000000000), dtype=float32",
         _one_hot_shown()),
        (["pad", "x.npy", "--pads", "0,100000,100000,100000", "--mode", "wrap"],
         "output: shape=(100002, 200003), dtype=float32",
         np.pad(a, ((0, 6), (7, 7)), mode="wrap")),  # begins congruent modulo the period
        (["pad", "x.npy", "--pads", "100000,100000,100000,100000", "--mode", "reflect"],
         "output: shape=(200002, 200003), dtype=float32",
         np.pad(a, ((6, 6), (8, 8)), mode="reflect")),
    ]


def backend_params(metafunc) -> bool:
    """The huge-result processes test the CLI, not a kernel: the first backend only."""
    if metafunc.function.__name__ != "test_a_huge_result_is_printed_from_its_shown_elements":
        return False
    from conftest import BACKENDS

    metafunc.parametrize("backend", BACKENDS[:1], indirect=True, scope="session")
    return True


HUGE_JSON = (0, 3)  # the cases also run with --json


@pytest.fixture(scope="module")
def huge(tmp_path_factory, backend) -> tuple[dict, Path]:
    """Each huge case printed (and HUGE_JSON's with --json), a folder each, in one process under
    ``ulimit -v`` 3 GB with $TMPDIR a 1 MiB tmpfs (the run's peak address space is the highest of its
    commands', so each stayed under it): k -> its results in order; the tmpfs."""
    from commands import driver, jobs, results

    top = tmp_path_factory.mktemp("huge")
    commands = []
    for k in range(7):
        folder = top / str(k)
        folder.mkdir()
        files, cases = _huge_cases(np.random.default_rng(k))
        for name, array in files.items():
            np.save(folder / name, array)
        commands.append((folder, cases[k][0]))
        if k in HUGE_JSON:
            commands.append((folder, [*cases[k][0], "--json"]))
    with _small_tmpdir(top / "tmp") as tmp:
        env = {**os.environ, "ONNXOP_BACKEND": backend, "TMPDIR": str(tmp), "COLUMNS": "200"}
        done = subprocess.run(driver(), input=jobs(commands), capture_output=True, text=True, env=env,
                              errors="surrogateescape", timeout=300, preexec_fn=_limited)
        assert done.returncode == 0, done.stdout + done.stderr
        found = iter(results(commands, done.stdout))
        yield {k: [next(found) for _ in range(2 if k in HUGE_JSON else 1)] for k in range(7)}, tmp


@pytest.mark.parametrize("k", range(7), ids=["tile", "tile-strings", "expand-strings", "constant-of-shape",
                                              "one-hot", "pad-wrap", "pad-reflect"])
def test_a_huge_result_is_printed_from_its_shown_elements(huge, k):
    """No spill file (a 1 MiB $TMPDIR) and no allocation of the result
    (ulimit -v 3 GB): every value shown is the small reference's (fixture huge)."""
    _, cases = _huge_cases(np.random.default_rng(k))
    argv, header, small = cases[k]
    ran, small_tmpdir = huge
    done = ran[k][0]
    assert done.returncode == 0, (argv, done.stderr)
    head, values = _output_block(done.stdout)
    assert head.startswith(header), (argv, head)
    assert values == format_values(small, summarised=True), argv
    if k in HUGE_JSON:
        done = ran[k][1]
        assert done.returncode == 0, (argv, done.stderr)
        doc = json.loads(done.stdout)
        shape = [int(x) for x in header.split("(")[1].split(")")[0].split(",")]
        assert doc["status"] == "ok" and doc["runs"][0]["outputs"][0]["shape"] == shape
    assert os.listdir(small_tmpdir) == []


def _sparse_npy(path: Path, count: int, rng) -> np.ndarray:
    """A float32 .npy of ``count`` elements, zeros but for random values at
    both ends (a sparse file: no disk written for the middle)."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32)) | {"shape": (count,)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        data_at = f.tell()
        f.truncate(data_at + 4 * count)
        ends = random_array(rng, (2, 4096), "float32")
        f.write(ends[0].tobytes())
        f.seek(data_at + 4 * (count - 4096))
        f.write(ends[1].tobytes())
    return np.load(path, mmap_mode="r")


PEAK = """import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.stdout)"""


def test_show_of_a_large_file_holds_a_few_slices(tmp_path, rng):
    """A 256 MiB tensor: show's statistics are the whole array's, and its
    peak RSS stays below the file's size (reading through the mapping held
    all of it, on top of the 170 MiB or so an onnxop show holds of its own
    with a few 16 MiB slices; each MiB more read costs CPU time, not proof)."""
    from onnxop_cli.render.show import stats
    from onnxop_cli.core.tensor import dtype_by_name

    a = _sparse_npy(tmp_path / "big.npy", 64 << 20, rng)
    argv = [sys.executable, "-m", "onnxop_cli", "-q", "show", str(tmp_path / "big.npy"), "--json"]
    done = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, timeout=600)
    rc, peak_kib = map(int, done.stdout.split("\n")[0].split())
    assert rc == 0, done.stdout
    doc = json.loads(done.stdout.split("\n", 1)[1])
    expect = stats(a, dtype_by_name("float32"))
    got = doc["files"][0]["tensors"][0]
    assert got["stats"] == expect
    assert peak_kib < 256 * 1024, f"peak RSS {peak_kib} KiB for a 256 MiB file"


def test_show_is_interrupted_between_slices(tmp_path, rng):
    """SIGTERM while the statistics of a 4 GiB (sparse) file are read: the
    handler ends the run (exit 143, one line), not the signal's default."""
    _sparse_npy(tmp_path / "huge.npy", 1 << 30, rng)
    proc = subprocess.Popen([sys.executable, "-m", "onnxop_cli", "-q", "show", str(tmp_path / "huge.npy")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    io_file = Path(f"/proc/{proc.pid}/io")
    # until the statistics' reads are under way (reads of 16 MiB; onnxop's start reads about 6 MB)
    while proc.poll() is None:
        rchar = int(io_file.read_text().split("rchar:")[1].split()[0]) if io_file.exists() else 0
        if rchar > 64 << 20:
            break
        time.sleep(0.001)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.strip() == "onnxop: error: interrupted by SIGTERM"

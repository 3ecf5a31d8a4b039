"""Printing a graph's output makes only the shown elements through every node
of a chain (core/value_bytes.py): tiny models built with onnx.helper whose
printed output is GiBs, made by 2-4 operators that each read a value already
made by another (Expand -> Concat, Tile -> Pad, Shape -> ConstantOfShape ->
Transpose -> Pad, OneHot -> Pad, Split -> Gather, ScatterND -> Concat, a
reshaped transpose -> Slice -> Pad, a small Slice of a huge Concat, a
small Gather of a huge Expand, a small gather step of a huge one), each run as a real ``onnxop`` process
under the 1 GiB address cap and the peak RSS bound of test_print_memory.py.
Before, each made the value a later node reads whole, on the device or on
the host, and was killed or refused for memory.

The printed text must be onnx.reference's: each case also builds a small
version of its model, whose output's full values are the huge output's
shown ones (each long axis 8 long, the inputs narrowed to the entries the
shown ones read), runs it through onnx.reference and prints that with the
same printer."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper
from onnx.reference import ReferenceEvaluator
from made_once import made_once
from test_print_memory import PEAK, printed, run_capped, run_capped_commands, save_model, shown

from onnxop_cli.render.values import format_values

ONE_BACKEND = True  # memory is the host's whatever the adapter
# ScatterND's kernel holds a band of one binding of data and one of claims (gpu/scatter_claims.py:
# lavapipe's binding is 128 MiB), whatever the output: 460-480 MiB for 200 MB and for 1 GB alike
# (its single-operator print of 200 MB peaks at 740 MiB)
SCATTER_PEAK = 600 << 20


def _expand_concat(big: bool):
    """Two rows expanded to (n, n, 3) and concatenated on axis 1: 9.6 GB from 24 bytes."""
    n = 20000 if big else 8
    nodes = [helper.make_node("Expand", ["x", "s"], ["a"]), helper.make_node("Expand", ["x2", "s"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    x = np.arange(3, dtype=np.float32).reshape(1, 1, 3)
    return nodes, {"x": x, "x2": x + 10, "s": np.array([n, n, 3], np.int64)}


def _tile_pad(big: bool):
    """A (2, 3) input tiled (n, n) times, padded with 9.5: 9.6 GB."""
    n = 20000 if big else 4
    nodes = [helper.make_node("Tile", ["x", "r"], ["t"]), helper.make_node("Pad", ["t", "p", "v"], ["y"])]
    return nodes, {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "r": np.array([n, n], np.int64),
                   "p": np.array([1, 2, 1, 2], np.int64), "v": np.array(9.5, np.float32)}


def _fill_transpose_pad(big: bool):
    """Shape -> Concat -> ConstantOfShape -> Transpose -> Pad: 6.4 GB from a (2, n) input's shape."""
    n = 20000 if big else 8
    fill = helper.make_tensor("v", T.FLOAT, [1], [2.5])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Concat", ["s", "s"], ["c"], axis=0),
             helper.make_node("ConstantOfShape", ["c"], ["f"], value=fill),
             helper.make_node("Transpose", ["f"], ["t"], perm=[1, 0, 3, 2]),
             helper.make_node("Pad", ["t", "p", "w"], ["y"])]
    return nodes, {"x": np.zeros((2, n), np.float32), "p": np.array([1, 0, 0, 0, 0, 0, 0, 1], np.int64),
                   "w": np.array(-1, np.float32)}


def _where_transpose_concat(big: bool):
    """Where over an expanded row, transposed and concatenated: 3.2 GB from 100 KB."""
    rng = np.random.default_rng(7)
    c = rng.integers(0, 2, (20000, 1)).astype(bool)
    x = rng.standard_normal((1, 20000)).astype(np.float32)
    if not big:
        c, x = c[shown(20000)], x[:, shown(20000)]
    n = len(c)
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"]), helper.make_node("Where", ["c", "e", "z"], ["w"]),
             helper.make_node("Transpose", ["w"], ["t"]), helper.make_node("Concat", ["t", "t"], ["y"], axis=0)]
    return nodes, {"c": c, "x": x, "z": np.array(-7, np.float32), "s": np.array([n, n], np.int64)}


def _one_hot_pad(big: bool):
    """OneHot of concatenated indices, padded: 2 GB from 4 KB (a kernel of its own: streamed once)."""
    m, depth = 500, 500_000
    i = np.random.default_rng(3).integers(0, depth, m)
    i[[0, 1, -2, -1]] = [1, depth - 2, depth - 1, 0]
    if not big:  # the shown entries: depth 9, an index hidden in the huge output hidden here too
        i = i[shown(m)]
        i = np.where(i < 3, i, np.where(i >= depth - 4, i - depth + 9, 4))
        depth = 9
    nodes = [helper.make_node("Concat", ["i", "i"], ["c"], axis=0),
             helper.make_node("OneHot", ["c", "d", "v"], ["o"]), helper.make_node("Pad", ["o", "p", "w"], ["y"])]
    return nodes, {"i": i.astype(np.int64), "d": np.array(depth, np.int64), "v": np.array([0, 1], np.float32),
                   "p": np.array([0, 1, 0, 0], np.int64), "w": np.array(7, np.float32)}


def _split_gather(big: bool):
    """An expanded row split in two, a part gathered on its columns: 3.2 GB (the expansion 32 GB)."""
    rng = np.random.default_rng(11)
    row = rng.standard_normal((1, 20000)).astype(np.float32)
    idx = rng.integers(0, 20000, 4000)
    r = 400_000 if big else 16
    if not big:
        idx = idx[shown(4000)]
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"]),
             helper.make_node("Split", ["e"], ["a", "b"], axis=0, num_outputs=2),
             helper.make_node("Gather", ["b", "i"], ["y"], axis=1)]
    return nodes, {"x": row, "s": np.array([r, 20000], np.int64), "i": idx.astype(np.int64)}


def _scatter_concat(big: bool):
    """ScatterND of two rows into an expanded one, concatenated: 1 GB (a kernel of its own: streamed once).
    The scattered value is 500 MB, streamed through the kernel's band (lavapipe's device writes each of
    its bytes, the case's CPU seconds): its peak is the band's, ~445 MiB for 250 MB and 1 GB alike, and
    a concatenation made whole (1 GB) cannot even be allocated under the 1 GiB cap."""
    rng = np.random.default_rng(5)
    r, w = (25_000, 5000) if big else (8, 8)
    z = rng.standard_normal((1, 5000)).astype(np.float32)
    u = rng.standard_normal((2, 5000)).astype(np.float32)
    if not big:
        z, u = z[:, shown(5000)], u[:, shown(5000)]
    nodes = [helper.make_node("Expand", ["z", "s"], ["e"]), helper.make_node("ScatterND", ["e", "k", "u"], ["d"]),
             helper.make_node("Concat", ["d", "d"], ["y"], axis=0)]
    return nodes, {"z": z, "s": np.array([r, w], np.int64), "k": np.array([[0], [r - 1]], np.int64), "u": u}


def _reshape_slice_pad(big: bool):
    """A column expanded, transposed and flattened (no strides say it: a gather step), sliced, padded: 4 GB."""
    a, b = 1000, (1_000_000 if big else 2)
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"]), helper.make_node("Transpose", ["e"], ["t"]),
             helper.make_node("Reshape", ["t", "f"], ["r"]), helper.make_node("Slice", ["r", "st", "en"], ["c"]),
             helper.make_node("Pad", ["c", "p", "w"], ["y"])]
    return nodes, {"x": np.arange(a, dtype=np.float32).reshape(a, 1), "s": np.array([a, b], np.int64),
                   "f": np.array([-1], np.int64), "st": np.array([1], np.int64), "en": np.array([-1], np.int64),
                   "p": np.array([2, 1], np.int64), "w": np.array(-3, np.float32)}


def _concat_slice(big: bool):
    """Four rows across the seam of two expanded rows' Concat (12.8 GB): a small output, printed whole."""
    rng = np.random.default_rng(13)
    x, x2 = rng.standard_normal((2, 1, 20000)).astype(np.float32)
    n = 40000 if big else 8
    if not big:
        x, x2 = x[:, :8], x2[:, :8]
    nodes = [helper.make_node("Expand", ["x", "s"], ["a"]), helper.make_node("Expand", ["x2", "s"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["c"], axis=0), helper.make_node("Slice", ["c", "st", "en"], ["y"])]
    return nodes, {"x": x, "x2": x2, "s": np.array([n, x.shape[1]], np.int64),
                   "st": np.array([n - 2, 0], np.int64), "en": np.array([n + 2, 5], np.int64)}


def _gather_pad(big: bool):
    """200 rows gathered from a column expanded to 3.2 GB (3x the address cap), padded: a 1.6 MB value
    made from 200 of its rows. (The 400,000 elements the Gather reads are listed on the host, each
    one a CPU cost: 20,000 columns took 10 CPU s a command, and proved nothing more.)"""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((400_000, 1)).astype(np.float32)
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"]), helper.make_node("Gather", ["e", "i"], ["g"], axis=0),
             helper.make_node("Pad", ["g", "p"], ["y"])]
    return nodes, {"x": x, "s": np.array([400_000, 2000 if big else 8], np.int64),
                   "i": rng.integers(-400_000, 400_000, 200), "p": np.array([0, 1, 0, 1], np.int64)}


def _steps_concat(big: bool):
    """Two gather steps (transposed Reshapes), the first 4 GB, the second 12 elements of it, concatenated."""
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"]), helper.make_node("Transpose", ["e"], ["t"]),
             helper.make_node("Reshape", ["t", "f"], ["r"]), helper.make_node("Slice", ["r", "st", "en"], ["c"]),
             helper.make_node("Reshape", ["c", "f34"], ["c2"]), helper.make_node("Transpose", ["c2"], ["c3"]),
             helper.make_node("Reshape", ["c3", "f"], ["c4"]), helper.make_node("Concat", ["c4", "c4"], ["y"], axis=0)]
    return nodes, {"x": np.arange(1000, dtype=np.float32).reshape(1000, 1),
                   "s": np.array([1000, 1_000_000 if big else 2], np.int64), "f": np.array([-1], np.int64),
                   "st": np.array([0], np.int64), "en": np.array([12], np.int64), "f34": np.array([3, 4], np.int64)}


CASES = [_expand_concat, _tile_pad, _fill_transpose_pad, _where_transpose_concat, _one_hot_pad, _split_gather,
         _scatter_concat, _reshape_slice_pad, _concat_slice, _gather_pad, _steps_concat]


def _model(tmp, case, big: bool) -> tuple[list[str], dict[str, np.ndarray], object]:
    nodes, feeds = case(big)
    types = {np.dtype(np.float32): T.FLOAT, np.dtype(np.int64): T.INT64, np.dtype(bool): T.BOOL}
    path = tmp / ("big.onnx" if big else "small.onnx")
    save_model(path, nodes, [(k, types[a.dtype]) for k, a in feeds.items()])
    for k, a in feeds.items():
        np.save(tmp / f"{k}.npy", a)
    return [str(path.name), *(f"{k}.npy" for k in feeds)], feeds, path


def _reference(tmp, case) -> np.ndarray:
    _, feeds, path = _model(tmp, case, False)
    return ReferenceEvaluator(str(path)).run(None, feeds)[0]


@pytest.fixture(scope="module")
def chains(tmp_path_factory, backend) -> dict:
    """Each case's huge output printed as text, then as --json. The cases run one after the other in
    one capped process, whose peak RSS is the highest of theirs (so each stayed under it); ScatterND's,
    whose bound is its own, in a second one. Each case, by name: (onnx.reference's small output, the
    two commands' results, the peak of its process). Made once in a run (made_once.py)."""

    def make() -> dict:
        found = {}
        for group in ([c for c in CASES if c is not _scatter_concat], [_scatter_concat]):
            top = tmp_path_factory.mktemp("chains")
            argvs, wants = [], []
            for case in group:
                folder = top / case.__name__[1:]
                folder.mkdir()
                wants.append(_reference(folder, case))
                argv = _model(folder, case, True)[0]
                argvs += [(folder, ["run", *argv]), (folder, ["--json", "run", *argv])]
            done, peak = run_capped_commands(argvs, top, backend)
            for k, case in enumerate(group):
                found[case.__name__] = (wants[k], done[2 * k], done[2 * k + 1], peak)
        return found

    return made_once(tmp_path_factory, f"print-memory-chains-{backend}", make)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[1:] for c in CASES])
def test_a_chain_s_huge_output_is_printed_in_bounded_memory(chains, case):
    """Printed as text, then as --json, under the cap (fixture chains)."""
    want, text, doc, peak = chains[case.__name__]
    assert text.returncode == 0 and doc.returncode == 0, text.stderr + doc.stderr
    assert peak < (SCATTER_PEAK if case is _scatter_concat else PEAK), f"peak RSS {peak >> 20} MiB"
    found = json.loads(doc.stdout)
    (y,) = found["runs"][0]["outputs"]
    assert y["dtype"] == str(want.dtype) and len(y["shape"]) == want.ndim, found
    if case is not _scatter_concat:  # a few elements of each value read back, not values (ScatterND streams)
        assert found["transfers"]["read_back"] < 64 << 20, found["transfers"]
    # a small output (a few elements of huge values) is printed whole, the others summarised
    assert printed(text.stdout, "y") == format_values(want, summarised=case not in (_concat_slice, _steps_concat))


WHOLE = {"expand_concat": _expand_concat, "where_transpose_concat": _where_transpose_concat,
         "one_hot_pad": _one_hot_pad, "scatter_concat": _scatter_concat}


@pytest.fixture(scope="module")
def written(tmp_path_factory, backend) -> dict:
    """Each WHOLE case's small model run with -o, a folder each: what is written is under test, not
    the process's memory, so the four run in one process (tests/commands.py). Made once in a run."""
    from commands import run_commands

    def make() -> dict:
        commands, made = [], {}
        for name, case in WHOLE.items():
            folder = tmp_path_factory.mktemp(name)
            argv, feeds, path = _model(folder, case, False)
            made[name] = (folder, feeds, path)
            commands.append((folder, ["run", *argv, "-o", "y.npy"]))
        done = run_commands(commands, env={**os.environ, "ONNXOP_BACKEND": backend})
        assert len(done) == len(WHOLE)
        return {name: (*made[name], r) for name, r in zip(WHOLE, done)}

    return made_once(tmp_path_factory, f"print-memory-written-{backend}", make)


@pytest.mark.parametrize("name", list(WHOLE))
def test_a_chain_s_output_is_written_whole(written, name):
    """-o makes every value whole, as before: the file is onnx.reference's output, every byte."""
    folder, feeds, path, done = written[name]
    assert done.returncode == 0, done.stderr
    want = ReferenceEvaluator(str(path)).run(None, feeds)[0]
    got = np.load(folder / "y.npy")
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_a_value_read_whole_on_the_host_is_refused_in_one_line(backend, tmp_path):
    """NonZero counts its input on the host: a 2 GB expanded mask is refused in one line naming the
    node, the value and its size, before anything is made (it was gathered whole on the device)."""
    mask = np.zeros((1, 20000), bool)
    mask[0, ::3] = True
    nodes = [helper.make_node("Expand", ["b", "s"], ["e"]), helper.make_node("NonZero", ["e"], ["y"])]
    feeds = {"b": mask, "s": np.array([100_000, 20000], np.int64)}
    save_model(tmp_path / "m.onnx", nodes, [("b", T.BOOL), ("s", T.INT64)])
    for k, a in feeds.items():
        np.save(tmp_path / f"{k}.npy", a)
    code, out, err, peak = run_capped(["run", "m.onnx", "b.npy", "s.npy"], tmp_path, backend)
    assert code != 0 and out == "" and peak < PEAK
    assert err == ("onnxop: error: m.onnx: node 1 (NonZero-13): print mode would read its input 'e' (100000, 20000) "
                   "(2000000000 bytes) whole on the host; print mode holds at most 1073741824 bytes\n"), err

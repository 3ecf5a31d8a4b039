"""Printing (text and --json) makes only the elements shown, and -o streams:
real ``onnxop`` processes whose outputs are GiBs, each run with its address
space capped at 1 GiB (RLIMIT_AS) and its peak RSS measured (wait4's
ru_maxrss) against a 400 MiB bound. Before, each of these made its output
whole (core/shown_values.py, core/graph_fill.py, ops/pad.py's folded runs).
The printed values are the reference's, computed from the index map of the
few shown entries."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from commands import driver, jobs, results
from made_once import made_once
from onnxop_cli.render.values import format_values

ONE_BACKEND = True  # memory is the host's whatever the adapter; the kernels fan out in their own tests
ADDRESS_SPACE = 1 << 30  # the child's RLIMIT_AS: an output made whole cannot even be allocated
PEAK = 400 << 20  # peak RSS allowed (an idle run is about 150 MiB)
DEADLINE = 120  # seconds a case may take (each takes a few)
EDGE = 3  # a summary shows 3 entries at each end; the narrowed array keeps 4


def shown(n: int) -> np.ndarray:
    return np.r_[0:EDGE + 1, n - EDGE - 1:n] if n > 2 * EDGE else np.arange(n)


# The child is started by a small launcher: Linux keeps, in a child's
# ru_maxrss, the RSS of the process it was forked from (the exec records the
# old image's high-water mark), and a pytest worker late in a run holds
# hundreds of MiB. Forked from the launcher, the child's peak is its own.
LAUNCHER = """
import os, resource, sys
cap, report, *argv = sys.argv[1:]
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (int(cap), int(cap)))
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_capped(argv: list[str], cwd, backend: str) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in bytes) of ``onnxop argv``."""
    code, out, err = _capped([sys.executable, "-m", "onnxop_cli", *argv], cwd, backend, " ".join(argv))
    return code, out, err, _peak(cwd)


def run_capped_commands(argvs: list, cwd, backend: str) -> tuple[list, int]:
    """The commands run one after the other in one capped process (tests/commands.py: a
    process start is about a CPU second), each in ``cwd`` or, given as ``(folder, argv)``,
    in its folder: each one's CompletedProcess, and the process's peak RSS in bytes --
    the highest of theirs, so each one stayed under it."""
    commands = [a if isinstance(a, tuple) else (cwd, a) for a in argvs]
    (cwd / "jobs.json").write_text(jobs(commands))
    with open(cwd / "jobs.json") as stdin:
        code, out, err = _capped(driver(), cwd, backend, " and ".join(" ".join(c[1]) for c in commands),
                                 stdin=stdin, deadline=DEADLINE * len(argvs))
    assert code == 0, err
    return results(commands, out), _peak(cwd)


def _peak(cwd) -> int:
    return int((cwd / "rusage.txt").read_text().split()[1]) * 1024


def _capped(command: list[str], cwd, backend: str, what: str, stdin=None,
            deadline: float = DEADLINE) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``command`` under the address-space cap (``what``: its onnxop commands)."""
    out, err, report = cwd / "stdout.txt", cwd / "stderr.txt", cwd / "rusage.txt"
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    with open(out, "wb") as o, open(err, "wb") as e:
        launcher = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER, str(ADDRESS_SPACE), str(report), *command],
            cwd=cwd, stdin=stdin, stdout=o, stderr=e, env=env, start_new_session=True)
        try:
            launcher.wait(timeout=deadline)  # planning a whole output can take forever (and defer SIGTERM)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
            pytest.fail(f"onnxop {what}: still running after {deadline} s")
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
    return int(report.read_text().split()[0]), out.read_text(), err.read_text()


def printed(stdout: str, name: str) -> str:
    """The values printed under output ``name`` (the last section)."""
    block = stdout.split(f"{name}: shape=")[-1].splitlines()[1:]
    return "\n".join(line[4:] for line in block)


def save_model(path, nodes, inputs, outputs=("y",), opset=18) -> None:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
                          [helper.make_tensor_value_info(n, T.UNDEFINED, None) for n in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.save(m, path)


def _fill(tmp):
    """The issue's model: Shape -> Concat -> ConstantOfShape, a (2, 20000) input: 6.4 GB of float32."""
    save_model(tmp / "m.onnx", [helper.make_node("Shape", ["x"], ["s"]),
                                helper.make_node("Concat", ["s", "s"], ["c"], axis=0),
                                helper.make_node("ConstantOfShape", ["c"], ["y"],
                                                 value=helper.make_tensor("v", T.FLOAT, [1], [2.5]))], [("x", T.FLOAT)])
    np.save(tmp / "x.npy", np.zeros((2, 20000), np.float32))
    return ["run", "m.onnx", "x.npy"], "y", np.full((2, 8, 2, 8), 2.5, np.float32)


def _gather(tmp):
    """A 4 MiB row gathered by 256 zeros: 1 GiB."""
    row = np.arange(1 << 20, dtype=np.float32).reshape(1, -1)
    np.save(tmp / "row.npy", row)
    np.save(tmp / "z.npy", np.zeros(256, np.int64))
    return ["gather", "row.npy", "--indices", "z.npy"], "output", np.broadcast_to(row[0, shown(1 << 20)], (8, 8))


def _gather_graph(tmp):
    row = np.arange(1 << 20, dtype=np.float32).reshape(1, -1)
    np.save(tmp / "row.npy", row)
    np.save(tmp / "z.npy", np.zeros(256, np.int64))
    save_model(tmp / "m.onnx", [helper.make_node("Gather", ["r", "i"], ["y"])], [("r", T.FLOAT), ("i", T.INT64)])
    return ["run", "m.onnx", "row.npy", "z.npy"], "y", np.broadcast_to(row[0, shown(1 << 20)], (8, 8))


def _pad(tmp):
    """A (2, 3) input reflected over 100M columns: 800 MB (its plan alone was 5M runs per 10M columns)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp / "x.npy", x)
    cols = shown(100_000_005) - 2
    period = 4  # reflect over 3 entries
    index = np.where(cols % period < 3, cols % period, period - cols % period)
    return ["pad", "x.npy", "--pads", "0,2,0,100000000", "--mode", "reflect"], "output", x[:, index]


def _tile(tmp):
    """Tile of a (2, 3) input by (20000, 20000): 9.6 GB (a gather step of the graph)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp / "x.npy", x)
    np.save(tmp / "r.npy", np.array([20000, 20000], np.int64))
    save_model(tmp / "m.onnx", [helper.make_node("Tile", ["x", "r"], ["y"])], [("x", T.FLOAT), ("r", T.INT64)])
    return ["run", "m.onnx", "x.npy", "r.npy"], "y", x[shown(40000) % 2][:, shown(60000) % 3]


def _expand(tmp):
    """Expand of a (1, 3) input to (20000, 20000, 3): 4.8 GB (a view: it passed before too, kept as a guard)."""
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    np.save(tmp / "x.npy", x)
    np.save(tmp / "s.npy", np.array([20000, 20000, 3], np.int64))
    save_model(tmp / "m.onnx", [helper.make_node("Expand", ["x", "s"], ["y"])], [("x", T.FLOAT), ("s", T.INT64)])
    return ["run", "m.onnx", "x.npy", "s.npy"], "y", np.broadcast_to(x, (8, 8, 3))


def _where(tmp):
    """A graph's Where of a (20000, 1) condition, a (1, 20000) row and a scalar: 1.6 GB from 100 KB."""
    rng = np.random.default_rng(5)
    c = rng.integers(0, 2, (20000, 1)).astype(bool)
    x = rng.standard_normal((1, 20000)).astype(np.float32)
    z = np.array(-7, np.float32)
    for name, a in (("c", c), ("x", x), ("z", z)):
        np.save(tmp / f"{name}.npy", a)
    save_model(tmp / "m.onnx", [helper.make_node("Identity", ["x"], ["x1"]),
                                helper.make_node("Where", ["c", "x1", "z"], ["y"])],
               [("c", T.BOOL), ("x", T.FLOAT), ("z", T.FLOAT)])
    return ["run", "m.onnx", "c.npy", "x.npy", "z.npy"], "y", np.where(c[shown(20000)], x[:, shown(20000)], z)


def _one_hot(tmp):
    """A graph's OneHot: 640 MB from 3 KB."""
    i = np.arange(400, dtype=np.int64) * 997
    np.save(tmp / "i.npy", i)
    np.save(tmp / "d.npy", np.array(400_000, np.int64))
    np.save(tmp / "v.npy", np.array([0, 1], np.float32))
    save_model(tmp / "m.onnx", [helper.make_node("Identity", ["i"], ["i1"]),
                                helper.make_node("OneHot", ["i1", "d", "v"], ["y"])],
               [("i", T.INT64), ("d", T.INT64), ("v", T.FLOAT)])
    want = (i[shown(400), None] == shown(400_000)[None, :]).astype(np.float32)
    return ["run", "m.onnx", "i.npy", "d.npy", "v.npy"], "y", want


def _big_endian(tmp):
    """A 300 MB big-endian input, printed with its Flatten: read where shown, never swapped whole into memory."""
    x = np.lib.format.open_memmap(tmp / "x.npy", mode="w+", dtype=">f4", shape=(7500, 10000))
    x[:] = np.arange(10000, dtype=">f4") * np.float32(0.5)
    del x
    return ["flatten", "x.npy", "--axis", "1"], "output", np.broadcast_to(shown(10000) * np.float32(0.5), (8, 8))


def _resize(tmp):
    """A (1, 1, 2, 2) input resized by 65536 on two axes: 64 GiB. Its plan made an index of every output
    element on the host: 'out of memory: Unable to allocate 128. GiB' (exit 1), where its per-axis tables
    (ops/resize.py) take 131072 entries each and the page 4 of each."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    np.save(tmp / "x.npy", x)
    return ["resize", "x.npy", "--scales", "1,1,65536,65536"], "Y", x[:, :, shown(1 << 17) >> 16][..., shown(1 << 17) >> 16]


CASES = [_fill, _gather, _gather_graph, _pad, _tile, _expand, _where, _one_hot, _big_endian, _resize]


@pytest.fixture(scope="module")
def huge(tmp_path_factory, backend) -> dict:
    """Each case printed as text, then as --json, each in its folder, all in one capped process:
    its peak RSS is the highest of theirs, so each stayed under it. Each case, by name: (output
    name, expected shown values, the two commands' results, the peak). Made once in a run."""

    def make() -> dict:
        top = tmp_path_factory.mktemp("huge")
        argvs, made = [], []
        for case in CASES:
            folder = top / case.__name__[1:]
            folder.mkdir()
            argv, name, want = case(folder)
            argvs += [(folder, argv), (folder, ["--json", *argv])]
            made.append((name, want))
        done, peak = run_capped_commands(argvs, top, backend)
        return {case.__name__: (*made[k], done[2 * k], done[2 * k + 1], peak) for k, case in enumerate(CASES)}

    return made_once(tmp_path_factory, f"print-memory-huge-{backend}", make)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[1:] for c in CASES])
def test_a_huge_output_is_printed_in_bounded_memory(huge, case):
    """Printed as text, then as --json, under the cap (fixture huge)."""
    name, want, text, doc, peak = huge[case.__name__]
    assert text.returncode == 0 and doc.returncode == 0, text.stderr + doc.stderr
    assert peak < PEAK, f"peak RSS {peak >> 20} MiB"
    assert '"shape"' in doc.stdout
    assert printed(text.stdout, name) == format_values(want, summarised=True)


def test_a_huge_graph_output_is_written_in_bounded_memory(backend, tmp_path):
    """-o streams the unmade ConstantOfShape in bands: 400 MB written, never held."""
    _fill(tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((2, 5000), np.float32))
    code, _, err, peak = run_capped(["run", "m.onnx", "x.npy", "-o", "y.npy"], tmp_path, backend)
    assert code == 0, err
    assert peak < PEAK, f"peak RSS {peak >> 20} MiB"
    y = np.load(tmp_path / "y.npy", mmap_mode="r")
    assert y.shape == (2, 5000, 2, 5000) and y.dtype == np.float32
    assert (y[:, ::97, :, ::89] == 2.5).all() and (y[-1, -1, -1, -5:] == 2.5).all()

"""``--engine browser``: onnxop's own kernels in headless Chromium's WebGPU
(Dawn and Tint with the browser's validation, on SwiftShader), a third
implementation beside wgpu and Dawn, checked in real ``onnxop`` processes.

A handful of kernels (transpose, concat, gather and its refused index,
scatter, pad) against onnx.reference bit for bit (their commands run by one
driver process, one Chromium for all: fixture ``ran``), the official conformance
cases of a few operators, a page's error as one GpuError line, a browser
that hangs as one line within the time limit, and no Chromium as one line.
Without Playwright or a Chromium these skip on a developer machine and FAIL
when ``CI`` is set (.ci/run installs both).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from commands import run_commands
from conftest import BACKENDS, seeded_rng
from onnxop_cli.gpu.engines import installed

ONNXOP = [sys.executable, "-m", "onnxop_cli"]

# An engine's tests: they run where the backends name it (.ci/run's browser pass sets
# ONNXOP_TEST_BACKENDS=browser-vulkan), not in the README's one-backend pass.
if not any(b.startswith("browser-") for b in BACKENDS):
    pytest.skip("the browser engine's tests run with ONNXOP_TEST_BACKENDS=browser-vulkan", allow_module_level=True)
if not installed("browser"):
    if os.environ.get("CI"):
        pytest.fail("CI is set and the browser engine is missing (pip install 'onnxop[browser]'; apt-get install chromium)",
                    pytrace=False)
    pytest.skip("the browser engine needs Playwright and a Chromium", allow_module_level=True)


def onnxop(cwd: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "ONNXOP_ENGINE": "browser", **(env or {})}
    return subprocess.run([*ONNXOP, *args], capture_output=True, text=True, cwd=cwd, env=full, timeout=timeout)


def one_node(path: Path, op: str, inputs: dict[str, np.ndarray], reference: bool = True,
             **attrs) -> tuple[list[str], list[np.ndarray]]:
    """A model of one ``op`` node, its input files, and onnx.reference's outputs (if ``reference``)."""
    names = list(inputs)
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path / "model.onnx")
    files = []
    for n, a in inputs.items():
        np.save(path / f"{n}.npy", a)
        files.append(f"{n}.npy")
    return files, ReferenceEvaluator(model).run(None, inputs) if reference else []


CASES = {
    "transpose": ("Transpose", lambda r: {"x": r.standard_normal((3, 5, 7)).astype(np.float32)}, {"perm": [2, 0, 1]}),
    "concat": ("Concat", lambda r: {"a": r.integers(-9, 9, (2, 3, 4)).astype(np.int64),
                                    "b": r.integers(-9, 9, (2, 5, 4)).astype(np.int64)}, {"axis": 1}),
    "gather": ("Gather", lambda r: {"x": r.standard_normal((6, 5)).astype(np.float16),
                                    "i": np.array([[5, 0], [-1, 2]], np.int64)}, {"axis": 0}),
    "scatter": ("ScatterElements", lambda r: {"x": np.zeros((4, 5), np.int32),
                                              "i": np.array([[3, 0, 1], [2, 1, 0]], np.int64),
                                              "u": r.integers(1, 99, (2, 3)).astype(np.int32)}, {"axis": 0}),
    "pad": ("Pad", lambda r: {"x": r.integers(0, 255, (3, 4)).astype(np.uint8),
                              "p": np.array([1, 2, 0, 1], np.int64)}, {"mode": "reflect"}),
}


# Gather's index 4 on an axis of 4: refused before any output is written
REFUSED = ("Gather", lambda r: {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "i": np.array([1, 4], np.int64)},
           {"axis": 0})


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Every kernel case's model and the refused Gather's, run by one driver process
    (tests/commands.py), so one Chromium: each `onnxop run` process started its own, about
    7 CPU s of the 8 a case cost. What the run writes and prints is under test, not the
    process (the processes' own behaviour is the tests' below). case -> (folder, onnx.reference's
    outputs, the command's result)."""
    rng = seeded_rng(request)
    made = {}
    for case, (op, make, attrs) in [*sorted(CASES.items()), ("refused", REFUSED)]:
        folder = tmp_path_factory.mktemp(case)
        made[case] = folder, *one_node(folder, op, make(rng), reference=case != "refused", **attrs)
    done = run_commands([(folder, ["run", "model.onnx", *files, "-o", "y.npy", "-q"])
                         for folder, files, _ in made.values()],
                        env={**os.environ, "ONNXOP_ENGINE": "browser"}, process=True, timeout=600)
    return {case: (folder, want, r) for (case, (folder, _, want)), r in zip(made.items(), done)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_kernel_on_the_browser_matches_onnx_reference(case, ran):
    folder, (want,), done = ran[case]
    assert done.returncode == 0, done.stderr
    got = np.load(folder / "y.npy")
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_a_gather_index_out_of_range_is_refused(ran):
    folder, _, done = ran["refused"]
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnxop: error: ") and "4" in lines[0], done.stderr
    assert not (folder / "y.npy").exists()


def test_every_official_conformance_case_passes_on_the_browser(tmp_path):
    """All of them (about 20 s here), as on wgpu and Dawn: none failed; skipped only Identity's
    optional and sequence and the arithmetic operators' float and string cases (out of scope)."""
    done = onnxop(tmp_path, "conformance")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    scoped = sum("out of scope" in line for line in lines[1:lines.index("")])
    passed, failed, skipped = (int(w) for w in lines[-1].replace(",", "").split()[::2])
    assert (failed, skipped) == (0, 2 + scoped) and passed >= 298, lines[-1]


def test_the_edge_case_corpus_passes_on_the_browser(tmp_path):
    """`onnxop cases write`'s corpus (indices past every edge, 9 to 100 bindings, Pad's modes, ranks 5-8,
    zero sizes, NaN payloads, odd lengths, int64 past 32 bits): every case, error cases refused."""
    assert run_commands([(tmp_path, ["cases", "write", "edge"])])[0].returncode == 0  # in this process: no browser
    done = onnxop(tmp_path, "conformance", "edge")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    passed = int(last.split()[0])
    assert last == f"{passed} passed, 0 failed, 0 skipped" and passed >= 201, last


@pytest.mark.parametrize("chromium", ["no-such-chromium", "/bin/false"], ids=["missing", "not-starting"])
def test_no_chromium_is_one_line_and_exit_1(chromium, tmp_path):
    """A Chromium that is not there, or one that does not start: one line naming it, exit 1."""
    np.save(tmp_path / "x.npy", np.zeros((2, 2), np.float32))
    done = onnxop(tmp_path, "transpose", "x.npy", "-o", "y.npy", env={"ONNXOP_CHROMIUM": chromium})
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("onnxop: error: "), done.stderr
    assert "Chromium" in done.stderr and repr(chromium) in done.stderr, done.stderr
    assert not (tmp_path / "y.npy").exists()


def test_a_chromium_that_hangs_at_start_is_started_once_and_leaves_no_driver(tmp_path):
    """A Chromium that never answers Playwright: each of a conformance run's cases started another one (7 x
    the limit for Transpose; ~430 x for all), and each timed-out start left Playwright's driver (node) running
    after onnxop exited, holding its browser. The failure is now kept for the process, and a start that
    times out ends its driver."""
    fake = tmp_path / "chromium"
    fake.write_text(f"#!/bin/sh\necho $$ $PPID >> {tmp_path}/started\nexec sleep 60\n")
    fake.chmod(0o755)
    try:
        done = onnxop(tmp_path, "conformance", "--op", "Transpose",
                      env={"ONNXOP_CHROMIUM": str(fake), "ONNXOP_BROWSER_TIMEOUT": "3"}, timeout=120)
        assert done.returncode == 1 and done.stderr == "", done.stderr
        assert "0 passed, 7 failed (7 error)" in done.stdout
        assert "did not answer within 3 s while starting Chromium" in done.stdout
        starts = (tmp_path / "started").read_text().split()
        assert len(starts) == 2, starts  # one browser started
        time.sleep(1)
        node = Path(f"/proc/{starts[1]}/stat")
        assert not node.exists() or node.read_text().split()[2] == "Z", node.read_text()
    finally:
        for pid in (tmp_path / "started").read_text().split()[::2] if (tmp_path / "started").exists() else []:
            try:
                os.kill(int(pid), 9)  # the fake browser, which does not watch its pipe as Chromium does
            except OSError:
                pass

def test_a_bad_time_limit_is_a_usage_error(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 2), np.float32))
    done = onnxop(tmp_path, "transpose", "x.npy", env={"ONNXOP_BROWSER_TIMEOUT": "soon"})
    assert done.returncode == 2
    assert done.stderr == "onnxop: error: $ONNXOP_BROWSER_TIMEOUT must be a positive number of seconds, got 'soon'\n"


CHECK = """
import sys
from onnxop_cli.errors import GpuError
from onnxop_cli.gpu import get_gpu
gpu = get_gpu("browser-vulkan")
try:
    with gpu.errors("compiling a test shader"):
        module = gpu.device.create_shader_module(label="bad", code=sys.argv[1])
        gpu.device.create_compute_pipeline(label="bad", layout="auto", compute={"module": module, "entry_point": "main"})
except GpuError as e:
    print(e)
"""


def test_a_shader_the_browser_refuses_is_one_gpu_error_line(tmp_path):
    code = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5f; }"
    done = subprocess.run([sys.executable, "-c", CHECK, code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("WebGPU compiling a test shader failed on SwiftShader"), line
    assert "\n" not in line and "module" in line


HANG = """
import time
from onnxop_cli.gpu import get_gpu
from onnxop_cli.gpu.engines.base import BufferUsage as U, MapMode
gpu = get_gpu("browser-vulkan")
code = '''
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(1) fn main() { loop { if (x[0] == 7u) { break; } x[1] = x[1] + 1u; } }
'''
d = gpu.device
pipe = d.create_compute_pipeline(label="spin", layout="auto",
                                 compute={"module": d.create_shader_module(label="spin", code=code), "entry_point": "main"})
buf = d.create_buffer(size=16, usage=U.STORAGE | U.COPY_SRC)
out = d.create_buffer(size=16, usage=U.MAP_READ | U.COPY_DST)
bg = d.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": buf}}])
enc = d.create_command_encoder()
p = enc.begin_compute_pass()
p.set_pipeline(pipe); p.set_bind_group(0, bg); p.dispatch_workgroups(1); p.end()
enc.copy_buffer_to_buffer(buf, 0, out, 0, 16)
gpu.queue.submit([enc.finish()])
gpu.wait(out.map_async(MapMode.READ), "reading back")
"""


def test_a_browser_that_hangs_is_one_error_within_the_limit(tmp_path):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", HANG], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "ONNXOP_GPU_TIMEOUT": "8", "ONNXOP_BROWSER_TIMEOUT": "8"})
    assert done.returncode != 0
    assert "GpuError" in done.stderr and ("did not finish within 8 s" in done.stderr or "lost" in done.stderr), done.stderr
    assert time.monotonic() - start < 120


TWO = """
import numpy as np
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import device
from onnxop_cli.gpu.copy import copy_through_kernel
data = MemoryBytes(np.arange(1 << 16, dtype=np.uint8))
for gpu in (device.get_gpu("browser-vulkan"), device.Gpu.open("auto", "browser")):
    out = []
    copy_through_kernel(gpu, data, lambda c: out.append(bytes(c)), chunk_bytes=4096)
    assert b"".join(out) == data.to_array().tobytes()
print("ok")
"""


def test_a_second_gpu_on_the_browser_shares_its_device(tmp_path):
    """The page's adapter gives one device; a second Gpu (``auto`` beside
    ``vulkan``, tests/process/test_gc_release.py's) was refused: 'adapter is consumed'."""
    done = subprocess.run([sys.executable, "-c", TWO], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


CLOSE_BUSY = HANG.replace('gpu.wait(out.map_async(MapMode.READ), "reading back")', """
import os, sys, time
from onnxop_cli.gpu.engines.browser import engine
promise = out.map_async(MapMode.READ)  # the page is in the spinning kernel's read
driver = engine._driver
while not driver.busy:
    time.sleep(0.05)
node = driver._playwright_pid
start = time.monotonic()
driver.close()
print(driver._thread.is_alive(), node > 0, round(time.monotonic() - start))
time.sleep(0.5)
try:  # Playwright's driver: gone, or a zombie until reaped
    with open(f"/proc/{node}/stat") as f:
        assert f.read().split()[2] == "Z"
except FileNotFoundError:
    pass
""")


def test_closing_a_browser_mid_call_ends_its_thread_before_python_does(tmp_path):
    """A call in the page (here a kernel that never ends) as the process exits -- a SIGTERM to `onnxop`
    mid-upload was the case -- left the driver thread inside Playwright: woken as Python finalized, greenlet
    crashed the process (SIGSEGV, exit 139 where 143 was asked). close() now ends Playwright's driver
    (and its Chromium), so the thread ends at once, and asyncio's note of the dead driver is not printed."""
    done = subprocess.run([sys.executable, "-c", CLOSE_BUSY], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "ONNXOP_BROWSER_TIMEOUT": "60"})
    assert done.returncode == 0, done.stderr[-2000:]
    alive, found, seconds = done.stdout.split()
    assert (alive, found) == ("False", "True") and int(seconds) < 5, done.stdout  # ended, not timed out
    assert done.stderr == "", done.stderr

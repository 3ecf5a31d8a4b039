"""``onnxop cases write`` and ``onnxop conformance --runtime``, in real processes (what a command
prints and writes: several commands in one process, tests/commands.py):
the corpus is written byte-identically twice and all of it passes through
onnxop; onnxruntime's outcomes on it are held to what it gives today (so a
change in what it returns shows up); a fake onnx.backend module that returns
wrong bytes, returns data where an error is required, refuses, or lacks the
operator reaches each outcome, and the exit code follows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from commands import run_commands

ONE_BACKEND = True  # the corpus through onnxop once, on the first backend


def onnxop(*args, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "edge"
    r = onnxop("cases", "write", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("wrote ") and r.stderr == ""
    return out


def outcomes(r: subprocess.CompletedProcess) -> dict[str, str]:
    doc = json.loads(r.stdout)
    for case in doc["cases"]:
        assert set(case) >= {"case", "runtime", "outcome", "detail"}
        assert case["runtime"] == doc["runtime"]
    return {c["case"]: c["outcome"] for c in doc["cases"]}


@pytest.fixture(scope="module")
def runs(corpus, tmp_path_factory) -> tuple[dict[str, subprocess.CompletedProcess], Path]:
    """What the commands below print, exit with and write, in one process (tests/commands.py): the
    corpus written again (a process other than the first write's), a write into a folder that is not
    empty, onnxruntime's outcomes on the corpus both ways, and one case of its wrong bytes. Their
    folder, which holds ``again`` and ``full/edge``."""
    top = tmp_path_factory.mktemp("runs")
    (top / "full" / "edge").mkdir(parents=True)
    (top / "full" / "edge" / "mine.txt").write_text("keep")
    lines = {
        "again": ["cases", "write", top / "again"],
        "not empty": ["cases", "write", top / "full" / "edge"],
        "onnxruntime": ["--json", "conformance", corpus, "--runtime", "onnxruntime"],
        "backend:onnxruntime.backend": ["--json", "conformance", corpus, "--runtime", "backend:onnxruntime.backend"],
        "wrong bytes": ["conformance", corpus / "where_float16_bits", "--runtime", "onnxruntime"],
    }
    return dict(zip(lines, run_commands([(top, argv) for argv in lines.values()]))), top


def test_two_writes_are_byte_identical(corpus, runs):
    done, top = runs
    again = top / "again"
    assert done["again"].returncode == 0, done["again"].stderr
    files = sorted(p.relative_to(corpus) for p in corpus.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((corpus / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert len({f.parts[0] for f in files}) > 150


def test_error_cases_carry_the_reason_instead_of_outputs(corpus):
    case = corpus / "gather_int64_index_2pow32_plus_1" / "test_data_set_0"
    assert sorted(p.name for p in case.iterdir()) == ["expected_error.json", "input_0.pb", "input_1.pb"]
    doc = json.loads((case / "expected_error.json").read_text())
    assert doc["error"] == "Gather: index 4294967297 is outside [-5, 4] for an axis of size 5"
    assert (doc["operator"], doc["class"]) == ("Gather", "indices")


def test_write_refuses_a_folder_that_is_not_empty(runs):
    r, tmp_path = runs[0]["not empty"], runs[1] / "full"
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr.startswith("onnxop: error: ") and "not empty" in r.stderr and len(r.stderr.splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["edge"]  # no temporary folder left
    assert [p.name for p in (tmp_path / "edge").iterdir()] == ["mine.txt"]


def test_the_corpus_passes_through_onnxop(corpus, backend, tmp_path):
    """What conformance reports is under test, not its process: it runs in this one (tests/commands.py)."""
    [r] = run_commands([(tmp_path, ["--json", "-b", backend, "conformance", corpus])])
    assert r.returncode == 0, r.stdout[-3000:]
    got = outcomes(r)
    assert set(got.values()) == {"passed"}
    assert json.loads(r.stdout)["runtime"] == "onnxop"


# What onnxruntime (CPU) gives today on the corpus; every other case passes.
# OneHot with int32 indices: no kernel; reflect pads of d or more: refused
# (the reference pads them, as numpy does); float16 signalling NaNs come back
# quieted (7c01 -> 7e01) from Pad, and Where drops a payload (fd55 -> fe00).
ORT = {
    **{f"one_hot_int32_index_{t}": "skipped" for t in
       ("d", "d_minus_1", "int32_max", "int32_min", "minus_d", "minus_d_minus_1")},
    **{f"pad_{t}_edge_bits": "skipped" for t in
       ("float4_e2m1fn", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")},
    "pad_float16_edge_bits": "wrong", "pad_float16_value_nan_payload": "wrong",
    "pad_float16_value_negative_zero": "wrong", "where_float16_bits": "wrong",
    "pad_reflect_d": "error", "pad_reflect_d_plus_1": "error", "pad_reflect_2d_plus_1": "error",
    "transpose_float4_e2m1fn_bits": "skipped", "transpose_float8_e8m0fnu_bits": "skipped",
    "where_bfloat16_bits": "skipped",
}
# Through its onnx.backend module the numpy bridge refuses the ml_dtypes
# arrays onnx's runner hands it (bfloat16, float8, 2- and 4-bit): error.
ORT_BACKEND = ORT | {
    f"{op}_{t}": "error" for op, t in [
        ("concat", "bfloat16_bits"), ("gather", "bfloat16_bits"), ("pad", "bfloat16_edge_bits"),
        ("pad", "bfloat16_value_nan_payload"), ("pad", "bfloat16_value_negative_zero"),
        ("transpose", "bfloat16_bits"), ("transpose", "float8_e4m3fn_bits"), ("transpose", "float8_e4m3fnuz_bits"),
        ("transpose", "float8_e5m2_bits"), ("transpose", "float8_e5m2fnuz_bits"),
        ("transpose", "int2_3x5"), ("transpose", "int4_3x5"), ("transpose", "uint2_3x5"), ("transpose", "uint4_3x5")]
}


@pytest.mark.parametrize("runtime, expected", [("onnxruntime", ORT), ("backend:onnxruntime.backend", ORT_BACKEND)])
def test_onnxruntime_outcomes_on_the_corpus(corpus, runs, runtime, expected):
    r = runs[0][runtime]
    assert r.returncode == 1  # it has wrong and error cases
    got = outcomes(r)
    assert {k: v for k, v in got.items() if v != "passed"} == expected
    # every index past the edge, 2^32+1 and the int64 extremes included, is refused
    refused = [k for k in got if "_index_" in k and (corpus / k / "test_data_set_0" / "expected_error.json").exists()]
    assert len(refused) == 5 * 7 + 3 * 4 + 3 * 2 and all(got[k] == "passed" for k in refused)  # (axis 1: 3 ops x 2)


def test_onnxruntime_wrong_bytes_are_shown(runs):
    r = runs[0]["wrong bytes"]
    assert r.returncode == 1
    assert r.stdout.splitlines()[0] == "runtime: onnxruntime"
    assert ("wrong: test_data_set_0: 2 of 39 elements differ; first y[10, 2] = nan, expected nan "
            "(bytes 00 fe, expected 55 fd)") in r.stdout
    assert r.stdout.splitlines()[-1] == "0 passed, 1 failed (1 wrong), 0 skipped"


FAKE = '''
"""An onnx.backend module whose answers FAKE_MODE picks."""
import os
import numpy as np
from onnx.reference import ReferenceEvaluator

def prepare(model, device="CPU", **kw):
    if os.environ["FAKE_MODE"] == "lacks":
        raise NotImplementedError("no kernel for " + model.graph.node[0].op_type)
    if os.environ["FAKE_MODE"] == "refuses_the_model":
        raise ValueError("fake refuses the model")
    return Rep(model)

class Rep:
    def __init__(self, model):
        self.ref = ReferenceEvaluator(model)
        self.names = [i.name for i in model.graph.input]
    def run(self, inputs):
        mode = os.environ["FAKE_MODE"]
        if mode == "refuses":
            raise RuntimeError("fake refuses\\nevery case")
        if mode == "sleeps":
            import pathlib, time
            pathlib.Path(os.environ["FAKE_STARTED"]).touch()
            time.sleep(60)
        try:
            out = self.ref.run(None, dict(zip(self.names, inputs)))
        except Exception:
            if mode == "right":
                raise
            return [np.zeros((2, 3), np.float32)]
        if mode == "flips":
            out[0] = out[0].copy()
            out[0].reshape(-1).view(np.uint8)[0] ^= 1
        return out
'''


@pytest.fixture(scope="module")
def fake(corpus, tmp_path_factory):
    """Two cases (one valid, one whose spec requires an error) and the fake module."""
    top = tmp_path_factory.mktemp("fake")
    for name in ("gather_int64_index_minus_d", "gather_int64_index_2pow32_plus_1"):
        shutil.copytree(corpus / name, top / "cases" / name)
    (top / "fake_backend.py").write_text(textwrap.dedent(FAKE))
    return top


FAKE_MODES = [
    ("right", "passed", "passed", 0),
    ("flips", "wrong", "no_error", 1),
    ("refuses", "error", "passed", 1),
    ("refuses_the_model", "error", "passed", 1),
    ("lacks", "skipped", "skipped", 1),  # nothing ran
]


@pytest.fixture(scope="module")
def fake_runs(fake) -> dict:
    """``conformance --runtime backend:fake_backend`` in each FAKE_MODE: what the command prints and
    exits with is under test, not the process, so the five run in one (tests/commands.py)."""
    modes = [mode for mode, *_ in FAKE_MODES]
    done = run_commands([(fake, ["--json", "conformance", fake / "cases", "--runtime", "backend:fake_backend"], None,
                          {"FAKE_MODE": mode}) for mode in modes], env=os.environ | {"PYTHONPATH": str(fake)},
                        process=True)  # the fake module is found on the process's $PYTHONPATH
    assert len(done) == len(modes)
    return dict(zip(modes, done))


@pytest.mark.parametrize("mode, valid, refusal, code", FAKE_MODES)
def test_each_outcome_is_reached_by_a_fake_backend(fake_runs, mode, valid, refusal, code):
    r = fake_runs[mode]
    assert r.returncode == code, r.stderr
    got = outcomes(r)
    assert got == {"gather_int64_index_2pow32_plus_1": refusal, "gather_int64_index_minus_d": valid}
    details = {c["case"]: c["detail"] for c in json.loads(r.stdout)["cases"]}
    if mode == "flips":
        assert details["gather_int64_index_minus_d"].startswith("test_data_set_0: 1 of 6 elements differ; first y[0, 0]")
        assert "(bytes " in details["gather_int64_index_minus_d"]
        assert details["gather_int64_index_2pow32_plus_1"] == (
            "test_data_set_0: returned 'y' (2, 3) float32 [0., 0., 0., 0., 0., 0.] where the spec requires an error: "
            "Gather: index 4294967297 is outside [-5, 4] for an axis of size 5")
    if mode == "refuses":
        assert details["gather_int64_index_minus_d"] == "test_data_set_0: RuntimeError: fake refuses every case"
    if mode == "refuses_the_model":
        assert details["gather_int64_index_minus_d"] == "ValueError: fake refuses the model"
    if mode == "lacks":
        assert details["gather_int64_index_minus_d"] == "NotImplementedError: no kernel for Gather"


def test_a_runtime_that_is_not_one_is_one_line(tmp_path):
    """What the refusals print is under test, not the process: one process runs the four (tests/commands.py)."""
    refused = (("tflite", "not a runtime"), ("backend:no_such_module_here", "cannot import"),
               ("backend:json", "has no prepare()"), ("onnxruntime:NoSuchProvider", "not a provider"))
    done = run_commands([(tmp_path, ["conformance", tmp_path, "--runtime", runtime]) for runtime, _ in refused])
    assert len(done) == len(refused)
    for (runtime, words), r in zip(refused, done):
        assert r.returncode == 2 and r.stdout == "", (runtime, r.stderr)
        assert r.stderr.startswith("onnxop: error: --runtime ") and words in r.stderr, r.stderr
        assert len(r.stderr.splitlines()) == 1


def test_not_on_webgpu_is_reported_and_does_not_fail_the_run(fake):
    """The outcome the WebGPU runtimes (ort-web) give when a node ran on their
    CPU fallback: reported, counted apart, and no exit 1 on its own."""
    from onnxop_cli.docs import conformance
    from onnxop_cli.docs.runtimes import Loaded, NotOnWebGPU

    class Fallback:
        def run(self, feeds):
            raise NotOnWebGPU("Gather ran on the wasm CPU provider")

    class WebRuntime:
        name, webgpu = "ort-web", True

        def load(self, model, folder):
            return Loaded(Fallback())

    results = conformance.run_all([fake / "cases"], runtime=WebRuntime())
    assert [(r.outcome, r.status, r.detail) for r in results] == [
        ("not_on_webgpu", "skipped", "test_data_set_0: Gather ran on the wasm CPU provider")] * 2
    assert conformance.summary(results) == "0 passed, 0 failed, 2 skipped (2 not_on_webgpu)"


def test_an_interrupted_write_leaves_nothing(tmp_path):
    """SIGTERM while the big cases are drawn: exit 143, no DIR, no temporary folder."""
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-m", "onnxop_cli", "cases", "write", tmp_path / "edge", "--big"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(tmp_path.iterdir()) and time.monotonic() < deadline:  # the temporary folder exists: writing
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert out == "" and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_signal_inside_the_runtime_ends_the_run(fake, tmp_path):
    """SIGTERM while a runtime runs a case ends the run with 143: it is not
    that case's error, and the next case does not start."""
    import signal
    import time

    started = tmp_path / "started"
    env = os.environ | {"FAKE_MODE": "sleeps", "PYTHONPATH": str(fake), "FAKE_STARTED": str(started)}
    p = subprocess.Popen([sys.executable, "-m", "onnxop_cli", "conformance", fake / "cases", "--runtime",
                          "backend:fake_backend"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, (out, err)
    assert "error" not in out and len(err.splitlines()) == 1


def test_two_writes_of_one_new_folder_at_once_one_refused_in_a_line(corpus, tmp_path):
    """Two processes writing the same new folder: each built its own beside it, then the second's rename met the
    first's folder ("onnxop: error: edge: Directory not empty", the OS's words). One writes; the other is refused in
    onnxop's words, and leaves neither its temporary folder nor a change to the first's."""
    argv = [sys.executable, "-m", "onnxop_cli", "cases", "write", tmp_path / "edge"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    done = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    assert sorted(rc for rc, _, _ in done) in ([0, 1], [0, 2]), done
    [(rc, _, err)] = [d for d in done if d[0]]
    # while the first wrote (exit 1), or after it (a folder there and not empty: a refusal, exit 2)
    assert err.count("\n") == 1 and (rc, "another process wrote into it meanwhile; not written" in err) in \
        [(1, True), (2, False)] and (rc == 1 or "exists and is not empty" in err), err
    assert [p.name for p in tmp_path.iterdir()] == ["edge"]
    files = sorted(p.relative_to(corpus) for p in corpus.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "edge") for p in (tmp_path / "edge").rglob("*") if p.is_file())

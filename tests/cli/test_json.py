"""``--json``: one strict JSON document on stdout per invocation, for every
command and every error, matching its schema (tests/cli/json_schema.py,
which docs/json.md documents: tests/cli/test_json_schema.py checks it)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, random_array
from onnxop_cli.errors import ExitCode, GpuError
from onnxop_cli.gpu import get_gpu
from onnxop_cli.gpu.kernels import KERNELS
from test_pipes import FakeStdin, npy_bytes
from json_schema import SCHEMAS, SPLIT_RUN, WHOLE_RUN, document, problems

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------- commands


@pytest.fixture
def cwd(tmp_path, monkeypatch, rng):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "a.npy", random_array(rng, (2, 3, 4, 5), "float32"))
    np.save(tmp_path / "x.npy", random_array(rng, (3, 4, 5), "int8"))
    return tmp_path


def test_flatten_json(backend, cwd, capsys):
    code, out, err = cli(capsys, "flatten", "a.npy", "--axis", "-2", "-o", "b.npy", "--json", "-b", backend)
    assert code == 0 and err == ""
    doc = document(out, "flatten")
    run_ = doc.pop("runs")
    timings = doc.pop("timings")
    assert doc.pop("kernel")["name"] == get_gpu(backend).kernel_used.kernel
    assert doc.pop("schedules") == {}  # a Flatten asks no schedule question
    assert doc == {
        "command": "flatten", "status": "ok", "exit_code": 0, "op": "Flatten", "opset": 28,
        "attributes": {"axis": -2}, "backend": backend, "adapter": get_gpu(backend).name,
    }
    assert len(run_) == 1
    assert run_[0]["inputs"] == [{"name": "a", "path": "a.npy", "shape": [2, 3, 4, 5], "dtype": "float32"}]
    assert run_[0]["outputs"] == [{"name": "b", "path": "b.npy", "shape": [6, 20], "dtype": "float32", "kernel": "view"}]
    assert set(run_[0]["timings"]) >= {"device", "copy"} and min(run_[0]["timings"].values()) >= 0
    assert timings["total"] >= run_[0]["timings"]["copy"]
    assert (cwd / "b.npy").exists()


@pytest.mark.parametrize("argv", [["pad", "x.npy", "--pads", "0,1,0,0,0,0"], ["split", "x.npy", "--split", "1,2"],
                                  ["concat", "x.npy", "x.npy", "--axis", "0"], ["shape", "x.npy"]])
def test_tensor_operators_write_the_operator_schema(backend, cwd, capsys, argv):
    """Their outputs say which kernel made them; their literal inputs carry values, as constant inputs do."""
    code, out, err = cli(capsys, *argv, "--json", "-b", backend)
    assert code == 0, err
    doc = document(out, argv[0])
    assert all("kernel" in o for r in doc["runs"] for o in r["outputs"])
    assert set(doc) >= {"kernel", "schedules"}
    if argv[0] in ("pad", "split"):
        assert doc["runs"][0]["inputs"][1]["values"] == [int(v) for v in argv[3].split(",")]


def test_json_given_before_the_command(backend, cwd, capsys):
    code, out, _ = cli(capsys, "--json", "--backend", backend, "unsqueeze", "x.npy", "--axes", "0", "-o", "y.npy")
    assert code == 0
    assert document(out, "unsqueeze")["runs"][0]["outputs"][0]["shape"] == [1, 3, 4, 5]


def test_print_mode_json_has_no_values_and_lists_the_axes_input(backend, cwd, capsys):
    code, out, _ = cli(capsys, "unsqueeze", "x.npy", "--axes", "2,-1", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "unsqueeze")
    assert doc["attributes"] == {}  # opset 13+: axes is an input
    (r,) = doc["runs"]
    assert r["inputs"] == [
        {"name": "x", "path": "x.npy", "shape": [3, 4, 5], "dtype": "int8"},
        {"name": "axes", "path": None, "shape": [2], "dtype": "int64", "values": [2, -1]},
    ]
    assert r["outputs"] == [{"name": "expanded", "path": None, "shape": [3, 4, 1, 5, 1], "dtype": "int8",
                             "kernel": "view"}]


def test_old_opset_keeps_axes_as_an_attribute(backend, cwd, capsys):
    code, out, _ = cli(capsys, "unsqueeze", "x.npy", "--axes", "0", "--opset", "11", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "unsqueeze")
    assert doc["opset"] == 11 and doc["attributes"] == {"axes": [0]}
    assert [t["name"] for t in doc["runs"][0]["inputs"]] == ["x"]


def test_several_inputs_make_one_document(backend, cwd, capsys):
    (cwd / "out").mkdir()
    code, out, _ = cli(capsys, "flatten", "a.npy", "x.npy", "-o", "out", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "flatten")
    assert [r["outputs"][0]["path"] for r in doc["runs"]] == ["out/a.npy", "out/x.npy"]
    assert [r["outputs"][0]["shape"] for r in doc["runs"]] == [[2, 60], [3, 20]]


@pytest.mark.parametrize("mode", [[], ["--verify"]])
def test_run_check_json_names_its_inputs(backend, capsys, mode):
    """--check's note named its files' kind with the variable that held the inputs' files, which the document
    then read: every run --check --json was an internal error (both the plain run and the mixed one)."""
    data = REPO / "samples/graph/test_data_set_0"
    code, out, err = cli(capsys, "run", str(REPO / "samples/graph/model.onnx"), str(data), "--check", str(data),
                         *mode, "--json", "-b", backend)
    assert code == 0, err
    doc = document(out, "run")
    assert problems(doc, SPLIT_RUN if mode else WHOLE_RUN) == []  # the one of the two the run makes
    assert doc["status"] == "ok"
    assert doc["runs"][0]["inputs"][0]["path"] == str(data / "input_0.pb")
    assert [o["path"] for o in doc["runs"][0]["outputs"]] == [None, None]  # compared, not written
    assert (doc.get("verified") is not None) == bool(mode)  # (the key is --verify's document's)


def test_run_check_mismatch_is_failed_not_error(backend, tmp_path, capsys):
    """docs/json.md: status "failed" when a check ran and found a mismatch, as compare's; a refused --check
    (no such folder) is still an error."""
    import onnx
    from onnx import numpy_helper

    data = REPO / "samples/graph/test_data_set_0"
    for i in (0, 1):
        t = numpy_helper.to_array(onnx.load_tensor(str(data / f"output_{i}.pb")))
        wrong = numpy_helper.from_array(np.ascontiguousarray(t[::-1]) if i else t, f"o{i}")
        (tmp_path / f"output_{i}.pb").write_bytes(wrong.SerializeToString())
    model = str(REPO / "samples/graph/model.onnx")
    code, out, err = cli(capsys, "run", model, str(data), "--check", str(tmp_path), "--json", "-b", backend)
    doc = json.loads(out)
    assert (code, doc["status"], doc["exit_code"]) == (1, "failed", 1), err
    assert "output_1.pb" in doc["message"] and "elements differ" in doc["message"]
    code, out, _ = cli(capsys, "run", model, str(data), "--check", str(tmp_path / "none"), "--json", "-b", backend)
    assert (code, json.loads(out)["status"]) == (2, "error")


def test_stdin_input_has_path_dash(backend, cwd, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(np.ones((2, 2), np.float16))))
    code, out, _ = cli(capsys, "flatten", "-", "--axis", "0", "-o", "f.npy", "--json", "-b", backend)
    assert code == 0
    assert document(out, "flatten")["runs"][0]["inputs"][0] == {
        "name": "stdin", "path": "-", "shape": [2, 2], "dtype": "float16"
    }


def test_show_json_names_stdin_path_dash_too(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(np.arange(4, dtype=np.uint8))))
    code, out, _ = cli(capsys, "show", "-", "--json")
    assert code == 0
    (f,) = document(out, "show")["files"]
    assert f["path"] == "-" and f["tensors"][0]["name"] == "stdin"
    assert f["tensors"][0]["stats"] == {"min": 0, "max": 3, "mean": 1.5, "std": np.std(np.arange(4)), "nan": 0, "count": 4}


def test_show_json_with_hist(cwd, capsys):
    values = np.array([[1.5, -2.0, np.nan], [4.0, 5.0, np.inf]], np.float32)
    np.save(cwd / "h.npy", values)
    np.save(cwd / "b.npy", np.array([True]))
    code, out, _ = cli(capsys, "show", "h.npy", "b.npy", "--json", "--hist")
    assert code == 0
    h_doc, b_doc = (f["tensors"][0] for f in document(out, "show")["files"])
    counts, edges = np.histogram(values[np.isfinite(values)].astype(np.float64), bins=10)
    assert h_doc["histogram"] == {"edges": edges.tolist(), "counts": counts.tolist(), "other": 2}
    assert b_doc["histogram"] is None and b_doc["byteorder"] == "little"


def test_info_json(backend, capsys):
    code, out, err = cli(capsys, "info", "--json", "--backend", backend)
    assert code == 0 and err == ""
    doc = document(out, "info")
    gpu = get_gpu(backend)
    assert doc["backend"] == backend
    assert doc["chosen"]["name"] == gpu.name and doc["chosen"]["backend"] == backend
    assert doc["chosen"]["limits"]["max-storage-buffer-binding-size"] == gpu.limits["max-storage-buffer-binding-size"]
    assert any(a["name"] == gpu.name for a in doc["adapters"])
    assert doc["kernel"]["name"] in KERNELS


def test_info_and_flatten_name_the_adapter_alike(backend, cwd, capsys):
    code, out, _ = cli(capsys, "info", "--json", "--backend", backend)
    chosen = document(out, "info")["chosen"]["name"]
    code, out, _ = cli(capsys, "flatten", "a.npy", "--json", "--backend", backend)
    assert document(out, "flatten")["adapter"] == chosen


def test_bench_json_chosen_kernel_and_quiet_stderr(backend, capsys):
    code, out, err = cli(capsys, "bench", "--json", "--backend", backend, "--sizes", "64K", "--repeats", "2")
    assert code == 0 and err == ""
    doc = document(out, "bench")
    assert doc["chosen_kernel"] in {r["kernel"] for r in doc["rows"]}


def test_doc_examples_json_listing_and_check(backend, capsys):
    code, out, _ = cli(capsys, "doc-examples", "--json")
    assert code == 0
    doc = document(out, "doc-examples")
    assert len(doc["examples"]) == 17 and "summary" not in doc
    first = doc["examples"][0]
    assert first["page"] == "Flatten-25.txt" and first["op"] == "Flatten" and first["opset"] == 25

    code, out, _ = cli(capsys, "doc-examples", "--check", "--show", "--name", "axes", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "doc-examples")
    assert doc["summary"] == {"passed": 5, "failed": 0, "skipped": 0}
    assert all(e["result"] == "passed" and e["rendered"].startswith("Node:") for e in doc["examples"])
    assert doc["kernel"]["name"] == get_gpu(backend).kernel_used.kernel


def test_doc_examples_json_reports_a_failed_check(backend, tmp_path, capsys):
    page = (REPO / "samples" / "Flatten-25.txt").read_text()
    at = page.index("29. , 29.5]]", page.index("b: shape=(1, 120)"))
    (tmp_path / "Flatten-25.txt").write_text(page[:at] + "29. , 29.25]]" + page[at + len("29. , 29.5]]"):])
    code, out, err = cli(capsys, "doc-examples", "--check", tmp_path / "Flatten-25.txt", "--json", "-b", backend)
    assert code == ExitCode.ERROR and err == ""
    doc = document(out, "doc-examples")
    assert doc["status"] == "failed" and doc["exit_code"] == 1
    assert doc["summary"] == {"passed": 8, "failed": 1, "skipped": 0}
    (bad,) = [e for e in doc["examples"] if e["result"] == "failed"]
    assert bad["name"] == "test_cc_flatten_axis0"
    assert "  page:   b[0, 119] = 29.25" in [f"  {d}" for d in bad["details"]]


def test_conformance_json(backend, capsys):
    code, out, _ = cli(capsys, "conformance", REPO / "samples" / "node", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "conformance")
    assert doc["summary"] == {"passed": 2, "failed": 0, "skipped": 1}
    by_name = {c["name"]: c for c in doc["cases"]}
    assert by_name["test_flatten_axis1"] == {
        "case": "test_flatten_axis1", "runtime": "onnxop", "outcome": "passed",
        "name": "test_flatten_axis1", "operator": "Flatten-25", "opset": 25, "data_sets": 1,
        "result": "passed", "detail": None,
    }
    assert doc["runtime"] == "onnxop"
    assert doc["outcomes"] == {"passed": 2, "wrong": 0, "no_error": 0, "error": 0, "not_on_webgpu": 0, "skipped": 1}
    skipped = by_name["test_relu"]  # what is not known is null, not a table's "-"
    assert (skipped["operator"], skipped["opset"], skipped["data_sets"], skipped["result"]) == ("Relu", None, None, "skipped")


def test_bench_json(backend, capsys):
    code, out, _ = cli(capsys, "bench", "--sizes", "64K", "--repeats", "1", "--warmup", "0", "--json", "-b", backend)
    assert code == 0
    doc = document(out, "bench")
    assert {r["measure"] for r in doc["rows"]} >= {"kernel", "copy_buffer_to_buffer", "numpy memcpy"}
    assert all(r["size"] == 64 << 10 for r in doc["rows"])


def test_version_json(capsys):
    code, out, _ = cli(capsys, "--version", "--json")
    assert code == 0
    doc = document(out, "version")
    assert doc["command"] is None and list(doc["versions"])[:3] == ["onnxop", "wgpu-native", "wgpu-py"]
    assert doc["versions"]["numpy"] == np.__version__


def test_every_command_has_a_schema():
    from onnxop_cli.cli.main import app

    commands = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    assert commands - set(SCHEMAS) == set()


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv,command,code,message",
    [
        (["flatten", "a.npy", "--axis", "5", "--json"], "flatten",
         2, "a.npy: Flatten: axis 5 is out of range [-4, 4] for an input of rank 4"),
        (["--json", "show", "missing.npy"], "show", 2, "missing.npy: no such file"),
        (["unsqueeze", "a.npy", "--json"], "unsqueeze", 2, "Missing option '--axes'. (see 'onnxop unsqueeze --help')"),
        (["--json", "frobnicate"], None, 2, "No such command 'frobnicate'. Did you mean 'concat'? (see 'onnxop --help')"),
        (["info", "--json", "--backend", "cuda"], "info",
         2, "unknown backend 'cuda'; choose one of auto, vulkan, metal, d3d12, gl"),
    ],
)
def test_errors_are_json_documents_too(cwd, capsys, argv, command, code, message):
    got, out, err = cli(capsys, *argv)
    assert got == code
    assert document(out, "error") == {"command": command, "status": "error", "exit_code": code, "message": message}
    assert err == f"onnxop: error: {message}\n"  # the one line on stderr, as without --json


def test_a_gpu_failure_is_a_json_error_and_leaves_no_file(backend, cwd, capsys, monkeypatch):
    import onnxop_cli.gpu as gpu_pkg

    def broken(*args, **kw):
        raise GpuError("WebGPU dispatch failed on test: device lost")

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", broken)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--json", "-b", backend)
    assert code == ExitCode.ERROR
    doc = document(out, "error")
    assert doc["message"] == "WebGPU dispatch failed on test: device lost"
    assert doc["written"] == [] and doc["failed"] == {"input": "a.npy", "output": "b.npy"}
    assert not (cwd / "b.npy").exists()


def test_without_json_nothing_is_json(backend, cwd, capsys):
    code, out, _ = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "-b", backend)
    assert code == 0 and not out.lstrip().startswith("{")
    code, out, err = cli(capsys, "flatten", "a.npy", "--axis", "9")
    assert code == 2 and out == "" and err.startswith("onnxop: error: a.npy: Flatten: axis 9")


def test_json_output_has_no_nan_literals_and_keeps_shapes_on_one_line(cwd, capsys):
    np.save(cwd / "n.npy", np.array([np.nan, 1.0], np.float32))
    code, out, _ = cli(capsys, "show", "n.npy", "--json")
    assert code == 0 and "NaN" not in out
    assert re.search(r'"shape": \[2\]', out)

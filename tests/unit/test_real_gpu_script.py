"""benchmarks/real_gpu.py's dry parts: finding the NVIDIA ICD, the steps it
plans, its refusals (no ICD, a CPU adapter answering), and the figures it
prints from `onnxop bench --json` documents. Its real run needs a GPU
; nothing here measures anything."""

from __future__ import annotations

import json

import pytest
from conftest import load_benchmark

LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


@pytest.fixture(scope="module")
def real_gpu():
    return load_benchmark("real_gpu")


def test_the_icd_is_found_by_option_environment_or_folder(real_gpu, tmp_path, monkeypatch):
    assert real_gpu.find_icd("/x/my_icd.json", {}) == ["/x/my_icd.json"]
    assert real_gpu.find_icd(None, {"VK_ICD_FILENAMES": "/a/lvp.json:/b/nvidia_icd.json"}) == ["/b/nvidia_icd.json"]
    folder = tmp_path / "icd.d"
    folder.mkdir()
    (folder / "nvidia_icd.json").write_text("{}")
    (folder / "lvp_icd.x86_64.json").write_text("{}")
    monkeypatch.setattr(real_gpu, "ICD_DIRS", (str(folder), str(tmp_path / "missing")))
    assert real_gpu.find_icd(None, {"VK_ICD_FILENAMES": "/a/lvp.json"}) == [str(folder / "nvidia_icd.json")]
    monkeypatch.setattr(real_gpu, "ICD_DIRS", (str(tmp_path / "missing"),))
    assert real_gpu.find_icd(None, {}) == []


def test_the_environment_names_only_the_gpu(real_gpu):
    env = real_gpu.gpu_env(["/b/nvidia_icd.json"], {"VK_ICD_FILENAMES": "/a/lvp.json", "VK_DRIVER_FILES": "/a/lvp.json"})
    assert env["VK_ICD_FILENAMES"] == "/b/nvidia_icd.json" and "VK_DRIVER_FILES" not in env
    assert env["CI"] == "1"  # GPU tests fail instead of skipping


def test_the_dry_run_prints_every_step(real_gpu, capsys):
    assert real_gpu.main(["--dry-run", "--icd", "/b/nvidia_icd.json", "--sizes", "16M,4G"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ICD: /b/nvidia_icd.json"
    steps = [line.split(":")[0] for line in out[1:]]
    assert steps == ["adapter", "GPU tests", "bench wgpu 16M", "bench wgpu 4G", "bench dawn 16M", "bench dawn 4G",
                     "transpose kernels wgpu", "transpose kernels dawn"]
    assert all("VK_ICD_FILENAMES=/b/nvidia_icd.json CI=1 " in line for line in out[1:])
    assert any("tests/gpu/test_transpose.py" in line for line in out)
    assert any("bench --engine dawn --backend vulkan --sizes 4G" in line for line in out)


def test_without_an_icd_it_says_what_to_install(real_gpu, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(real_gpu, "ICD_DIRS", (str(tmp_path),))
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
    assert real_gpu.main(["--dry-run"]) == 2
    assert "libnvidia-gl" in capsys.readouterr().out
    assert real_gpu.main(["--skip-tests"]) == 2
    assert "no NVIDIA Vulkan ICD found" in capsys.readouterr().err


def test_bad_options_are_refused(real_gpu):
    for argv in (["--sizes", "lots"], ["--engines", "metal"]):
        with pytest.raises(SystemExit) as e:
            real_gpu.main(argv)
        assert e.value.code == 2


def test_a_cpu_adapter_is_not_taken_for_a_gpu(real_gpu, capsys):
    """Given lavapipe's ICD the adapter step finds a CPU adapter and stops
    before measuring anything."""
    assert real_gpu.main(["--icd", LAVAPIPE_ICD, "--skip-tests", "--sizes", "16M"]) == 2
    assert "a CPU adapter: not a real GPU" in capsys.readouterr().err


def test_figures_come_from_the_bench_document(real_gpu):
    def row(measure, gbps, kernel=None, ratio=None):
        return {"size": 16 << 20, "engine": "wgpu", "measure": measure, "kernel": kernel, "gbps_median": gbps,
                "kernel_per_copy": ratio}

    document = json.loads(json.dumps({"rows": [
        row("kernel", 300.0, "storage", 0.75), row("kernel", 350.0, "storage64", 0.875),
        row("copy_buffer_to_buffer", 400.0), row("upload", 12.0), row("readback", 11.5),
    ]}))
    assert real_gpu.bench_rows(document) == ["| wgpu | 16 MiB | storage64 350.0 | 400.0 | 0.88x | 12.0 | 11.5 |"]

"""`onnxop bench`: what it prints and that its exactness check can fail.
Timings are not asserted (benchmarks measure speed, tests do not)."""

from __future__ import annotations

import json

import pytest

from onnxop_cli.cli import main as cli
from onnxop_cli.cli.bench import default_sizes, memory_needed, parse_sizes
from onnxop_cli.errors import GpuError, UsageError
from onnxop_cli.gpu.measure import Bench
from onnxop_cli.gpu.choose import QUESTIONS
from onnxop_cli.gpu.kernels import KERNELS


def test_parse_sizes():
    assert parse_sizes("1M,16M,256M,1G") == [1 << 20, 16 << 20, 256 << 20, 1 << 30]
    assert parse_sizes(" 4k , 12, 2MiB") == [4096, 12, 2 << 20]
    for bad in ("", "1T", "x", "0M", "1M,,2M"):
        with pytest.raises(UsageError, match="--sizes"):
            parse_sizes(bad)


def test_default_sizes_fit_in_memory():
    assert default_sizes(64 << 30) == parse_sizes("1M,16M,256M,1G")
    assert memory_needed(1 << 30) <= 2.6 * (1 << 30)
    assert default_sizes(2 * memory_needed(256 << 20)) == parse_sizes("1M,16M,256M")
    assert default_sizes(0) == [1 << 20]  # the smallest always runs


ROW_KEYS = {
    "size", "engine", "measure", "kernel", "gbps_median", "gbps_min", "gbps_max", "rounds_used",
    "kernel_per_copy", "kernel_per_memcpy", "verified",
}


def test_bench_json_covers_every_measure_and_kernel(gpu, capsys):
    code = cli.run(["bench", "--backend", gpu.info.our_backend, "--engine", gpu.engine_name,
                    "--sizes", "64K,300K", "--repeats", "3", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert {"adapter", "backend", "driver", "date", "timing", "repeats", "warmup", "chosen_kernel",
            "chosen_reason", "calibration_gbps", "buffers", "cpus", "load_average", "engines", "rounds",
            "rows"} <= set(report)
    assert report["driver"] == gpu.info.driver and report["backend"] == gpu.info.our_backend
    assert [e["engine"] for e in report["engines"]] == [gpu.engine_name]  # --engine: that one only
    assert report["engines"][0]["chosen_kernel"] == report["chosen_kernel"]
    gpu_kernels = {r["kernel"] for r in report["rows"] if r["measure"] == "kernel"}
    assert gpu_kernels == {k.name for k in KERNELS.values() if k.available(gpu)}
    assert report["chosen_kernel"] in gpu_kernels
    assert report["chosen_reason"] in ("measured", "cached", "forced")
    for size in (64 << 10, 300 << 10):
        measures = {r["measure"] for r in report["rows"] if r["size"] == size}
        assert measures == {"kernel", "copy_buffer_to_buffer", "upload", "readback", "numpy memcpy"}
        rounds = report["rounds"][str(size)]
        assert len(rounds) == 3
        for rd in rounds:
            assert set(rd) == {"wall_s", "other_cpu_s", "other_share", "flagged"}
            assert rd["wall_s"] > 0 and rd["other_cpu_s"] >= 0
    for row in report["rows"]:
        assert set(row) == ROW_KEYS
        assert row["gbps_min"] <= row["gbps_median"] <= row["gbps_max"]
        assert 1 <= row["rounds_used"] <= 3
        assert row["engine"] == (None if row["measure"] == "numpy memcpy" else gpu.engine_name)
        if row["measure"] == "kernel":
            assert row["verified"] is True and row["kernel_per_copy"] > 0
        else:
            assert row["kernel"] is None and row["kernel_per_copy"] is None


def test_bench_runs_both_engines_side_by_side(capsys):
    """A backend without an engine: wgpu and Dawn, in the same rounds."""
    from onnxop_cli.gpu import engines, get_gpu

    if not engines.installed("dawn"):
        pytest.skip("dawn-python is not installed")
    code = cli.run(["bench", "--backend", "vulkan", "--sizes", "64K", "--repeats", "2", "--warmup", "0", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [e["engine"] for e in report["engines"]] == ["wgpu", "dawn"]
    assert report["chosen_kernel"] == report["engines"][0]["chosen_kernel"]  # the first engine's
    for e in report["engines"]:
        gpu = get_gpu("vulkan", e["engine"])
        assert e["backend"] == gpu.info.our_backend and e["driver"] == gpu.info.driver
        measures = [(r["measure"], r["kernel"]) for r in report["rows"] if r["engine"] == e["engine"]]
        assert {k for m, k in measures if m == "kernel"} == {k.name for k in KERNELS.values() if k.available(gpu)}
        assert {m for m, _ in measures} == {"kernel", "copy_buffer_to_buffer", "upload", "readback"}
    assert [r["measure"] for r in report["rows"] if r["engine"] is None] == ["numpy memcpy"]
    assert len(report["rounds"][str(64 << 10)]) == 2  # one list of rounds: the engines share them


def test_bench_table_has_an_engine_column(capsys):
    from onnxop_cli.gpu import engines

    if not engines.installed("dawn"):
        pytest.skip("dawn-python is not installed")
    assert cli.run(["bench", "--backend", "vulkan", "--sizes", "64K", "--repeats", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("size"))
    assert header.split()[:3] == ["size", "engine", "measure"]
    assert "engines interleaved in every round" in out
    copies = [cells for cells in map(str.split, out.splitlines()) if "copy_buffer_to_buffer" in cells]
    assert [cells[cells.index("copy_buffer_to_buffer") - 1] for cells in copies] == ["wgpu", "dawn"]


def test_bench_tune_measures_the_choice_again(gpu, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(gpu.schedule_choices, "kernel", None)  # the session's choice, back after the test
    code = cli.run(["bench", "--tune", "--backend", gpu.info.our_backend, "--sizes", "64K", "--repeats", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["chosen_reason"] == "measured"
    entries = json.loads((tmp_path / "onnxop" / "kernels.json").read_text())["entries"]
    assert any("kernel" in e for e in entries.values())
    # and the schedule questions (gpu/choose.py), each answer measured again and cached beside it
    run = report["engines"][0]  # this backend's engine
    assert {q: a["reason"] for q, a in run["schedules"].items()} == dict.fromkeys(QUESTIONS, "measured")
    assert {json.loads(k)[4] for k, e in entries.items() if "answer" in e} == set(QUESTIONS)


def test_bench_table(backend, capsys):
    assert cli.run(["bench", "--backend", backend, "--sizes", "64K", "--repeats", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "kernel/copy" in out and "copy_buffer_to_buffer" in out and "numpy memcpy" in out
    assert "*" in out  # marks the kernel onnxop uses
    assert "CPU time other processes took, per round:" in out


def test_verify_catches_an_output_the_kernel_did_not_write(gpu):
    bench = Bench(gpu, 100_003)
    try:
        bench.poison()
        with pytest.raises(GpuError, match="wrong bytes: first at offset 0 "):
            bench.verify("nothing")
        for k in bench.kernels:
            bench.poison()
            bench.kernel(k.name)
            bench.verify(k.name)  # every available kernel writes every byte
        assert {k.name for k in bench.kernels} <= set(KERNELS)
    finally:
        bench.close()


def test_bench_refuses_bad_counts(capsys):
    assert cli.run(["bench", "--sizes", "1M", "--repeats", "0"]) == 2
    assert "--repeats must be >= 1" in capsys.readouterr().err

"""`onnxop bench`: what it prints and that its exactness check can fail.
Timings are not asserted (benchmarks measure speed, tests do not)."""

from __future__ import annotations

import json

import pytest

from onnxop_cli import cli
from onnxop_cli.bench import parse_sizes
from onnxop_cli.errors import GpuError, UsageError
from onnxop_cli.gpu.bench import Bench
from onnxop_cli.gpu.kernels import KERNELS


def test_parse_sizes():
    assert parse_sizes("1M,16M,256M,1G") == [1 << 20, 16 << 20, 256 << 20, 1 << 30]
    assert parse_sizes(" 4k , 12, 2MiB") == [4096, 12, 2 << 20]
    for bad in ("", "1T", "x", "0M", "1M,,2M"):
        with pytest.raises(UsageError, match="--sizes"):
            parse_sizes(bad)


def test_bench_json_covers_every_measure_and_kernel(backend, capsys):
    code = cli.run(["bench", "--backend", backend, "--sizes", "64K,300K", "--repeats", "2", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    gpu_kernels = {r["kernel"] for r in report["rows"] if r["measure"] == "kernel"}
    assert "storage" in gpu_kernels and report["chosen_kernel"] in gpu_kernels
    for size in (64 << 10, 300 << 10):
        measures = {r["measure"] for r in report["rows"] if r["size"] == size}
        assert measures == {"kernel", "copy_buffer_to_buffer", "upload", "readback", "numpy memcpy"}
    for row in report["rows"]:
        assert row["gbps_min"] <= row["gbps_median"] <= row["gbps_max"]
        if row["measure"] == "kernel":
            assert row["verified"] is True and row["kernel_per_copy"] > 0


def test_bench_table(backend, capsys):
    assert cli.run(["bench", "--backend", backend, "--sizes", "64K", "--repeats", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "kernel/copy" in out and "copy_buffer_to_buffer" in out and "numpy memcpy" in out
    assert "*" in out  # marks the kernel onnxop uses


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

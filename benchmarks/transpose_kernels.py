"""The transpose kernels alone: the generic gather (``generic``) against the blocked
kernel (``blocked``, gpu/render/transpose.py), with copy_buffer_to_buffer
of the same bytes as the yardstick, on one adapter (through the gather's
staged buffers, which the yardstick and the check read, on every adapter).

Each case is a float32 tensor of --mib MiB, uploaded once; each round then
times, in an order rotated every round, one submit of each kernel's
dispatches (and one buffer copy) until its end (wall clock: a submit and a
4-byte map, about a millisecond, are included). Every kernel's output is
poisoned first and checked byte for byte against numpy once. Printed: the
median GB/s (output bytes per second) of each, and the median of per-round
ratios to the copy, with the load average of each round; the machine is
shared, so compare within one run.

    python benchmarks/transpose_kernels.py --backend vulkan --mib 16,64 --rounds 5
    eval "$(bash scripts/mesa25.sh /work/mesa25)"; python benchmarks/transpose_kernels.py ...
    python benchmarks/transpose_kernels.py --backend dawn-vulkan --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

CASES = ("2d", "3d-210", "3d-021")
KERNELS = ("generic", "blocked", "copy")
VARIANTS = ("blocked",)
POISON = 0xA5


def case_shape(case: str, mib: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, perm) of a float32 tensor of ``mib`` MiB."""
    n = mib << 18  # float32 elements
    if case == "2d":
        side = math.isqrt(n)
        return (side, n // side), (1, 0)
    depth = max(1, n // (512 * 512))
    return (depth, 512, 512), ((2, 1, 0) if case == "3d-210" else (0, 2, 1))


def load() -> float:
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return float("nan")


class Case:
    """One tensor on the adapter: its upload done once, its kernels re-recorded."""

    def __init__(self, gpu, shape, perm, seed: int = 0):
        import numpy as np

        from onnxop_cli.gpu import gather as G
        from onnxop_cli.gpu.buffers import round_up
        from onnxop_cli.gpu.tiling import Plan
        from onnxop_cli.core.sources import MemoryBytes
        from onnxop_cli.core.region import Access

        self.gpu = gpu
        self.array = np.random.default_rng(seed).integers(0, 2**32, size=shape, dtype=np.uint32).view(np.float32)
        t = self.array.transpose(perm)
        self.expected = np.ascontiguousarray(t).tobytes()
        view = Access(t.shape, tuple(s // 4 for s in t.strides)).simplified()
        n = view.size
        window = round_up(n + 4, 4)
        plan = Plan(view, 32, n, window, 4, n * 4)
        os.environ[G.ENV_GATHER] = "generic"
        can_map, G.can_map = G.can_map, lambda gpu: False  # the staged buffers: upload and readback
        try:
            self.run = G.Run(gpu, plan, MemoryBytes(self.array), n * 4, window * 4, 0, None)
        finally:
            os.environ.pop(G.ENV_GATHER, None)
            G.can_map = can_map
        # every transpose kernel compiled; each timing runs one of them
        self.variants = {v: (v, G.VARIANTS[v].on(gpu)) for v in VARIANTS}
        ((_, self.band, uploads),) = list(plan.bands())
        if len(uploads) != 1:
            raise SystemExit(f"{shape}: more than one upload; choose a smaller --mib")
        self.upload = uploads[0]
        self.run.dispatch(self.upload, self.band)  # fills src (and runs once: a warm-up)
        self.nbytes = n * 4
        self.taken: dict[str, int] = {}  # dispatches each variant took in its last run

    def time(self, kernel: str) -> float:
        from onnxop_cli.gpu.engines.base import MapMode

        gpu, run = self.gpu, self.run
        encoder = gpu.device.create_command_encoder()
        if kernel == "copy":
            # the upload buffer still holds the source: the same bytes again into src
            encoder.copy_buffer_to_buffer(run.upload, 0, run.src, 0, self.nbytes)
        else:
            run.variants = [self.variants[kernel]] if kernel in self.variants else []
            run.blocked = 0
            run.record(encoder, self.upload, self.band)
            self.taken[kernel] = run.blocked
        encoder.copy_buffer_to_buffer(run.dst, 0, run.readback, 0, 4)
        start = time.perf_counter()
        gpu.queue.submit([encoder.finish()])
        gpu.wait(run.readback.map_async(MapMode.READ, 0, 4), "benchmark")
        seconds = time.perf_counter() - start
        run.readback.unmap()
        return seconds

    def verify(self, kernel: str) -> bool:
        from onnxop_cli.gpu.engines.base import MapMode

        gpu, run = self.gpu, self.run
        gpu.queue.write_buffer(run.dst, 0, bytes([POISON]) * run.band_bytes)
        self.time(kernel)
        encoder = gpu.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(run.dst, 0, run.readback, 0, self.nbytes)
        gpu.queue.submit([encoder.finish()])
        gpu.wait(run.readback.map_async(MapMode.READ, 0, self.nbytes), "verify")
        try:
            return bytes(run.readback.read_mapped(0, self.nbytes, copy=False)) == self.expected
        finally:
            run.readback.unmap()

    def close(self) -> None:
        self.run.release()


def measure(backend: str, cases: list[str], sizes: list[int], rounds: int) -> dict:
    from onnxop_cli.gpu.device import get_gpu

    gpu = get_gpu(backend)
    out = {
        "adapter": gpu.name, "driver": gpu.info.driver, "backend": backend, "cpu": cpu_name(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "rounds": rounds, "rows": [],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": load(),
    }
    for case in cases:
        for mib in sizes:
            shape, perm = case_shape(case, mib)
            c = Case(gpu, shape, perm)
            try:
                verified = {k: c.verify(k) for k in ("generic", *VARIANTS)}
                times: dict[str, list[float]] = {k: [] for k in KERNELS}
                loads = []
                for r in range(rounds):
                    order = KERNELS[r % len(KERNELS) :] + KERNELS[: r % len(KERNELS)]
                    for k in order:
                        times[k].append(c.time(k))
                    loads.append(load())
                row = {"case": case, "shape": list(shape), "perm": list(perm), "mib": mib, "loads": loads,
                       "verified": verified, "taken": dict(c.taken)}
                for k in KERNELS:
                    row[f"{k}_gbps"] = round(c.nbytes / statistics.median(times[k]) / 1e9, 3)
                for k in ("generic", *VARIANTS):
                    row[f"{k}_per_copy"] = round(statistics.median(c_ / t for c_, t in zip(times["copy"], times[k])), 3)
                for k in VARIANTS:
                    row[f"{k}_per_generic"] = round(
                        statistics.median(g / t for g, t in zip(times["generic"], times[k])), 3
                    )
                out["rows"].append(row)
            finally:
                c.close()
    out["load_after"] = load()
    return out


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def table(result: dict) -> str:
    lines = [
        f"{result['adapter']}, driver {result['driver']} (--backend {result['backend']}); CPU {result['cpu']}, "
        f"{result['cpus']} CPUs; {result['date']}; load average {result['load_before']:.1f} before, "
        f"{result['load_after']:.1f} after; median of {result['rounds']} rounds",
        "",
        "| case | shape | generic GB/s | blocked GB/s | copy GB/s | blocked / generic | "
        "generic / copy | blocked / copy | dispatches taken (blocked) | exact | load per round |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        exact = "yes" if all(r["verified"].values()) else f"NO {r['verified']}"
        lines.append(
            f"| {r['case']} {r['mib']} MiB | {'x'.join(map(str, r['shape']))} perm {','.join(map(str, r['perm']))} | "
            f"{r['generic_gbps']:.2f} | {r['blocked_gbps']:.2f} | {r['copy_gbps']:.2f} | "
            f"{r['blocked_per_generic']:.2f}x | "
            f"{r['generic_per_copy']:.2f}x | {r['blocked_per_copy']:.2f}x | "
            f"{r['taken'].get('blocked', 0)} | {exact} | "
            f"{', '.join(f'{x:.1f}' for x in r['loads'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--mib", default="16,64", help="sizes in MiB (each at most one binding)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        p.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    result = measure(args.backend, cases, [int(x) for x in args.mib.split(",") if x], args.rounds)
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0 if all(all(r["verified"].values()) for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())

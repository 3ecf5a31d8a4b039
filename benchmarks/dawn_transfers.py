"""Dawn's upload and readback against wgpu's, on the same adapter, and the
whole process (flatten, transpose) on each engine.

Part ``bench`` (in one process): the buffers of ``gpu/measure.Bench`` on
wgpu (--backend vulkan) and on Dawn (dawn-vulkan), each moving ``--size``
bytes of one host array in the streaming copy's chunks (each chunk from and
to its own place in the array, as a file's bytes are), the way the
streaming copy does (mapped kernel
buffers where the engine maps them: wgpu's ``mappable-primary-buffers``,
Dawn's host-mapped buffers, engines/dawn/host.py; else staged). Rounds
alternate the order (A B, B A); each round prints its load average and the
Dawn/wgpu ratio of that round. Before timing, each engine streams
``--size`` random bytes through its copy kernel and the output is checked
byte for byte.

Part ``process``: fresh processes, ``onnxop --engine wgpu|dawn --backend
vulkan`` on a ``--process-size`` float32 .npy: ``flatten`` and ``transpose``
(2-D, 1,0), the engines alternating within each round in a rotated order,
CPU time (user+sys of the child, os.wait4) and wall time; every output is
compared with numpy's once. A third tool, "dawn staged", is Dawn with
``ONNXOP_DAWN_HOST_MAPPED=0`` (every transfer staged, as before); part
bench has the same on the same Dawn device (Bench's staged buffers).

    python benchmarks/dawn_transfers.py --part bench --size 64M --rounds 9
    python benchmarks/dawn_transfers.py --part process --process-size 256M --rounds 3

Mesa 25: ``eval "$(bash scripts/mesa25.sh /work/mesa25)"`` first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
ENGINES = {"wgpu": "vulkan", "dawn": "dawn-vulkan"}
# part process: (engine, extra environment) per tool
TOOLS = {"wgpu": ("wgpu", {}), "dawn": ("dawn", {}), "dawn staged": ("dawn", {"ONNXOP_DAWN_HOST_MAPPED": "0"})}


def size_of(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def _checked_copy(gpu, size: int) -> None:
    import numpy as np

    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.gpu import copy_through_kernel

    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    out = bytearray()
    copy_through_kernel(gpu, MemoryBytes(data), out.extend, poison=0xA5)
    if bytes(out) != data.tobytes():
        raise SystemExit(f"{gpu.name}: the streaming copy's output differs from its input")


def bench(size: int, rounds: int) -> None:
    import numpy as np

    from onnxop_cli.gpu import get_gpu, init_instance
    from onnxop_cli.gpu.buffers import can_map
    from onnxop_cli.gpu.measure import Bench

    init_instance(list(ENGINES.values()))
    gpus = {e: get_gpu(b) for e, b in ENGINES.items()}
    for engine, gpu in gpus.items():
        _checked_copy(gpu, size)
        print(f"{engine}: {gpu.name}, driver {gpu.info.driver}; {'mapped' if can_map(gpu) else 'staged'} buffers; copy exact")
    benches = {e: Bench(g, size) for e, g in gpus.items()}
    if can_map(gpus["dawn"]):  # Dawn's staged path, as before, on the same device
        from onnxop_cli.gpu import measure

        measure.can_map = lambda gpu: False
        try:
            benches["dawn staged"] = Bench(gpus["dawn"], size)
        finally:
            measure.can_map = can_map
    host = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    sink = np.ones_like(host)  # touched: no first-touch page faults in the timing
    for b in benches.values():  # warm-up: first touches of the buffers
        b.upload(host, spread=True)
        b.read_back(sink, spread=True)
    rates: dict[tuple[str, str], list[float]] = {}
    print(f"{cpu()}; {os.cpu_count()} CPUs; {size >> 20} MiB in {benches['wgpu'].chunk >> 20} MiB chunks")
    names = list(benches)
    print("round | load | " + " | ".join(f"{n} up GB/s" for n in names) + " | " + " | ".join(f"{n} back GB/s" for n in names)
          + " | " + " | ".join(f"{n}/wgpu up, back" for n in names[1:]))
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]  # rotated every round
        got: dict[tuple[str, str], float] = {}
        before = load()
        for name in order:
            got[name, "up"] = size / benches[name].upload(host, spread=True) / 1e9
            got[name, "back"] = size / benches[name].read_back(sink, spread=True) / 1e9
        for k, v in got.items():
            rates.setdefault(k, []).append(v)
        ratios = []
        for name in names[1:]:
            for way in ("up", "back"):
                rates.setdefault((name, way, "ratio"), []).append(got[name, way] / got["wgpu", way])
            ratios.append(f"{got[name, 'up'] / got['wgpu', 'up']:.2f}x, {got[name, 'back'] / got['wgpu', 'back']:.2f}x")
        print(f"{r + 1} | {before} | " + " | ".join(f"{got[n, 'up']:.2f}" for n in names) + " | "
              + " | ".join(f"{got[n, 'back']:.2f}" for n in names) + " | " + " | ".join(ratios))
    for name in names:
        line = f"{name}: median upload {statistics.median(rates[name, 'up']):.2f} GB/s, readback {statistics.median(rates[name, 'back']):.2f} GB/s"
        if name != "wgpu":
            up, back = rates[name, "up", "ratio"], rates[name, "back", "ratio"]
            line += (f"; vs wgpu, median of per-round ratios: upload {statistics.median(up):.2f}x (min {min(up):.2f}x), "
                     f"readback {statistics.median(back):.2f}x (min {min(back):.2f}x)")
        print(line)
    print(f"load now {load()}")
    for b in benches.values():
        b.close()


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU s, wall s) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **env})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()}")
    return usage.ru_utime + usage.ru_stime, wall


def process(size: int, rounds: int, tmp: str | None) -> None:
    import numpy as np

    exe = Path(sys.executable).with_name("onnxop")
    onnxop = [str(exe)] if exe.exists() else [sys.executable, "-m", "onnxop_cli"]
    side = int((size // 4) ** 0.5)
    with tempfile.TemporaryDirectory(dir=tmp) as folder:
        src = Path(folder) / "in.npy"
        a = np.random.default_rng(0).integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
        np.save(src, a)
        cases = {
            "flatten": (["flatten", str(src), "--axis", "1"], a.reshape(side, side)),
            "transpose": (["transpose", str(src), "--perm", "1,0"], np.ascontiguousarray(a.T)),
        }
        print(f"{cpu()}; {os.cpu_count()} CPUs; {side}x{side} float32 ({a.nbytes / 2**20:.0f} MiB)")
        names = list(TOOLS)
        print("case | round | load | " + " | ".join(f"{n} CPU s, wall s" for n in names) + " | "
              + " | ".join(f"{n}/wgpu CPU, wall" for n in names[1:]))
        for case, (args, want) in cases.items():
            ratios: dict[str, list[tuple[float, float]]] = {n: [] for n in names[1:]}
            for name, (engine, env) in TOOLS.items():  # once each, checked
                out = Path(folder) / "out.npy"
                _run(onnxop + ["--engine", engine, "--backend", "vulkan", *args, "-o", str(out)], env)
                if np.load(out).tobytes() != want.tobytes():
                    raise SystemExit(f"{case} on {name}: output differs from numpy's")
                out.unlink()
            for r in range(rounds):
                order = names[r % len(names):] + names[: r % len(names)]  # rotated every round
                got = {}
                before = load()
                for name in order:
                    engine, env = TOOLS[name]
                    out = Path(folder) / "out.npy"
                    os.sync()
                    got[name] = _run(onnxop + ["--engine", engine, "--backend", "vulkan", *args, "-o", str(out)], env)
                    out.unlink()
                cells = []
                for name in names[1:]:
                    rc, rw = got[name][0] / got["wgpu"][0], got[name][1] / got["wgpu"][1]
                    ratios[name].append((rc, rw))
                    cells.append(f"{rc:.2f}x, {rw:.2f}x")
                print(f"{case} | {r + 1} | {before} | " + " | ".join(f"{got[n][0]:.2f}, {got[n][1]:.2f}" for n in names)
                      + " | " + " | ".join(cells))
            for name in names[1:]:
                print(f"{case}: {name} vs wgpu, median per round: CPU {statistics.median(c for c, _ in ratios[name]):.2f}x, "
                      f"wall {statistics.median(w for _, w in ratios[name]):.2f}x")
            print(f"load now {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("bench", "process", "both"), default="both")
    ap.add_argument("--size", default="64M", help="bytes moved per upload or readback (part bench)")
    ap.add_argument("--process-size", default="256M", help="the .npy's size (part process)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tmp", default=None, help="folder for the files of part process")
    args = ap.parse_args()
    if os.environ.get("ONNXOP_DAWN_HOST_MAPPED", "").strip() == "0":
        print("ONNXOP_DAWN_HOST_MAPPED=0: Dawn stages every transfer")
    if args.part in ("bench", "both"):
        bench(size_of(args.size), args.rounds)
    if args.part in ("process", "both"):
        process(size_of(args.process_size), args.rounds, args.tmp)


if __name__ == "__main__":
    main()

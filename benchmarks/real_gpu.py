"""On a machine with a real GPU: run the GPU test files and `onnxop bench`
on both engines at 16 MiB-4 GiB, and the transpose kernels, and print the
figures with the GPU named (issue 23, item 5).

    python benchmarks/real_gpu.py --dry-run        # what it would run, and what is missing
    python benchmarks/real_gpu.py                  # tests, then figures (about 10-20 minutes)
    python benchmarks/real_gpu.py --skip-tests --sizes 16M,256M --out figures.md

It needs the GPU's Vulkan driver: for NVIDIA the ICD file (nvidia_icd.json,
from the driver or the ``libnvidia-gl-NNN`` package) and a working
``libGLX_nvidia``/``libnvidia-*`` set. The ICD is found in the usual places
or named with --icd; it is passed to both engines as VK_ICD_FILENAMES, so
lavapipe can never answer in its place, and the script refuses to go on if
the adapter it gets is a CPU adapter. GPU tests run with CI=1, so a missing
adapter fails them rather than skipping them.

Sizes above the adapter's max-buffer-size are reported as such, not run.
The figures are printed as Markdown (and written to --out): kernel,
copy_buffer_to_buffer, upload and readback GB/s per engine and size, the
kernel's ratio to the copy, and the transpose kernels' table.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
GPU_TESTS = (
    "tests/gpu/test_gpu_copy.py", "tests/gpu/test_gather.py", "tests/gpu/test_gather_fortran_big_endian.py",
    "tests/gpu/test_gather_limits.py", "tests/gpu/test_gather_elements_first_bad.py", "tests/gpu/test_transpose.py",
    "tests/gpu/test_gpu_ops.py",
    "tests/gpu/test_view_ops.py", "tests/gpu/test_engines.py", "tests/gpu/test_bench.py",
)
SIZES = "16M,64M,256M,1G,4G"
ENGINES = ("wgpu", "dawn")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def find_icd(explicit: str | None, environ: dict[str, str] | None = None) -> list[str]:
    """NVIDIA Vulkan ICD files: --icd, else $VK_ICD_FILENAMES entries naming
    nvidia, else the standard folders' nvidia*.json."""
    environ = os.environ if environ is None else environ
    if explicit:
        return [explicit]
    named = [p for p in environ.get("VK_ICD_FILENAMES", "").split(os.pathsep) if "nvidia" in p.lower()]
    if named:
        return named
    found: list[str] = []
    for folder in ICD_DIRS:
        found += sorted(glob.glob(os.path.join(folder, "nvidia*.json")))
    return found


def gpu_env(icd: list[str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every step runs in: only the GPU's ICD, CI set."""
    env = dict(os.environ if base is None else base)
    env["VK_ICD_FILENAMES"] = os.pathsep.join(icd)
    env.pop("VK_DRIVER_FILES", None)  # newer loaders read this first
    env["CI"] = "1"
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return env


def plan(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(what, argv) for every step, in order."""
    py = sys.executable
    steps: list[tuple[str, list[str]]] = [("adapter", [py, "-m", "onnxop_cli", "info", "--json", "--backend", "vulkan"])]
    if not args.skip_tests:
        steps.append((
            "GPU tests",
            [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *GPU_TESTS],
        ))
    for engine in args.engines:
        for size in args.sizes:
            steps.append((
                f"bench {engine} {size}",
                [py, "-m", "onnxop_cli", "bench", "--engine", engine, "--backend", "vulkan", "--sizes", size,
                 "--repeats", str(args.repeats), "--json"],
            ))
    for engine in args.engines:
        backend = "vulkan" if engine == "wgpu" else "dawn-vulkan"
        steps.append((
            f"transpose kernels {engine}",
            [py, str(ROOT / "benchmarks" / "transpose_kernels.py"), "--backend", backend, "--mib", "16,64",
             "--rounds", str(args.repeats), "--json"],
        ))
    return steps


def bench_rows(document: dict) -> list[str]:
    """Markdown rows from one `onnxop bench --json` document."""
    rows = []
    by = {}
    for r in document.get("rows", []):
        by.setdefault((r["engine"], r["size"]), []).append(r)
    for (engine, size), rs in sorted(by.items()):
        cells = {}
        for r in rs:
            name = r["measure"] if r["measure"] != "kernel" else f"kernel {r.get('kernel')}"
            cells[name] = r
        kernels = [k for k in cells if k.startswith("kernel ")]
        best = max(kernels, key=lambda k: cells[k]["gbps_median"]) if kernels else None
        def gb(name):
            return f"{cells[name]['gbps_median']:.1f}" if name in cells else ""
        ratio = f"{cells[best]['kernel_per_copy']:.2f}x" if best and cells[best].get("kernel_per_copy") else ""
        rows.append(
            f"| {engine} | {size >> 20} MiB | {best.removeprefix('kernel ') if best else ''} {gb(best) if best else ''} | "
            f"{gb('copy_buffer_to_buffer')} | {ratio} | {gb('upload')} | {gb('readback')} |"
        )
    return rows


def run(args: argparse.Namespace) -> int:
    icd = find_icd(args.icd)
    steps = plan(args)
    if args.dry_run:
        print(f"ICD: {', '.join(icd) if icd else 'none found: install the driver Vulkan files (libnvidia-gl-NNN) or give --icd'}")
        for what, argv in steps:
            print(f"{what}: VK_ICD_FILENAMES={os.pathsep.join(icd) or '?'} CI=1 {shlex.join(argv)}")
        return 0 if icd else 2
    if not icd:
        print("real_gpu: no NVIDIA Vulkan ICD found (install the driver's Vulkan files, e.g. libnvidia-gl-NNN, or give --icd)",
              file=sys.stderr)
        return 2
    env = gpu_env(icd)
    out: list[str] = []
    failed = False
    for what, argv in steps:
        print(f"== {what}: {shlex.join(argv)}", file=sys.stderr, flush=True)
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        if what == "adapter":
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            chosen = json.loads(proc.stdout)["chosen"]
            if chosen.get("adapter_type") == "CPU":
                print(f"real_gpu: the Vulkan adapter is {chosen['name']}, a CPU adapter: not a real GPU", file=sys.stderr)
                return 2
            out += [f"GPU: {chosen['name']}, driver {chosen['driver']}", ""]
            out += ["| engine | size | best kernel GB/s | copy_buffer_to_buffer GB/s | kernel / copy | upload GB/s | readback GB/s |",
                    "|---|---|---|---|---|---|---|"]
        elif what == "GPU tests":
            tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
            out.insert(1, f"GPU tests ({' '.join(GPU_TESTS)}): {tail}")
            failed |= proc.returncode != 0
        elif what.startswith("bench"):
            try:
                document = json.loads(proc.stdout)
            except ValueError:
                document = {}
            if proc.returncode != 0 or document.get("status") != "ok":
                message = document.get("error") or (proc.stderr.strip().splitlines() or ["failed"])[-1]
                out.append(f"| {what.split()[1]} | {what.split()[2]} | {message} | | | | |")
            else:
                out += bench_rows(document)
        else:
            out += ["", f"Transpose kernels ({what.split()[-1]}):", ""]
            if proc.returncode == 0:
                bench = _load_transpose_kernels()
                out.append(bench.table(json.loads(proc.stdout)))
            else:
                out.append((proc.stderr.strip().splitlines() or ["failed"])[-1])
                failed = True
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if failed else 0


def _load_transpose_kernels():
    import importlib.util

    spec = importlib.util.spec_from_file_location("transpose_kernels", ROOT / "benchmarks" / "transpose_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="print the steps and the ICD found; run nothing")
    p.add_argument("--icd", help="the Vulkan ICD file to use (default: nvidia*.json in the usual folders)")
    p.add_argument("--sizes", default=SIZES, help=f"bench sizes (default {SIZES})")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-tests", action="store_true")
    p.add_argument("--out", help="also write the figures (Markdown) here")
    args = p.parse_args(argv)
    args.sizes = [s for s in args.sizes.split(",") if s]
    for s in args.sizes:
        try:
            parse_size(s)
        except ValueError:
            p.error(f"--sizes: {s!r} is not a size (like 16M, 1G)")
    args.engines = [e for e in args.engines.split(",") if e]
    if set(args.engines) - set(ENGINES):
        p.error(f"--engines: choose from {', '.join(ENGINES)}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

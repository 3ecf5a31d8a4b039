"""What asking onnx's shape inference in a child process (core/inference.py)
costs against asking it in this process: per model, interleaved rounds of
the direct call (``infer_shapes(model, strict_mode=False)``, as onnxop asked
before), the fork (onnxop run: no engine loaded yet) and the kept worker
(after an engine was loaded; its start is timed once, apart). With
``--whole``: ``onnxop run`` of each model, whole processes, interleaved, CPU
seconds (this process's children: the fork's child too) and wall time, with
inference contained and with it called in the process as before.

    python benchmarks/shape_inference.py --rounds 20 samples/graph/mixed.onnx .models/x/det.onnx
    python benchmarks/shape_inference.py --whole --rounds 8 samples/graph/model.onnx --args 'samples/graph/test_data_set_0 -o out/'

A model in a .whl (rapidocr-onnxruntime's, silero-vad's) is named WHEEL:MEMBER.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
import zipfile

# onnxop's entry, as before (inference in this process) or as it is
MAIN = "import sys\nfrom onnxop_cli.__main__ import main\nsys.argv[0] = 'onnxop'\nsys.exit(main())"
BEFORE = ("import onnx\nimport onnxop_cli.core.inference as inf\n"
          "inf.inferred_graph = lambda m: onnx.shape_inference.infer_shapes(m, strict_mode=False).graph\n")


def load(name: str):
    import onnx

    if ":" in name and name.split(":", 1)[0].endswith(".whl"):
        wheel, member = name.split(":", 1)
        with zipfile.ZipFile(wheel) as z:
            return onnx.load(io.BytesIO(z.read(member)))
    return onnx.load(name)


def main(argv: list[str] | None = None) -> int:
    from onnx import shape_inference

    from onnxop_cli.core import inference

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--whole", action="store_true", help="onnxop run MODEL ARGS..., whole processes")
    p.add_argument("--args", default="", help="with --whole: what follows each model, as a shell would split it")
    a = p.parse_args(argv)
    if a.whole:
        return whole(a.models, shlex.split(a.args), a.rounds)
    ways = {
        "in process": lambda m: shape_inference.infer_shapes(m, strict_mode=False).graph,
        "fork": lambda m: inference._graph(inference._forked(m)),
        "worker": lambda m: inference._graph(inference._asked(m.SerializeToString())),
    }
    t = time.perf_counter()
    inference._asked(load(a.models[0]).SerializeToString())
    print(f"worker start and first model: {1e3 * (time.perf_counter() - t):.0f} ms; load {os.getloadavg()[0]:.1f}")
    for name in a.models:
        model = load(name)
        times: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(a.rounds):
            for way, call in ways.items():  # interleaved: a load that comes and goes touches every way alike
                t = time.perf_counter()
                call(model)
                times[way].append(time.perf_counter() - t)
        size = model.ByteSize()
        print(f"{name} ({len(model.graph.node)} nodes, {size / 1e6:.1f} MB): " + ", ".join(
            f"{way} {1e3 * statistics.median(ts):.1f} ms ({1e3 * min(ts):.1f}-{1e3 * max(ts):.1f})"
            for way, ts in times.items()))
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


def whole(models: list[str], args: list[str], rounds: int) -> int:
    ways = {"in process": [sys.executable, "-c", BEFORE + MAIN], "contained": [sys.executable, "-c", MAIN]}
    print(f"load {os.getloadavg()[0]:.1f}")
    for model in models:
        cpu: dict[str, list[float]] = {w: [] for w in ways}
        wall: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(rounds):
            for way, argv in ways.items():
                before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                done = subprocess.run([*argv, "run", model, *args], capture_output=True)
                wall[way].append(time.perf_counter() - t)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[way].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(f"onnxop run {model} (exit {done.returncode}): " + "; ".join(
            f"{w}: CPU {statistics.median(cpu[w]):.3f} s, wall {statistics.median(wall[w]):.3f} s" for w in ways))
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Two checkouts of onnxop, the same inputs: are the outputs the same bytes?

A refactor must not change one output bit. This runs every node case of
onnx's backend tests (``onnx.backend.test.case.node``) that each checkout
runs, through ``onnxop_cli.backend``, in each checkout's own
environment (``T/.venv``, onnxop installed from T: the shaders are a package
of the install, so one interpreter cannot hold two trees), on the shipped
inputs and on ``--seeds`` more sets in which every input that is not an
integer tensor (the data, not the indices, axes or shapes) is replaced by
random bits of its type and shape (NaN payloads, -0.0 and subnormals
included; seeded, so a difference can be replayed). Then it compares the two
runs' outputs byte for byte, and their errors word for word, and prints one
line per difference and a count.

    python scripts/compare_trees.py /work/old /work/new --backend vulkan --seeds 2

Exit status: 0 the same everywhere, 1 a difference, 2 a checkout cannot run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def _cases(seeds: int):
    """(case name, model, seed, inputs) for every node case onnx's backend tests hold."""
    import warnings

    import numpy as np
    from onnx.backend.test.case import node

    warnings.simplefilter("ignore")  # the case modules' own numpy warnings

    for case in sorted(node.collect_testcases(None), key=lambda c: c.name):
        if case.model is None or not case.data_sets:
            continue
        # a 0-d input may be stored as a numpy scalar (OneHot's depth): a tensor all the same
        shipped = [np.asarray(x) if isinstance(x, np.generic) else x for x in case.data_sets[0][0]]
        if not all(isinstance(x, np.ndarray) for x in shipped):
            continue  # sequences, optionals: not tensors
        for seed in range(seeds + 1):
            if seed == 0:
                yield case.name, case.model, seed, shipped
                continue
            rng = np.random.default_rng([seed, len(case.name)])
            made = []
            for x in shipped:
                if x.dtype.kind in "iub" or x.dtype == object or x.size == 0:
                    made.append(x)
                else:
                    raw = rng.integers(0, 256, x.nbytes, dtype=np.uint8)
                    made.append(raw.view(x.dtype).reshape(x.shape))
            yield case.name, case.model, seed, made


def run_here(out: Path, backend: str | None, seeds: int, only: str) -> None:
    """In one checkout's interpreter: run every case, write outputs and errors to ``out``."""
    import numpy as np
    from onnxop_cli.backend import OnnxopBackend

    errors = {}
    for name, model, seed, inputs in _cases(seeds):
        if only and only not in name:
            continue
        key = f"{name}-{seed}"
        try:
            rep = OnnxopBackend.prepare(model, backend=backend)
        except Exception:  # noqa: BLE001 - not run by onnxop: not compared
            continue
        try:
            outputs = rep.run(inputs)
        except Exception as e:  # noqa: BLE001 - an error is compared as its words
            errors[key] = f"{type(e).__name__}: {e}"
            continue
        flat = {}
        for k, y in enumerate(outputs):
            y = np.asarray(y)
            if y.dtype == object:
                flat[f"o{k}"] = np.frombuffer(json.dumps([str(v) for v in y.ravel()]).encode(), np.uint8)
            else:
                flat[f"o{k}"] = np.frombuffer(np.ascontiguousarray(y).tobytes(), np.uint8)
            flat[f"o{k}_meta"] = np.frombuffer(f"{y.dtype.str}{y.shape}".encode(), np.uint8)
        np.savez(out / f"{key}.npz", **flat)
    (out / "errors.json").write_text(json.dumps(errors, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--backend", default=None)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--only", default="", help="a substring of the case names")
    p.add_argument("--run-here", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.run_here:
        run_here(a.run_here, a.backend, a.seeds, a.only)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        outs = []
        for k, tree in enumerate((a.a.resolve(), a.b.resolve())):
            py = tree / ".venv" / "bin" / "python"
            out = Path(tmp) / str(k)
            out.mkdir()
            cmd = [str(py), __file__, str(tree), str(tree), "--seeds", str(a.seeds), "--run-here", str(out)]
            cmd += ["--backend", a.backend] if a.backend else []
            cmd += ["--only", a.only] if a.only else []
            if not py.exists() or subprocess.run(cmd).returncode:
                print(f"{tree}: cannot run (needs {py} with onnxop installed from {tree})", file=sys.stderr)
                return 2
            outs.append(out)
        first, second = outs
        names = sorted({f.name for f in first.glob("*.npz")} | {f.name for f in second.glob("*.npz")})
        differ = 0
        for name in names:
            x, y = first / name, second / name
            if not (x.exists() and y.exists()):
                print(f"{name[:-4]}: ran in {'A' if x.exists() else 'B'} only")
                differ += 1
                continue
            with np.load(x) as u, np.load(y) as v:
                if set(u.files) != set(v.files) or any(u[f].tobytes() != v[f].tobytes() for f in u.files):
                    print(f"{name[:-4]}: outputs differ")
                    differ += 1
        ea, eb = (json.loads((o / "errors.json").read_text()) for o in outs)
        for key in sorted(set(ea) | set(eb)):
            if ea.get(key) != eb.get(key):
                print(f"{key}: error A {ea.get(key)!r} B {eb.get(key)!r}")
                differ += 1
        print(f"{len(names)} runs compared byte for byte, {len(set(ea) | set(eb))} errors word for word: "
              f"{differ} difference(s)")
        return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())

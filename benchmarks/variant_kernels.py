"""Every special-case kernel against the general kernel it specialises
(issue 32: "a variant kernel that does not win on both Mesas by more than
the noise goes"), in one process, interleaved.

Each variant has a switch: the chooser that picks it, monkeypatched inside
this process (nothing under src/ changes), so that the same API call runs
the general kernel instead. Each round runs every case once as shipped (A)
and once with the variant switched off (B), alternating which goes first;
the time is the wall time of the whole API call (upload, kernel, readback:
these kernels have no GPU-side timer here, lavapipe has no timestamps), or
with ``--cpu`` its CPU seconds (this process's, lavapipe's threads
included): on a shared machine the wall ratios spread with the load (at a
load of 12-16 on 2 cores, lower quartiles of 0.6-0.9 for kernels whose CPU
seconds were ahead 11 rounds of 11), the CPU seconds far less.
Every output of every round is checked byte for byte against numpy, and a
probe counts that the variant really ran in A and did not in B. Printed per
case: the median of the per-round ratios general/variant (above 1: the
variant is faster), their min..max (the noise), their lower quartile and
how many rounds the variant won, the CPU and the 1-minute load at start
and end. On a shared machine one round hit by another job sets min..max
alone; issue 32's verdict used "lower quartile above 1 on both Mesas" (the
variant faster in at least three rounds of four) as "wins by more than the
noise".

    python benchmarks/variant_kernels.py --backend vulkan --rounds 5
    eval "$(bash scripts/mesa25.sh /work/mesa25)"; python benchmarks/variant_kernels.py --backend vulkan
    python benchmarks/variant_kernels.py --backend gl --only where,one_hot --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_whole_process import cpu, load  # noqa: E402


@contextlib.contextmanager
def patched(*triples):
    """(object, attribute, value) set for the block, restored after."""
    old = [(o, a, getattr(o, a)) for o, a, _ in triples]
    try:
        for o, a, v in triples:
            setattr(o, a, v)
        yield
    finally:
        for o, a, v in old:
            setattr(o, a, v)


@contextlib.contextmanager
def env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


class Probe:
    """Counts the calls of module.attr that return something (the variant ran or was planned)."""

    def __init__(self, module: Any, attr: str, when: Callable[[Any, tuple], bool] | None = None):
        self.module, self.attr, self.when, self.hits = module, attr, when, 0
        self.orig = getattr(module, attr)

        def wrapped(*a, **k):
            out = self.orig(*a, **k)
            if (out is not None) if self.when is None else self.when(out, a):
                self.hits += 1
            return out

        setattr(module, attr, wrapped)


def no_runner(module: Any):
    """``module``'s OutputPlan without its runner: the op's pieces, through the pieces kernel."""
    from onnxop_cli.ops.tensor_op import OutputPlan

    def plain(*a, runner=None, kernel=None, **k):
        return OutputPlan(*a, **k)

    return patched((module, "OutputPlan", plain))


@dataclass
class Variant:
    name: str  # the variant kernel
    general: str  # what runs with it off
    off: Callable[[], Any]  # a context manager: the variant switched off
    probe: Callable[[], Probe]  # installed once; counts the variant's runs
    cases: Callable[[Any, int], dict]  # (rng, MiB) -> {label: (call(backend), expected ndarray)}


@contextlib.contextmanager
def one_hot_pieces(module: Any):
    """OneHot without its runner, its pieces kept at every size (past SUMMARY_PIECES indices the plan drops them)."""
    with patched((module, "SUMMARY_PIECES", 1 << 62)), no_runner(module):
        yield


def bits(rng, shape, dtype):
    import numpy as np

    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape)


def variants() -> list[Variant]:
    import numpy as np

    from onnxop_cli import api
    from onnxop_cli.gpu import gather, indexed as ix, indexed_variants as iv, piece_records, pieces, scatter, word_kernels
    from onnxop_cli.gpu.render.transpose import Blocked
    from onnxop_cli.ops import one_hot as oone_hot, where as owhere

    def no_scatter_kernel(kind: type):
        """gpu/scatter.py's kernel choice refusing ``kind`` (the slices' plan, the lines): the rounds run."""
        real = scatter._kernel
        return patched((scatter, "_kernel", lambda *a, **k: None if isinstance(out := real(*a, **k), kind) else out))

    def transpose_cases(rng, mib):
        n = mib << 18
        side = int(n ** 0.5)
        x = bits(rng, (side, n // side), np.float32)
        d = bits(rng, (max(1, n // (512 * 512)), 512, 512), np.float32)
        return {f"Transpose 2-D float32 {x.shape}": (lambda b: api.transpose(x, (1, 0), backend=b), x.T),
                f"Transpose 3-D 0,2,1 float32 {d.shape}": (lambda b: api.transpose(d, (0, 2, 1), backend=b),
                                                         d.transpose(0, 2, 1))}

    def lines_cases(rng, mib):
        rows = max(1, (mib << 18) // 2304)
        w = bits(rng, (rows, 2304), np.float32)
        keep = np.ones(2304, bool)
        keep[rng.choice(2304, 256, replace=False)] = False
        sq = bits(rng, (rows, 2048), np.float32)
        cols = rng.integers(-2048, 2048, 2048).astype(np.int64)
        return {f"Compress axis 1 float32 {w.shape}": (lambda b: api.compress(w, keep, axis=1, backend=b), w[:, keep]),
                f"Gather axis 1 float32 {sq.shape}": (lambda b: api.gather(sq, cols, axis=1, backend=b),
                                                     np.take(sq, cols, axis=1))}

    def rows_cases(rng, mib):
        rows = max(1, (mib << 18) // 256)
        x = bits(rng, (rows, 256), np.float32)
        i = rng.integers(-256, 256, (rows, 256)).astype(np.int64)
        x64 = bits(rng, (rows // 2, 256), np.float64)
        return {f"GatherElements axis 1 float32 {x.shape}": (lambda b: api.gather_elements(x, i, axis=1, backend=b),
                                                            np.take_along_axis(x, np.where(i < 0, i + 256, i), 1)),
                f"GatherElements axis 0 float64 {x64.shape}": (
                    lambda b: api.gather_elements(x64, i[: rows // 2] % (rows // 2), axis=0, backend=b),
                    np.take_along_axis(x64, i[: rows // 2] % (rows // 2), 0))}

    def raw_cases(rng, mib):  # 8- and 16-bit elements: no rows kernel, the element gather runs either way
        rows = max(1, (mib << 19) // 256)
        x = bits(rng, (rows, 256), np.uint16)
        i = rng.integers(-256, 256, (rows, 256)).astype(np.int64)
        b8 = bits(rng, (rows, 512), np.int8)
        j = rng.integers(0, rows, (rows, 512)).astype(np.int64)
        return {f"GatherElements axis 1 uint16 {x.shape}": (lambda b: api.gather_elements(x, i, axis=1, backend=b),
                                                           np.take_along_axis(x, np.where(i < 0, i + 256, i), 1)),
                f"GatherElements axis 0 int8 {b8.shape}": (lambda b: api.gather_elements(b8, j, axis=0, backend=b),
                                                          np.take_along_axis(b8, j, 0))}

    def reverse_cases(rng, mib):
        t, c = 64, 256
        batch = max(1, (mib << 18) // (t * c))
        x = bits(rng, (t, batch, c), np.float32)
        lens = rng.integers(1, t + 1, batch).astype(np.int64)
        want = x.copy()
        for k, n in enumerate(lens):
            want[:n, k] = x[:n, k][::-1]
        return {f"ReverseSequence float32 {x.shape}": (
            lambda b: api.reverse_sequence(x, lens, time_axis=0, batch_axis=1, backend=b), want)}

    def nd_cases(rng, mib, width):
        k = (mib << 20) // (4 * width)
        x = bits(rng, (1024, 1024, width), np.float32)
        idx = np.stack([rng.integers(0, 1024, k), rng.integers(0, 1024, k)], 1).astype(np.int64)
        return {f"GatherND float32 data {x.shape} by {idx.shape}": (lambda b: api.gather_nd(x, idx, backend=b),
                                                                   x[idx[:, 0], idx[:, 1]])}

    def slab_cases(rng, mib):
        x = bits(rng, (16384, 64), np.float32)
        idx = rng.integers(-16384, 16384, (mib << 20) // 256).astype(np.int64)
        return {f"Gather axis 0 float32 {x.shape} by {idx.shape}": (lambda b: api.gather(x, idx, axis=0, backend=b),
                                                                   np.take(x, idx, axis=0))}

    def scatter_nd_cases(rng, mib):
        rows = (mib << 20) // 256
        x = bits(rng, (rows, 64), np.float32)
        idx = rng.permutation(rows)[: rows // 2].astype(np.int64)[:, None]
        upd = bits(rng, (rows // 2, 64), np.float32)
        want = x.copy()
        want[idx[:, 0]] = upd
        return {f"ScatterND float32 {x.shape}, {rows // 2} slices": (lambda b: api.scatter_nd(x, idx, upd, backend=b),
                                                                     want)}

    def scatter_lines_cases(rng, mib):
        rows = max(1, (mib << 18) // 256)
        x = rng.standard_normal((rows, 256)).astype(np.float32)
        idx = rng.integers(0, 256, (rows, 64)).astype(np.int64)
        upd = rng.standard_normal((rows, 64)).astype(np.float32)
        want = x.copy()
        for j in range(64):  # in index order along the axis, as ONNX applies them
            np.add.at(want, (np.arange(rows), idx[:, j]), upd[:, j])
        xi = bits(rng, (rows, 256), np.int32)
        ui = rng.integers(-1000, 1000, (rows, 64)).astype(np.int32)
        wi = xi.copy()
        for j in range(64):
            np.maximum.at(wi, (np.arange(rows), idx[:, j]), ui[:, j])
        return {f"ScatterElements add float32 {x.shape}": (
                    lambda b: api.scatter_elements(x, idx, upd, axis=1, reduction="add", backend=b), want),
                f"ScatterElements max int32 {xi.shape}": (
                    lambda b: api.scatter_elements(xi, idx, ui, axis=1, reduction="max", backend=b), wi)}

    def where_cases(rng, mib):
        n = mib << 18
        c = rng.integers(0, 2, n).astype(bool).reshape(-1, 1024)
        x, y = bits(rng, c.shape, np.float32), bits(rng, c.shape, np.float32)
        row = bits(rng, (1024,), np.float32)
        return {f"Where float32 {c.shape}": (lambda b: api.where(c, x, y, backend=b), np.where(c, x, y)),
                f"Where float32 {c.shape}, Y a broadcast row": (lambda b: api.where(c, x, row, backend=b),
                                                                np.where(c, x, row))}

    def one_hot_cases(rng, mib):
        depth = 256
        n = (mib << 18) // depth
        idx = rng.integers(-depth, depth, n).astype(np.int64)
        vals = np.array([0.0, 1.0], np.float32)
        want = np.zeros((n, depth), np.float32)
        want[np.arange(n), idx % depth] = 1.0
        return {f"OneHot float32 ({n}, {depth})": (lambda b: api.one_hot(idx, np.array(depth, np.int64), vals, backend=b),
                                                   want)}

    def runs_cases(rng, mib):
        rows = max(1, (mib << 18) // 1024)
        a, b_ = bits(rng, (rows, 512), np.float32), bits(rng, (rows, 512), np.float32)
        p = bits(rng, (rows, 1000), np.float32)
        pads = np.array([0, 12, 0, 12], np.int64)
        return {f"Concat axis 1 float32 2 x {a.shape}": (lambda b: api.concat(a, b_, axis=1, backend=b),
                                                         np.concatenate([a, b_], 1)),
                f"Pad constant float32 {p.shape} by 12 columns": (lambda b: api.pad(p, pads, backend=b),
                                                                  np.pad(p, ((0, 0), (12, 12))))}

    def repeat_cases(rng, mib):
        rows = max(1, (mib << 18) // 2048)
        x = bits(rng, (rows, 1, 512), np.float32)
        return {f"Tile float32 {x.shape} by (1, 4, 1)": (lambda b: api.tile(x, np.array([1, 4, 1], np.int64), backend=b),
                                                         np.tile(x, (1, 4, 1)))}

    def switched_off(key: str):  # an indexed variant off (gpu/indexed_variants.py's ENABLED)
        return patched((iv, "ENABLED", {**iv.ENABLED, key: False}))

    def dispatched(key: str) -> Probe:  # an indexed variant of one dispatch a band (a Dispatch) ran
        return Probe(iv, "fill_one", lambda out, a: a[1].key == key)

    blocked = lambda: Probe(Blocked, "record")  # noqa: E731 - a dispatch the transpose kernel takes
    return [
        Variant("the blocked transpose (gpu/render/transpose.py)", "the generic gather",
                lambda: env(gather.ENV_GATHER, "generic"), blocked, transpose_cases),
        Variant("the lines kernel (gpu/render/lines.py)", "the indexed gather (or the whole-slice kernels)",
                lambda: switched_off("lines"), lambda: dispatched("lines"), lines_cases),
        Variant("rows ElementsRows", "the element gather (gpu/render/indexed.py)",
                lambda: switched_off("rows"), lambda: dispatched("rows"), rows_cases),
        Variant("the element gather checking raw indices (gpu/render/indexed.py's _i32, _i64)",
                "the index check pass, then the element gather", lambda: patched((ix, "_can_fuse", lambda *a: False)),
                lambda: Probe(iv, "variant", lambda out, a: "_" in out), raw_cases),
        Variant("ReverseSequence blocks (gpu/render/reverse.py)", "the element gather (gpu/render/indexed.py)",
                lambda: switched_off("runs"), lambda: dispatched("runs"), reverse_cases),
        Variant("rows NdRows", "slices words", lambda: switched_off("nd pairs"),
                lambda: dispatched("nd pairs"), lambda rng, mib: nd_cases(rng, mib, 2)),
        Variant("slices words", "the element gather (gpu/render/indexed.py)", lambda: switched_off("slices"),
                lambda: dispatched("slices"), lambda rng, mib: nd_cases(rng, mib, 3)),
        Variant("slices whole/windowed", "the element gather (gpu/render/indexed.py)", lambda: switched_off("slices"),
                lambda: dispatched("slabs"), slab_cases),
        Variant("the slices scatter (gpu/render/scatter_slices.py)", "the rounds (gpu/render/scatter.py)",
                lambda: no_scatter_kernel(scatter.slices.Slices),
                lambda: Probe(scatter, "_by_slices", lambda out, a: True), scatter_nd_cases),
        Variant("the line scatter (gpu/render/scatter.py's Lines)", "the rounds (gpu/render/scatter.py)",
                lambda: no_scatter_kernel(scatter._Lines),
                lambda: Probe(scatter, "_by_lines", lambda out, a: True), scatter_lines_cases),
        Variant("the whole-word select (gpu/render/select.py)", "the general pieces kernel (the select piece)",
                lambda: no_runner(owhere), lambda: Probe(word_kernels, "run_select"), where_cases),
        Variant("the whole-word OneHot (gpu/render/one_hot.py)", "the general pieces kernel (a fill and a piece per index)",
                lambda: one_hot_pieces(oone_hot),
                lambda: Probe(word_kernels, "run_one_hot"), one_hot_cases),
        Variant("pieces by runs (gpu/render/pieces.py's Rows)", "the general pieces kernel",
                lambda: patched((piece_records, "BY_RUNS", False)),
                lambda: Probe(piece_records, "runs", lambda out, a: True), runs_cases),
        Variant("pieces by runs for repeats (gpu/pieces.py's repeat_mover)", "the generic gather (gpu/render/strided.py)",
                lambda: patched((pieces, "REPEATS", False)), lambda: Probe(pieces, "repeat_mover"), repeat_cases),
    ]


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from onnxop_cli.gpu import get_gpu

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--mib", default="4,16", help="output sizes in MiB")
    p.add_argument("--only", default="", help="comma-separated substrings of variant names")
    p.add_argument("--skip", default="", help="comma-separated substrings of variant names left out")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cpu", action="store_true", help="CPU seconds of each call (process_time), not wall seconds")
    p.add_argument("--aa", action="store_true",
                   help="A/A: the variant on both sides (no switch), so the ratios' spread is the noise alone")
    a = p.parse_args(argv)
    gpu = get_gpu(a.backend)
    clock = time.process_time if a.cpu else time.perf_counter
    start = {"load": load(), "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    chosen = [v for v in variants() if (not a.only or any(s in v.name for s in a.only.split(",")))
              and not any(s and s in v.name for s in a.skip.split(","))]
    rows = []
    for v in chosen:
        probe = v.probe()
        try:
            for mib in [int(m) for m in a.mib.split(",") if m]:
                for label, (call, want) in v.cases(np.random.default_rng(mib), mib).items():
                    want = np.ascontiguousarray(want).tobytes()
                    pairs, loads, hits = [], [], {True: 0, False: 0}
                    for r in range(a.rounds + 1):  # round 0: warm-up (compiles), not counted
                        t = {}
                        for on in ((True, False) if r % 2 else (False, True)):
                            before = probe.hits
                            with (contextlib.nullcontext() if on or a.aa else v.off()):
                                t0 = clock()
                                got = call(a.backend)
                                t[on] = clock() - t0
                            hits[on] += probe.hits - before
                            if np.ascontiguousarray(got).tobytes() != want:
                                raise SystemExit(f"{v.name}, {label}: output differs from numpy "
                                                 f"({'variant' if on else 'general'}, round {r})")
                        if r:
                            pairs.append(t[False] / t[True])
                            loads.append(load())
                            times = t
                    row = {"variant": v.name, "general": v.general, "case": label, "mib": mib,
                           "ratio": statistics.median(pairs), "min": min(pairs), "max": max(pairs),
                           "ratios": [round(x, 3) for x in pairs],
                           "variant_ms": times[True] * 1e3, "general_ms": times[False] * 1e3,
                           "variant_ran": hits[True], "general_ran_variant": hits[False], "loads": loads}
                    rows.append(row)
                    print(f"{v.name} | {label} | {row['ratio']:.2f} ({row['min']:.2f}..{row['max']:.2f}) | "
                          f"ran {hits[True]}/{hits[False]}", file=sys.stderr, flush=True)
        finally:
            setattr(probe.module, probe.attr, probe.orig)
    out = {"adapter": gpu.name, "driver": gpu.info.driver, "backend": a.backend, "cpu": cpu(),
           "cpus": os.cpu_count(), "rounds": a.rounds, "clock": "cpu" if a.cpu else "wall", "start": start, "load_end": load(), "rows": rows}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"Command: `python benchmarks/variant_kernels.py --backend {a.backend or 'auto'} --rounds {a.rounds} "
          f"--mib {a.mib}{' --only ' + a.only if a.only else ''}{' --aa' if a.aa else ''}{' --cpu' if a.cpu else ''}`; adapter {gpu.name}, driver {gpu.info.driver}; "
          f"CPU {cpu()}, {os.cpu_count()} CPUs; "
          f"{start['time']}; load (1 min) {start['load']} at start, {out['load_end']} at end\n")
    print("| variant | general | case | general/variant (median) | min..max of rounds | lower quartile | rounds won "
          "| variant ran (A/B) |\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        quart = statistics.quantiles(r["ratios"], n=4, method="inclusive")[0] if len(r["ratios"]) > 1 else r["ratio"]
        print(f"| {r['variant']} | {r['general']} | {r['case']} | {r['ratio']:.2f} | {r['min']:.2f}..{r['max']:.2f} "
              f"| {quart:.2f} | {sum(x > 1 for x in r['ratios'])}/{len(r['ratios'])} "
              f"| {r['variant_ran']}/{r['general_ran_variant']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Random graphs of data-movement nodes: onnxop's outputs against onnx.reference's, bit for bit.

Each seed draws a graph of 2 to 8 nodes (Reshape, Transpose, Concat, Split, Slice, the Gathers and
Scatters, Pad, Tile, Expand, Where, OneHot, Cast, Squeeze/Unsqueeze, Flatten, DepthToSpace, Trilu,
Compress, NonZero, Shape, Size, ConstantOfShape, Range, Identity, ...) at a random opset, on one to
three graph inputs of random types (1/2/4/8-byte, bool, float16/bfloat16, float8, int4) and shapes
(empty, rank 0, up to rank 6), with initializers as data and as indices, a value read by several
nodes, graph outputs that later nodes read too, and now and then an output that is a graph input or
an initializer. ``--others`` puts a node onnxop does not run (Relu, MatMul, Softmax) at a random
place in the chain. Each node's value is onnx.reference's (the graph is grown one node at a time on
the reference's values), the whole graph's expected outputs are onnx.reference's run of it.

Paths: ``backend`` (onnxop_cli.backend's prepare/run, in process), ``cli`` (``onnxop run MODEL
--input NAME=X.pb ... -o DIR/ --json``, in process through cli.main.run; with ``--others`` it adds
``--others onnxruntime --verify``, and checks that --json's ``ran`` names each node where it ran).
Limits (``--limits small``) shrink every band, window and binding to a few hundred bytes so that a
graph of a few KiB runs in many bands (gather.DEFAULT_BAND, pieces.DEFAULT_BAND/BAND, the binding).
The graphs are fuzz_graph_nodes.py's (--draw wide's own nodes fuzz_graph_wide.py's; on fuzz_graph_builder.py),
the expected outputs fuzz_graph_oracle.py's.

    python scripts/fuzz_graphs.py --seeds 0-99 --backend vulkan --limits small
    python scripts/fuzz_graphs.py --seeds 17 --path cli --others -v     # replay one seed, print its graph
"""


from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fuzz_cases import relaid  # noqa: E402
from fuzz_graph_builder import SCALE, UNSUPPORTED  # noqa: E402
from fuzz_graph_nodes import make_case  # noqa: E402
from fuzz_graph_oracle import expected, native, ort_plain  # noqa: E402
from fuzz_oracles import same_bits  # noqa: E402

# ----------------------------------------------------------------------------------------- the limits

LIMITS = {"default": {}, "small": {"band": 256, "binding": 1024}, "tiny": {"band": 64, "binding": 256},
          # and dispatches of 2 workgroups a dimension (an (x, y) grid), GatherND's tuples and uploads 64 bytes a time
          "grid": {"band": 64 << 20, "binding": 128 << 20, "groups": 2, "raw": 64}}



@contextlib.contextmanager
def limits(name: str, backend: str):
    """Every band, window and binding shrunk (gather, pieces, indexed, scatter) for the run."""
    cfg = LIMITS[name]
    if not cfg:
        yield
        return
    from onnxop_cli.gpu import choose, gather, indexed_buffers, indexed_variants, pieces
    from onnxop_cli.gpu.device import get_gpu

    gpu = get_gpu(backend)
    choose.choice(gpu)
    for q in choose.QUESTIONS:
        choose.answer(gpu, q)
    saved = (gather.DEFAULT_BAND, gather.MAPPED_BAND, pieces.DEFAULT_BAND, pieces.BAND, indexed_variants.RAW_BAND,
             indexed_buffers.UPLOAD_STEP, dict(gpu.limits))
    gather.DEFAULT_BAND = gather.MAPPED_BAND = cfg["band"]
    pieces.DEFAULT_BAND = pieces.BAND = cfg["band"]
    gpu.limits["max-storage-buffer-binding-size"] = cfg["binding"]
    if "groups" in cfg:
        gpu.limits["max-compute-workgroups-per-dimension"] = cfg["groups"]
        indexed_variants.RAW_BAND = indexed_buffers.UPLOAD_STEP = cfg["raw"]
    try:
        yield
    finally:
        (gather.DEFAULT_BAND, gather.MAPPED_BAND, pieces.DEFAULT_BAND, pieces.BAND, indexed_variants.RAW_BAND,
         indexed_buffers.UPLOAD_STEP, limits_then) = saved
        gpu.limits.clear()
        gpu.limits.update(limits_then)


# ----------------------------------------------------------------------------------------- the paths

def run_backend(model, feeds, backend):
    from onnxop_cli.backend import OnnxopBackend

    rep = OnnxopBackend.prepare(model, backend=backend)
    return [native(np.asarray(x)) for x in rep.run([feeds[i.name] for i in model.graph.input])]


EDGE = 1  # elements a summary shows at each end of an axis (print mode)


def run_shown(model, feeds, backend, tmp: Path):
    """Print mode (``onnxop run MODEL`` without -o): every value a node reads made where it is read
    (LAZY_BYTES 1: core/value_bytes.py), every output summarised; the shown elements of each output,
    and the reference's outputs cut to the same positions by ``cut``."""
    from onnxop_cli.backend import _feeds
    from onnxop_cli.core import graph, graph_steps
    from onnxop_cli.ops.model import load_graph

    saved = graph_steps.LAZY_BYTES, graph.LAZY_BYTES
    graph_steps.LAZY_BYTES = graph.LAZY_BYTES = 1
    try:
        g = load_graph(model, tmp)
        p = graph.plan(g, _feeds(g, [feeds[k] for k in g.inputs]), backend=backend, shown=True)
        shown, _ = graph.run_to_summaries(p, threshold=1, edge=EDGE, backend=backend)
    finally:
        graph_steps.LAZY_BYTES, graph.LAZY_BYTES = saved
    return [(native(np.asarray(a)), summarised) for _, a, summarised in shown]


def cut(want: np.ndarray, summarised: bool) -> np.ndarray:
    from onnxop_cli.core.shown import shown_positions

    if not summarised:
        return want
    return native(want[np.ix_(*[shown_positions(d, EDGE) for d in want.shape])]) if want.ndim else want


def visible(a: np.ndarray, shape, summarised: bool) -> np.ndarray:
    """The narrowed array's entries numpy prints: along a summarised axis not the extra one at each
    side of '...' (an axis of 2 * EDGE + 1 shows its middle entry twice there, never printed)."""
    if not summarised or not a.ndim:
        return a
    keep = [list(range(EDGE)) + list(range(EDGE + 2, 2 * EDGE + 2)) if n > 2 * EDGE else list(range(n))
            for n in shape]
    return native(a[np.ix_(*keep)])


def run_cli(model, feeds, backend, others: bool, tmp: Path):
    from onnxop_cli.cli.main import run

    path = tmp / "m.onnx"
    onnx.save(model, path)
    argv = ["run", str(path)]
    for n, v in feeds.items():
        f = tmp / f"{n}.pb"
        f.write_bytes(numpy_helper.from_array(v, n).SerializeToString())
        argv += ["--input", f"{n}={f}"]
    out = tmp / "out"
    argv += ["-o", f"{out}/", "--json", "--backend", backend]
    argv += ["--verify"]  # (every node again on onnxruntime, or onnx.reference)
    if others:
        argv += ["--others", "onnxruntime"]
    so, se = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        code = run(argv)
    if code != 0:
        raise CliError(code, se.getvalue().strip(), so.getvalue())
    doc = json.loads(so.getvalue())
    got = []
    for o in model.graph.output:
        npy, pb = out / f"{o.name}.npy", out / f"{o.name}.pb"
        if npy.exists():
            got.append(native(np.load(npy)))
        else:
            t = onnx.TensorProto()
            t.ParseFromString(pb.read_bytes())
            got.append(native(numpy_helper.to_array(t)))
    return got, doc


class CliError(Exception):
    def __init__(self, code, err, out):
        super().__init__(f"exit {code}: {err}")
        self.code, self.err, self.out = code, err, out


def left_out(model) -> dict:
    """The others' nodes run --others leaves out, by operator: a region of theirs none of whose values a
    later region or the graph reads (a Relu whose output nothing reads) does not run, as onnxruntime takes
    no model without outputs (core/others.py); its Constants go with it."""
    from onnxop_cli.core import partition

    left: dict = {}
    for region in partition.split(model, "onnxruntime", keep_onnxop=True).regions:
        if region.runtime in partition.OTHERS and not region.outputs:
            for n in region.nodes:
                left[n.op_type] = left.get(n.op_type, 0) + 1
    return left


def check_ran(model, doc) -> str | None:
    """--json's ``ran``: every node counted once, onnxop's the ones onnxop runs, the others' the rest."""
    ran = doc.get("ran")
    if ran is None:
        return "no 'ran' in --json" if any(n.op_type in UNSUPPORTED for n in model.graph.node) else None
    counts: dict = {}
    for where, ops in ran.items():
        for op, n in ops.items():
            counts.setdefault(op, {})[where] = n
    want: dict = {}
    for n in model.graph.node:
        want[n.op_type] = want.get(n.op_type, 0) + 1
    left = left_out(model)
    want = {op: n - left.get(op, 0) for op, n in want.items() if n - left.get(op, 0)}
    for op, n in want.items():
        got = sum(counts.get(op, {}).values())
        if got != n:
            return f"ran counts {op} {got} times, the model has {n}: {ran}"
        if op in UNSUPPORTED and set(counts[op]) - {"onnxruntime"}:
            return f"ran says {op} ran on {set(counts[op])}: {ran}"
    ours = sum(n for ops in (v for k, v in ran.items() if k == "onnxop") for n in ops.values())
    verified = sum(v["nodes"] for v in doc.get("verified") or [])
    if doc.get("verified") is not None and verified != ours:
        return f"verified {verified} node(s), onnxop ran {ours}: {doc['verified']} {ran}"
    if sum(r["nodes"] for r in doc.get("regions", [])) < sum(want.values()) - want.get("Constant", 0):
        return f"regions hold {doc['regions']}, the model has {len(model.graph.node)} nodes"
    return None


REFUSED: dict = {}
SECOND = [0]  # cases onnxruntime decided
COMPARED = [0]  # cases run and compared
ORT = [0]  # cases onnxruntime ran as well (--ort)
ORT_DIFFERS: list = []  # (seed, how onnxruntime's outputs differ from onnx.reference's, which onnxop matches)


def one(seed: int, path: str, backend: str, lim: str, others: bool, verbose: bool, wide: bool = False,
        ort: bool = False) -> str | None:
    model, feeds, _ = make_case(seed, others, wide)
    want = expected(model, feeds)
    if want is None:
        return None
    shown = list  # what of an output the path shows (print mode: the summaries' entries)
    plain = feeds  # (onnxruntime's Python API reads a big-endian array's bytes as native: --ort feeds these)
    if wide and path == "backend":  # the same values laid out otherwise (Fortran and big-endian, views)
        rng = np.random.default_rng([seed, 11])
        feeds = {k: relaid(v, rng) for k, v in feeds.items()}
    if verbose:
        print(onnx.printer.to_text(model.graph))
    try:
        with limits(lim, backend):
            if path == "backend":
                got, doc = run_backend(model, feeds, backend), None
            elif path == "shown":
                with tempfile.TemporaryDirectory() as t:
                    made = run_shown(model, feeds, backend, Path(t))
                if len(made) != len(want):
                    return f"{len(made)} outputs shown, expected {len(want)}"
                got, doc = [visible(a, w.shape, summarised) for w, (a, summarised) in zip(want, made)], None

                def shown(outs):  # the entries the summaries show
                    return [visible(cut(w, summarised), w.shape, summarised) for w, (_, summarised) in zip(outs, made)]
                want = shown(want)
            else:
                with tempfile.TemporaryDirectory() as t:
                    got, doc = run_cli(model, feeds, backend, others, Path(t))
    except CliError as e:
        # onnxruntime's Python API takes and gives no float8 (but e4m3fn, as uint8), int4, bfloat16...: a region
        # of the others' reading or making one fails in one line (exit 1), a limit of --others, not a wrong byte
        api_types = e.code == 1 and any(s in e.err for s in ("No corresponding Numpy type", "to MLDataType"))
        if (e.code == 2 or api_types) and "\n" not in e.err and "Traceback" not in e.err:
            REFUSED[e.err[:90]] = REFUSED.get(e.err[:90], 0) + 1
            return f"refused: {e.err}" if verbose else None
        return f"exit {e.code}: {e.err[-1500:]}"
    except Exception as e:  # noqa: BLE001
        from onnxop_cli.errors import GpuError, OnnxopError

        msg = str(e).splitlines()[0] if str(e) else ""
        if isinstance(e, OnnxopError) and not isinstance(e, GpuError) and "\n" not in str(e):
            REFUSED[msg.split(": ", 1)[-1][:90]] = REFUSED.get(msg.split(": ", 1)[-1][:90], 0) + 1
            return f"refused: {msg}" if verbose else None
        return f"{type(e).__name__}: {msg}\n{traceback.format_exc()[-1500:]}"
    COMPARED[0] += 1
    diff = same_bits(want, got)
    if diff:
        second = ort_plain(model, feeds)
        if len(want) != len(got):
            return f"{len(got)} outputs, expected {len(want)}"
        for k, (w, g) in enumerate(zip(want, got)):  # each output: onnx.reference's, or onnxruntime's
            d = same_bits([w], [g])
            if d and (second is None or same_bits([second[k]], [g])):
                return f"output {k} differs from onnx.reference: {d}" + ("" if second is None else " (and onnxruntime)")
        SECOND[0] += 1
    if ort:  # onnxruntime's own outputs too, where it has the kernels: onnxop's against both
        second = ort_plain(model, plain)
        if second is not None and len(second) == len(want):
            second = shown(second)
            ORT[0] += 1
            d_ort, d_ref = same_bits(second, got), same_bits(second, want)
            if d_ref:
                ORT_DIFFERS.append((seed, d_ref[:200], "onnxop matches " + ("neither" if d_ort and diff else
                                    "onnx.reference" if d_ort else "onnxruntime")))
    if doc is not None and others:
        return check_ran(model, doc)
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0-19", help="a seed, or FIRST-LAST")
    p.add_argument("--backend", default=os.environ.get("ONNXOP_BACKEND", "vulkan"))
    p.add_argument("--path", default="backend", choices=["backend", "cli", "shown"])
    p.add_argument("--limits", default="default", choices=list(LIMITS))
    p.add_argument("--others", action="store_true", help="a node onnxop does not run in each chain (cli path)")
    p.add_argument("--scale", type=int, default=1, help="dims up to 4 * SCALE (default 1)")
    p.add_argument("--draw", default="plain", choices=["plain", "wide"],
                   help="wide: scatter reductions, TensorScatter, BitCast, CastLike, Neg/Abs/Not/And/Or/Xor, Pad's "
                        "axes, Shape's end, Resize's axes, '' inputs, ... and (backend path) inputs laid out otherwise")
    p.add_argument("--ort", action="store_true", help="also compare with onnxruntime's outputs where it runs the graph")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args()
    SCALE[0] = a.scale
    first, _, last = a.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    bad = 0
    for seed in seeds:
        why = one(seed, a.path, a.backend, a.limits, a.others, a.verbose, a.draw == "wide", a.ort)
        if why:
            if why.startswith("refused"):
                print(f"seed {seed}: {why}")
                continue
            bad += 1
            print(f"seed {seed}: {why}\n  replay: python scripts/fuzz_graphs.py --seeds {seed} --path {a.path} "
                  f"--backend {a.backend} --limits {a.limits}{' --others' if a.others else ''} --draw {a.draw} -v", flush=True)
    for why, n in sorted(REFUSED.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  refused x{n}: {why}")
    for seed, d, which in ORT_DIFFERS:
        print(f"  seed {seed}: onnxruntime differs from onnx.reference ({which}): {d}")
    if a.ort:
        print(f"  onnxruntime ran {ORT[0]}, differed from onnx.reference on {len(ORT_DIFFERS)}")
    print(f"{len(seeds)} seeds, {COMPARED[0]} compared, {bad} failed, {sum(REFUSED.values())} refused, "
          f"{SECOND[0]} decided by onnxruntime")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Differential fuzzer: onnxop's outputs against onnx.reference, bit for bit.

For every operator onnxop runs, each of onnx's own single-node test cases is
mutated -- its data inputs' values (random bits: NaN payloads, -0.0), its data
type (another the schema allows: 4- and 2-bit, float8, bfloat16, complex,
bool, strings), and its inputs' layouts (Fortran order, big-endian,
non-contiguous, negative strides, a transposed view) -- and run on one of
three paths: the API (``onnxop_cli.<op>``), the graph executor (what
``onnxop run`` runs, through ``onnxop_cli.backend``) and the CLI (``onnxop
run model.onnx inputs... -o out/`` on .npy files laid out so, or .pb files
with raw or typed fields, one process per batch). Chains of views and tensor
operators (``--chains``) exercise the executor's lazy views. The expected
outputs are onnx.reference's on the same values; a case it cannot run is
skipped, as is one onnxop declines (out of its scope: float arithmetic,
Resize's linear mode), but a refusal must be one line, no traceback.

Seeded and replayable: each failure prints its seed, case and path, and the
one command that replays it:

    python scripts/fuzz_ops.py --seeds 0-3 --backend vulkan
    python scripts/fuzz_ops.py --seeds 7 --case test_gather_0 --path run --mutation dtype
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fuzz_cases import MUTATIONS, mutate  # noqa: E402
from fuzz_chains import chain_case  # noqa: E402
from fuzz_oracles import (copied_outputs, expand_as_where, native, onnxruntime_outputs,  # noqa: E402
                          own_type_cast, reference, same_bits)

PATHS = ("api", "run", "cli")


def run_api(model: onnx.ModelProto, inputs: list, backend: str) -> list:
    import onnxop_cli as o
    from onnxop_cli.ops import SPECS

    node = model.graph.node[0]
    fn = getattr(o, SPECS[node.op_type].api_name if hasattr(SPECS[node.op_type], "api_name") else _api_name(node.op_type))
    attrs = {a.name.lower(): helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else _attr(v)) for k, v in attrs.items()}
    feeds = dict(zip([i.name for i in model.graph.input], inputs))
    schema = onnx.defs.get_schema(node.op_type, model.opset_import[0].version, node.domain)
    args, named = [], {}
    for k, n in enumerate(node.input):  # positional up to the first left-out input, then by name
        formal = schema.inputs[min(k, len(schema.inputs) - 1)]
        if n and not named and (formal.option != formal.option.Optional or len(args) == k):
            args.append(feeds[n])
        elif n:
            named[formal.name.lower()] = feeds[n]
    out = fn(*args, **named, **attrs, opset=model.opset_import[0].version, backend=backend)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _attr(v):
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def _api_name(op_type: str) -> str:
    import onnxop_cli as o

    snake = "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(op_type))
    snake = snake.replace("_n_d", "_nd")
    return snake if hasattr(o, snake) else snake + "_"


def run_graph(model: onnx.ModelProto, inputs: list, backend: str) -> list:
    from onnxop_cli import backend as onnx_backend

    return list(onnx_backend.OnnxopBackend.prepare(model, backend=backend).run(inputs))


def write_input(x: np.ndarray, path: Path, pb_kind: str) -> Path:
    """``x`` as a file: .npy as it lies (Fortran order, big-endian kept), or .pb with raw or typed fields."""
    if pb_kind == "npy" and _numpy_native_kind(x):
        path = path.with_suffix(".npy")
        np.save(path, x, allow_pickle=False)
        return path
    path = path.with_suffix(".pb")
    x = native(x)
    t = numpy_helper.from_array(x)
    if pb_kind == "typed" and t.raw_data:
        typed = helper.make_tensor(t.name, t.data_type, list(x.shape), _typed_values(x, t.data_type), raw=False)
        if same_bits([x], [numpy_helper.to_array(typed)]) is None:  # (a signalling NaN does not survive
            t = typed  # float_data's trip through a Python float: that one stays raw)
    path.write_bytes(t.SerializeToString())
    return path


def _numpy_native_kind(x: np.ndarray) -> bool:
    return x.dtype.type.__module__ == "numpy" and x.dtype != object


def _typed_values(x: np.ndarray, elem_type: int):
    """The values make_tensor takes for ``elem_type`` (bit patterns for the types numpy lacks)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    if elem_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        return flat.tolist()
    if x.dtype.type.__module__ != "numpy" or x.dtype == np.float16:
        return flat  # make_tensor packs ml_dtypes' and float16 arrays itself
    return flat.tolist()


def run_cli_batch(jobs: list, backend: str, tmp: Path) -> list:
    """Each job (model, inputs, layout kind) through ``onnxop run`` in one process: its outputs or an error string."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from commands import run_commands

    from onnxop_cli.ops import OPERATORS

    commands, outdirs, compared = [], [], []
    for k, (model, inputs, pb_kind) in enumerate(jobs):
        folder = tmp / f"job{k}"
        folder.mkdir()
        (folder / "m.onnx").write_bytes(model.SerializeToString())
        files = [write_input(x, folder / f"in{i}", pb_kind).name for i, x in enumerate(inputs)]
        others = ["--others", "reference"] if any(n.op_type not in OPERATORS for n in model.graph.node) else []
        commands.append((folder, ["run", "m.onnx", *files, "-o", "out/", "--backend", backend, *others]))
        outdirs.append(folder / "out")
        # compare, a consumer on the host: a laid-out .npy equals its values written plainly
        laid = [f for f, x in zip(files, inputs) if f.endswith(".npy") and x.dtype != object
                and (not x.dtype.isnative or not x.flags.c_contiguous)]
        for f in laid:
            np.save(folder / f"{f}.plain.npy", native(np.load(folder / f)))
            commands.append((folder, ["compare", f, f"{f}.plain.npy"]))
        compared.append(len(laid))
    done_all = iter(run_commands(commands, timeout=900))
    found = []
    for (model, _, _), out, n in zip(jobs, outdirs, compared):
        done = next(done_all)
        wrong = [c for c in (next(done_all) for _ in range(n)) if c.returncode or " same " not in c.stdout]
        if wrong:
            found.append(f"CRASH compare of a laid-out input and its values written plainly: exit "
                         f"{wrong[0].returncode}: {(wrong[0].stdout + wrong[0].stderr).strip()[:300]}")
            continue
        if done.returncode:
            left = sorted(p.name for p in out.iterdir()) if out.exists() else []
            found.append(f"exit {done.returncode}: {done.stderr.strip()}"
                         + (f" [and left output files {left}]" if left else ""))
            continue
        got = []
        for o in model.graph.output:
            npy, pb = out / f"{o.name}.npy", out / f"{o.name}.pb"
            got.append(native(np.load(npy) if npy.exists() else numpy_helper.to_array(onnx.load_tensor(str(pb)))))
        found.append(got)
    return found


def refusal_problem(message: str) -> str | None:
    """What is wrong with a refusal, if anything: exit 2, one line ``onnxop: error: ...``, no traceback, no
    output file."""
    code, _, text = message.partition(": ")
    if "Traceback" in text or len(text.strip().splitlines()) != 1 or not text.startswith("onnxop: error: "):
        return "refusal is not one line: " + message[:400]
    if code != "exit 2" or "left output files" in text:
        return "refusal: " + message[:400]
    return None


def replay(seed: int, case: str, path: str, mutation: str, backend: str) -> str:
    return (f"python scripts/fuzz_ops.py --seeds {seed} --case {case} --path {path} "
            f"--mutation {mutation} --backend {backend}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0", help="a seed, or FIRST-LAST")
    p.add_argument("--backend", default=os.environ.get("ONNXOP_BACKEND", "vulkan"))
    p.add_argument("--ops", default="", help="comma-separated operators (default: all)")
    p.add_argument("--case", default="", help="one node test case (or chain_N) by name")
    p.add_argument("--path", default="api,run,cli", help="api, run, cli (comma-separated)")
    p.add_argument("--mutation", default=",".join(MUTATIONS), help=",".join(MUTATIONS))
    p.add_argument("--chains", type=int, default=20, help="chains of views and tensor ops per seed")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    args.case = args.case.split("[")[0]  # (a CLI case is printed with its file kind: chain_4[npy])
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    paths = args.path.split(",")
    mutations = args.mutation.split(",")
    from onnxop_cli.docs.nodetests import node_testcases

    cases = [c for c in node_testcases(args.ops.split(",") if args.ops else None)
             if c.data_sets and (not args.case or c.name == args.case)]
    counts = {"compared": 0, "skipped": 0, "declined": 0, "failed": 0, "reference differs, onnxruntime agrees": 0,
              "reference computes, the copy agrees": 0, "reference canonicalizes an own-type cast": 0}
    failures = []

    def report(seed, name, path, mutation, what):
        counts["failed"] += 1
        failures.append(f"FAIL seed={seed} {name} path={path} mutation={mutation}: {what}\n"
                        f"  replay: {replay(seed, name, path, mutation, args.backend)}")
        print(failures[-1], flush=True)

    for seed in seeds:
        drawn = []  # (name, mutation, model, inputs, expected)
        for k, case in enumerate(cases):
            for mutation in mutations:
                rng = np.random.default_rng([seed, k, MUTATIONS.index(mutation)])
                made = mutate(case, mutation, rng)
                if made is None:
                    counts["skipped"] += 1
                    continue
                model, inputs = made
                expected = reference(model, [native(x) for x in inputs])
                if expected is None:
                    counts["skipped"] += 1
                    continue
                drawn.append((case.name, mutation, model, inputs, expected))
        if not args.case or args.case.startswith("chain_"):
            for n in range(args.chains):
                name = f"chain_{n}"
                if args.case and args.case != name:
                    continue
                model, inputs = chain_case(np.random.default_rng([seed, 10_000 + n]))
                expected = reference(model, inputs)
                if expected is not None:
                    drawn.append((name, "chain", model, inputs, expected))
        for path in paths:
            if path == "cli":
                with tempfile.TemporaryDirectory() as tmp:
                    kinds = ["npy", "raw", "typed"]
                    jobs = [(m, x, kinds[i % 3]) for i, (_, _, m, x, _) in enumerate(drawn)]
                    outs = run_cli_batch(jobs, args.backend, Path(tmp)) if jobs else []
                for (name, mutation, m, x, expected), got, (_, _, kind) in zip(drawn, outs, jobs):
                    _judge(seed, f"{name}[{kind}]", path, mutation, expected, got, counts, report, m, x, args.verbose)
                continue
            for name, mutation, model, inputs, expected in drawn:
                if path == "api" and (len(model.graph.node) > 1 or mutation == "chain"):
                    continue
                try:
                    got = (run_api if path == "api" else run_graph)(model, inputs, args.backend)
                except Exception as e:  # noqa: BLE001
                    got = _exception(e, args.verbose)
                _judge(seed, name, path, mutation, expected, got, counts, report, model, inputs, args.verbose)
    print(f"{counts['compared']} compared, {counts['failed']} failed, {counts['declined']} declined "
          f"(of the compared, where onnx.reference differs: {counts['reference differs, onnxruntime agrees']} "
          f"onnxruntime agrees with onnxop, {counts['reference computes, the copy agrees']} the elements copied "
          f"agree, {counts['reference canonicalizes an own-type cast']} an own-type cast is its input) "
          f"(out of scope or refused in one line), {counts['skipped']} drawn cases onnx.reference or the "
          f"mutation could not make; cases {len(cases)}, seeds {len(seeds)}, paths {paths}", flush=True)
    return 1 if failures else 0


def _exception(e: Exception, verbose: bool) -> str:
    from onnxop_cli.errors import OnnxopError

    if isinstance(e, OnnxopError) or type(e).__name__ == "NotRun":
        return f"exit {getattr(e, 'exit_code', 2)}: onnxop: error: {getattr(e, 'message', e)}"
    return "CRASH " + ("".join(traceback.format_exception(e)) if verbose else f"{type(e).__name__}: {e}")


def _judge(seed, name, path, mutation, expected, got, counts, report, model, inputs, verbose=False) -> None:
    if isinstance(got, str):
        if got.startswith("CRASH"):
            report(seed, name, path, mutation, got)
        elif (problem := refusal_problem(got)) is not None:
            report(seed, name, path, mutation, problem)
        else:
            counts["declined"] += 1
            if verbose:
                print(f"declined seed={seed} {name} path={path} mutation={mutation}: {got[:300]}")
        return
    counts["compared"] += 1
    if (what := same_bits(expected, got)) is None:
        return
    copied = copied_outputs(model, [native(x) for x in inputs])
    if copied is not None and same_bits(copied, got) is None:
        counts["reference computes, the copy agrees"] += 1
        return
    spelled = expand_as_where(model)
    if spelled is not None and same_bits(reference(spelled, [native(x) for x in inputs]) or [], got) is None:
        counts["reference computes, the copy agrees"] += 1
        return
    if own_type_cast(model, inputs, got):
        counts["reference canonicalizes an own-type cast"] += 1
        return
    second = onnxruntime_outputs(model, [native(x) for x in inputs])
    if second is not None and same_bits(second, got) is None:
        counts["reference differs, onnxruntime agrees"] += 1
        return
    how = "onnxruntime differs too" if second is not None else "onnxruntime cannot run it"
    report(seed, name, path, mutation, f"false result versus onnx.reference ({how}): {what}")


if __name__ == "__main__":
    sys.exit(main())

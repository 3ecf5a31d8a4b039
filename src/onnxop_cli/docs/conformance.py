"""``onnxop conformance``: run ONNX backend node-test folders through onnxop,
or through another runtime (``--runtime``: runtimes/).

A node test is a folder holding ``model.onnx`` (one node) and
``test_data_set_*/input_*.pb`` / ``output_*.pb``, as onnx's backend test
generator writes them. The operator, its attributes, its constant inputs and
the opset are taken from the model (``ops/model.py``); every data set's inputs go
through the same path the operator commands take (the GPU kernels), and the
output must equal ``output_0.pb`` exactly: shape, type and every bit (ONNX's
own runner allows a tolerance; moving bytes needs none).

With no folder, onnx's own node tests of every operator onnxop runs are built
from the installed onnx package into a temporary folder (``nodetests.py``)
and run. Models with another operator, more than one node, or inputs that are
not tensors are skipped with the reason. Any other problem with a case fails
that case, not the run. Each case gets one outcome (OUTCOMES): a case whose
data set holds ``expected_error.json`` (``onnxop cases write``) passes when the
runtime refuses it and is ``no_error`` when it returns data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import Interrupted, OnnxopError, UsageError
from .outcome import Fail
from .runtimes import DEFAULT, Refused, resolve  # noqa: F401 - the CLI takes them from here

MODEL = "model.onnx"


OUTCOMES = ("passed", "wrong", "no_error", "error", "not_on_webgpu", "skipped")
FAILING = ("wrong", "no_error", "error")  # exit 1
RESULT = {"passed": "passed", "skipped": "skipped", "not_on_webgpu": "skipped"}  # the rest: "failed"


@dataclass(frozen=True)
class CaseResult:
    name: str
    operator: str | None  # "Flatten-25", the op type of a skipped model, "graph"; None: not read
    opset: int | None  # None: the model was not read that far
    data_sets: int | None  # None: skipped, or failed before the data sets were counted
    outcome: str  # one of OUTCOMES
    detail: str = ""
    runtime: str = "onnxop"

    @property
    def status(self) -> str:
        """``passed``, ``failed`` (wrong, no_error, error) or ``skipped`` (skipped, not_on_webgpu)."""
        return RESULT.get(self.outcome, "failed")

    @property
    def op_type(self) -> str:
        """What the per-operator summary counts it under: Flatten, graph, ?."""
        return (self.operator or "?").split("-")[0]


def find_cases(dirs: list[Path]) -> list[tuple[Path, str]]:
    """(folder, display name) of every node test in or under ``dirs``, sorted
    per argument. Symlinked folders are not followed."""
    cases: list[tuple[Path, str]] = []
    for top in dirs:
        top = Path(top)
        if not top.exists():
            raise UsageError(f"{top}: no such folder")
        if not top.is_dir():
            raise UsageError(f"{top}: not a folder (give a node-test folder or a folder of them)")
        if (top / MODEL).is_file():
            cases.append((top, top.name or str(top)))
            continue
        found = []
        for root, subdirs, files in os.walk(top, followlinks=False):
            subdirs.sort()
            if MODEL in files:
                found.append(Path(root))
                subdirs[:] = []  # a test folder's own sub-folders are its data sets
        if not found:
            raise UsageError(f"{top}: no ONNX node tests found (folders holding {MODEL})")
        cases += [(p, p.relative_to(top).as_posix()) for p in sorted(found)]
    return cases


def run_all(dirs: list[Path], backend: str | None = None, op: str | None = None,
            runtime: str | None = None) -> list[CaseResult]:
    """The cases in ``dirs``; with none, onnx's node tests of onnxop's operators.
    ``op`` keeps only the cases of that operator (an op type); ``runtime``
    names what runs them (runtimes/: onnxop by default, on ``backend``)."""
    rt = runtime if runtime is not None and not isinstance(runtime, str) else resolve(runtime, backend)
    if op is not None:
        op = _known_op(op)
    if not dirs:
        import tempfile

        from .nodetests import write_all

        with tempfile.TemporaryDirectory(prefix="onnxop-node-tests-") as folder:
            write_all(Path(folder), [op] if op and op != CONSTANT else None)
            return _selected(find_cases([Path(folder)]), rt, op)
    return _selected(find_cases(dirs), rt, op)


CONSTANT = "Constant"


def _known_op(op: str) -> str:
    """An operator of the registry (its one-node cases) or one a graph may hold (Constant)."""
    from ..ops import OPERATORS
    from ..ops.model import supported

    known = list(dict.fromkeys([*OPERATORS, *supported()]))
    names = {n.lower(): n for n in known}
    if op.lower() not in names:
        raise UsageError(f"--op {op!r}: onnxop runs {', '.join(known)}")
    return names[op.lower()]


def _selected(cases: list[tuple[Path, str]], rt, op: str | None) -> list[CaseResult]:
    results = []
    for path, name in cases:
        r = run_case(path, name, rt)
        if op is None or r.op_type == op:
            results.append(r)
    return results


def run_case(folder: Path, name: str, rt=None) -> CaseResult:
    """One node test: every data set through the runtime (onnxop's: the graph
    executor, one node or many), each output compared bit for bit, or the
    refusal a case's ``expected_error.json`` asks for. Whatever goes wrong
    decides this case only, with its reason."""
    from .cases import read_expected_error
    from .runtimes import Broke, Lacks, NotOnWebGPU

    rt = rt if rt is not None and not isinstance(rt, str) else resolve(rt)
    operator, opset, sets, current = None, None, None, ""

    def result(outcome: str, detail: str = "", counted: int | None = None) -> CaseResult:
        where = f"{current}: " if current and outcome not in ("passed", "skipped") else ""
        return CaseResult(name, operator, opset, counted, outcome, f"{where}{detail}", rt.name)

    try:
        model = _load_model(folder / MODEL)
        operator = _operator(model)
        if rt.name != DEFAULT:  # onnxop says its own version and opset once it has read the model
            operator, opset = _label(model) or operator, _opset(model)
            untensored = _not_a_tensor(model)
            if untensored:  # onnxop's load refuses such a model itself, in the same words
                raise Lacks(f"{untensored}; conformance feeds and compares tensors (input_N.pb, output_N.pb)")
        if rt.name != DEFAULT:  # another runtime gets the model as bytes: its external data read in here
            from ..core.others import model_inlined

            model = model_inlined(model, folder)
        try:
            loaded = rt.load(model, folder)
        except Refused as e:
            loaded = e  # refused at load: the data sets decide whether that was right
        if not isinstance(loaded, Exception):
            operator, opset = loaded.operator or operator, loaded.opset or opset
        data_sets = sorted(
            (p for p in folder.iterdir() if p.is_dir() and p.name.startswith("test_data_set_")),
            key=lambda p: _index(p.name),
        )
        if not data_sets:
            raise Fail("no test_data_set_* folders")
        if isinstance(loaded, Exception) and all(read_expected_error(d) is None for d in data_sets):
            raise Fail(str(loaded), "error")  # a valid model, refused as it was read
        sets = len(data_sets)
        for data_set in data_sets:
            current = data_set.name
            _run_data_set(loaded, data_set)
        current = ""
        return result("passed", counted=sets)
    except Lacks as e:
        return result("skipped", str(e))
    except NotOnWebGPU as e:
        return result("not_on_webgpu", str(e), sets)
    except Broke as e:  # its browser died or hung: never the refusal a case may require
        return result("error", str(e), sets)
    except Fail as e:
        return result(e.outcome, str(e), sets)
    except OnnxopError as e:
        if isinstance(e, Interrupted):
            raise
        return result("error", str(e), sets)
    except Exception as e:  # noqa: BLE001 - one unreadable case must not end the run
        text = " ".join(str(e).split())[:200]
        return result("error", f"internal error: {type(e).__name__}: {text}", sets)


def _not_a_tensor(model) -> str:
    """The first graph input or output that is no tensor ("graph input 'x' is a sequence value"), or '': another
    runtime loaded test_identity_opt and test_identity_sequence, which onnxop writes without data (it cannot read
    or write their values), and the case was the runtime's error, 'no test_data_set_* folders'."""
    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for v in values:
            what = v.type.WhichOneof("value")
            if what != "tensor_type":
                what = (what or "typeless").replace("_type", "")
                return f"graph {kind} {v.name!r} is {'an' if what[0] in 'aeiou' else 'a'} {what} value"
    return ""


def _operator(model) -> str | None:
    """The op type of a one-node model; "graph" for several nodes."""
    nodes = list(model.graph.node)
    if len(nodes) == 1:
        return nodes[0].op_type
    return "graph" if nodes else None


def _index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else -1


def _load_model(path: Path):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise Fail(f"{MODEL} cannot be read: {' '.join(str(e).split())[:200]}") from None


def _opset(model) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def _label(model) -> str | None:
    """``Gather-13`` for a one-node model: the version of the rules the opset picks (onnx's schemas)."""
    import onnx

    nodes = list(model.graph.node)
    if len(nodes) != 1 or _opset(model) is None:
        return None
    try:
        return f"{nodes[0].op_type}-{onnx.defs.get_schema(nodes[0].op_type, _opset(model), nodes[0].domain).since_version}"
    except Exception:  # noqa: BLE001 - an operator onnx does not know
        return None


def _run_data_set(loaded, data_set: Path) -> None:
    """Run one data set; raises Fail (its outcome), Lacks or NotOnWebGPU unless it passes."""
    from ..io.tensorproto import read_pb
    from .cases import read_expected_error

    inputs = _files(data_set, "input")
    refusal = read_expected_error(data_set)
    outputs = [] if refusal is not None else _files(data_set, "output")
    session = None if isinstance(loaded, Exception) else loaded.session
    names = getattr(session, "inputs", None)
    if names is not None and len(inputs) != len(names):
        raise Fail(f"{len(inputs)} input_*.pb for the graph's {len(names)} inputs ({', '.join(names)})")
    feeds = [read_pb(path) for path in inputs]
    try:
        if session is None:
            raise loaded
        results = session.run(feeds)
    except Refused as e:
        if refusal is not None:
            return
        raise Fail(str(e), "error") from None
    if refusal is not None:
        shown = "; ".join(_shown(t) for t in results)
        raise Fail(f"returned {shown or 'no outputs'} where the spec requires an error: {refusal}", "no_error")
    expected = [read_pb(path) for path in outputs]
    held_to(results, expected, getattr(session, "outputs", None) or [t.name for t in expected], " (output_*.pb)")


def _shown(t) -> str:
    """``'y' (1, 3) float32 [12., 13., 14.]``: what a runtime returned, in short (the name quoted: it comes from a file)."""
    import numpy as np

    from ..render.values import format_values

    try:
        values = t.strings.reshape(-1)[:6] if t.dtype.is_string else t.to_numpy().reshape(-1)[:6]
        text = format_values(np.asarray(values))
    except Exception:  # noqa: BLE001 - the summary must not hide the outcome
        text = "?"
    text = " ".join(text.split())
    return f"{t.name!r} {tuple(t.shape)} {t.dtype.name} {text}{' ...' if t.size > 6 else ''}"


def _files(data_set: Path, kind: str) -> list[Path]:
    """``input_0.pb``, ``input_1.pb``, ... in order; a gap fails the case."""
    found = sorted((p for p in data_set.glob(f"{kind}_*.pb") if _index(p.stem) >= 0), key=lambda p: _index(p.stem))
    if [_index(p.stem) for p in found] != list(range(len(found))):
        raise Fail(f"{data_set.name}: {kind}_N.pb files are not numbered 0, 1, ...")
    return found


def _bits(values):
    """Elements as unsigned integers of their width (NaN payloads, -0.0 and
    the 4- and 2-bit types, one per byte once unpacked, compare exactly)."""
    import numpy as np

    a = np.ascontiguousarray(values).reshape(-1)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}").reshape(-1, 1)
    return a.view("u1").reshape(a.size, a.dtype.itemsize)  # complex128: 16 bytes


def held_to(results, expected, names, where: str = "") -> None:
    """Every output equal to its expected one, bit for bit (``compare``):
    the one check of ``conformance`` and ``doc-examples``, whichever source
    the case came from. Nothing expected is a failure, never a pass."""
    if not expected:
        raise Fail(f"no expected output{where}: nothing to compare the {len(results)} output(s) with")
    if len(results) != len(expected):
        raise Fail(f"{len(results)} outputs, expected {len(expected)}{where}", "wrong")
    for actual, want, name in zip(results, expected, names):
        try:
            compare(actual, want, name, show_bytes=True)
        except Fail as e:
            e.output = name
            raise


def compare(actual, expected, name: str, *, show_bytes: bool = False) -> None:
    """Equal shape, type and bits (NaN payloads and -0.0 included); Fail
    (outcome ``wrong``) names the first element that differs, and with
    ``show_bytes`` its bytes as each side holds them (little-endian)."""
    import numpy as np

    if actual.shape != expected.shape:
        raise Fail(f"shape {actual.shape} != expected {expected.shape}", "wrong")
    if actual.dtype is not expected.dtype:
        raise Fail(f"type {actual.dtype} != expected {expected.dtype}", "wrong")
    if actual.size == 0:
        return
    if actual.dtype.is_string:
        got, want = actual.strings.reshape(-1), expected.strings.reshape(-1)
        diff = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    else:
        got, want = _bits(actual.to_numpy()), _bits(expected.to_numpy())
        diff = list(np.flatnonzero((got != want).any(axis=1)))
    if diff:
        from ..render.values import format_values

        where = np.unravel_index(int(diff[0]), actual.shape)
        at = f"{name}[{', '.join(str(int(i)) for i in where)}]"
        shown = (format_values(np.asarray(t.to_numpy()[where])) for t in (actual, expected))
        text = f"{len(diff)} of {actual.size} elements differ; first {at} = {next(shown)}, expected {next(shown)}"
        if show_bytes and not actual.dtype.is_string:
            hexed = (bytes(np.ascontiguousarray(b[int(diff[0])]).view("u1")).hex(" ") for b in (got, want))
            text += f" (bytes {next(hexed)}, expected {next(hexed)})"
        raise Fail(text, "wrong")



def per_operator(results: list[CaseResult]) -> list[str]:
    """``Flatten: 11 passed, 0 failed, 1 skipped (skipped: ...)``, per operator."""
    by_op: dict[str, list[CaseResult]] = {}
    for r in results:
        by_op.setdefault(r.op_type, []).append(r)
    lines = []
    for op, rs in sorted(by_op.items()):
        reasons = sorted({r.detail for r in rs if r.status == "skipped"})
        why = f" (skipped: {'; '.join(reasons)})" if reasons else ""
        lines.append(f"{op}: {summary(rs)}{why}")
    return lines


def summary(results: list[CaseResult]) -> str:
    """``5 passed, 2 failed (1 wrong, 1 error), 1 skipped``: the failed ones by outcome when any failed."""
    count = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    how = [f"{n} {o}" for o in FAILING if (n := sum(r.outcome == o for r in results))]
    elsewhere = [f"{n} not_on_webgpu" for n in [sum(r.outcome == "not_on_webgpu" for r in results)] if n]
    return f"{count['passed']} passed, {count['failed']} failed{_how(how)}, {count['skipped']} skipped{_how(elsewhere)}"


def _how(how: list[str]) -> str:
    return f" ({', '.join(how)})" if how else ""

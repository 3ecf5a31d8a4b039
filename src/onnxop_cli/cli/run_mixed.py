"""``onnxop run MODEL --others RUNTIME | --verify | --dump DIR``: a model split
into regions (core/partition.py), onnxop's on the WebGPU adapter through the
graph executor, the others' on onnxruntime or onnx.reference (core/others.py).

The inputs and outputs are those of ``run`` (cli/run.py: files in order,
``--input``, ``test_data_set_N/``, ``-o FILE|DIR/|X.npz|-``, ``--check``);
this module adds what ran where, what crossed, ``--verify``'s comparisons
(core/verify.py) and ``--dump``'s files (io/valuefiles.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from ..errors import InputError, Mismatch, OnnxopError, UsageError
from ..render.node import quote  # names and paths from files, in a line of text



def run_mixed(ctx, m, model_path: Path, files: dict[str, Path], feeds: dict, *, output: Optional[Path],
              to_folder: bool, check: Optional[Path], full: bool, others: Optional[str], verify: bool,
              dump: Optional[Path], started: float, fmt: Optional[str] = None) -> None:
    import time

    from . import options as cli
    from . import run_files as plain
    from ..core import others as runner
    from ..core import partition
    from ..ops.nodekinds import refused_nodes

    out = cli._out(ctx)
    backend = cli._backend(ctx)
    if others is None:
        refused = refused_nodes(m)
        if refused is not None:
            raise refusal(model_path, refused)
    if dump is not None and output is not None and to_folder and Path(output).resolve() == Path(dump).resolve():
        raise UsageError(f"--dump {dump} and -o {output} name one folder; give each its own")
    if dump is not None and check is not None and Path(check).resolve() == Path(dump).resolve():
        # the dump would replace the expected files with the run's own values, and --check then passed
        raise UsageError(f"--dump {dump} and --check {check} name one folder: the dump would write over the "
                         f"files it checks against; give each its own")
    try:
        part = partition.split(m, others or "onnxruntime", keep_all=dump is not None, keep_onnxop=verify,
                               unknown=others is None)  # (no --others: every node onnxop's, as others_in found)
    except OnnxopError as e:
        raise e.reworded(f"{model_path}: {e.message}") from None
    if verify or any(r.runtime == "onnxruntime" for r in part.regions):
        from ..core.other_onnxruntime import module

        module()  # installed: said before anything runs
    declared = {v.name: v for v in m.graph.input}
    from ..core.graph import _check_declared

    for name, t in feeds.items():
        try:
            _check_declared(declared.get(name), t)
        except OnnxopError as e:  # named as the plain run names it (core/graph.py plan, reworded in cli/run.py)
            raise e.reworded(f"{model_path}: {e.message}") from None
    if output is not None:  # a name no file holds, several outputs for one file: refused before running
        # (and before --dump makes its folder)
        from ..core.tensor import dtype_by_name
        from ..io import valuefiles

        names = [v.name for v in m.graph.output]
        kind, _ = plain.targets([SimpleNamespace(name=n, dtype=dtype_by_name("float32")) for n in names],
                                 output, to_folder)
        if kind == "dir":
            valuefiles.check_names(output, names, f"-o {output}")
    inspect = []
    dumped: dict[str, Path] = {}
    made = False  # a folder this run made: removed if it stays empty
    if dump is not None:
        write, made = _dumper(m, part, dump, dumped, files)
        inspect.append(write)
    verifier = None
    if verify:
        from ..core.verify import Verifier

        verifier = Verifier(m.opset_import, m.ir_version, model_path.parent)
        inspect.append(verifier)
    try:
        try:
            results, ran = runner.run(part, feeds, model_path.parent, backend=backend,
                                      inspect=(lambda r, value: [f(r, value) for f in inspect]) if inspect else None)
        except (UsageError, InputError) as e:  # a node's refusal, named as the plain run names it (cli/run.py)
            raise e.reworded(f"{model_path}: {e.message}") from None
        from ..core.graph import check_output

        for v, t in zip(m.graph.output, results):  # before --check, printing or -o
            try:
                check_output(v, t.dtype, tuple(t.shape))
            except OnnxopError as e:
                raise e.reworded(f"{model_path}: {e.message}") from None
        if verifier is not None and not verifier.summary():  # as conformance and compare: nothing compared fails
            from ..core.partition import RUNTIME_NAMES, counted

            others = "; ".join(f"{RUNTIME_NAMES[rt]} ran {counted(sorted(by.items()))}" for rt, by in ran.nodes.items())
            raise Mismatch(f"{model_path}: --verify compared nothing: onnxop ran none of the model's "
                           f"{len(m.graph.node)} node(s){f' ({others})' if others else ''}, so none of its "
                           "results was checked; drop --verify")
        written: dict[str, Path] = {}
        lines = summary(part, ran, verifier, dump, dumped)
        if check is not None:
            compared = plain.check(None, results, check)  # the files' kind, not the inputs' files _document reads
            out.note(f"{_graph_of(m, feeds)}: {len(results)} output(s) equal {quote(check)}'s {compared}, bit for bit")
        elif output is None:
            out.result(_printed(m, part, feeds, results, lines, full))
            lines = []
        else:
            written = _write(results, output, to_folder, out, _graph_of(m, feeds), fmt)
        for line in lines:
            out.note(line)
        if out.json:
            out.document(_document(m, files, feeds, results, written, ran, verifier, dumped, backend,
                                   time.perf_counter() - started))
    except OnnxopError as e:
        raise _dump_kept(e, dump, dumped, made) from None


def _dump_kept(e: OnnxopError, dump: Optional[Path], dumped: dict[str, Path], made: bool) -> OnnxopError:
    """A run that fails after --dump began: the files written stay (what the
    nodes made, for diagnosis) and the error line says so, so that a partial
    dump is not taken for a run's; a folder this run made and left empty goes."""
    if dump is None:
        return e
    if not dumped:
        if made:
            try:
                dump.rmdir()
            except OSError:
                pass
        return e
    return e.reworded(f"{e.message} (--dump {quote(dump)} keeps the {len(dumped)} value(s) the nodes made "
                      f"before that, for diagnosis)")


def refusal(model_path: Path, e) -> OnnxopError:
    """The refusal of a model with nodes onnxop does not run, naming the flag and
    where it runs them: an If on the host, whose branch is split as the model is."""
    host = " (an If on the host, the branch it takes split the same way)" if any(
        kind == "If" for kind, _ in getattr(e, "counts", ())) else ""
    return e.reworded(f"{model_path}: {e.message}; --others onnxruntime runs them on onnxruntime{host} "
                      f"(--others reference: on onnx.reference)")


def _dumper(m, part, folder: Path, dumped: dict[str, Path], files: dict[str, Path]):
    """Writes each value a node made as ``folder/<name>.npy`` (.pb for the
    types numpy lacks) as soon as its region ran; names are checked first.
    Returns the writer and whether this run made the folder."""
    from ..io import valuefiles

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--dump {quote(folder)}: not a folder")
    if not folder.is_dir() and not folder.parent.is_dir():
        raise UsageError(f"--dump {quote(folder)}: no such folder, and no folder {quote(folder.parent)} to make it in")
    from ..core.partition import made_values

    # the names first: a refused run leaves no folder behind
    values = made_values([n for r in part.regions for n in r.nodes])
    valuefiles.check_names(folder, values, "--dump")
    read = {_real(p) for p in files.values()}
    for name in values:  # its file is .npy or .pb, by the type it turns out to have
        for path in (folder / (valuefiles.file_stem(name) + s) for s in (".npy", ".pb")):
            if path.exists() and _real(path) in read:
                raise UsageError(f"--dump {quote(folder)}: value {name!r} would be written over {quote(path)}, "
                                 f"an input of this run; dump into another folder")
    made = False
    if not folder.is_dir():
        from .run_files import make_folder, naming

        with naming("--dump "):
            made = make_folder(folder)  # False: another run made it between the check and here: theirs

    def write(region, value) -> None:
        for name in region.outputs:
            t = value(name)
            path = valuefiles.value_paths(folder, [(name, t.dtype)], "--dump")[name]
            valuefiles.write(path, t)
            dumped[name] = path

    return write, made


def _real(path: Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(path).absolute()


def summary(part, ran, verifier, dump, dumped) -> list[str]:
    from ..core.partition import RUNTIME_NAMES, counted

    total = sum(sum(by.values()) for by in ran.nodes.values())
    lines = [f"Ran {total} node(s) in {len(ran.regions)} region(s):"]
    for runtime, by in ran.nodes.items():
        ordered = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
        lines.append(f"  {RUNTIME_NAMES[runtime]}: {sum(by.values())} ({counted(ordered)})")
    lines.append(f"  crossed: {ran.uploaded} bytes to the device, {ran.read_back} bytes back")
    if verifier is not None:
        done = ", ".join(f"{v['op']} x{v['nodes']} on {v['runtime']}" for v in verifier.summary())
        lines.append(f"Verified {sum(v['nodes'] for v in verifier.summary())} node(s) bit for bit: {done or 'none'}")
        if verifier.differs:
            lines.append(f"onnxruntime differs from onnx.reference, which onnxop follows, on {len(verifier.differs)} "
                         f"of them, so the outputs can differ from onnxruntime's own run: {verifier.differs[0]}")
    if dump is not None:
        lines.append(f"Dumped {len(dumped)} value(s) to {quote(dump)}")
    return lines


def _printed(m, part, feeds, results, lines: list[str], full: bool) -> str:
    from ..render.node import Shown, tensor_lines

    text = [*lines, "", "Inputs:"]
    for name, t in feeds.items():
        text += tensor_lines(Shown(name, t.shape, t.dtype.name, t.to_numpy(native=False)), full=full)
    text += ["", "Outputs:"]
    for t in results:
        text += tensor_lines(Shown(t.name, t.shape, t.dtype.name, t.to_numpy()), full=full)
    return "\n".join(text)


def _graph_of(m, feeds) -> str:
    """``graph of 3 nodes: x (2, 3) float32`` (as run's 'wrote' lines begin)."""
    given = ", ".join(f"{quote(n)} {tuple(t.shape)} {t.dtype}" for n, t in feeds.items())
    return f"graph of {len(m.graph.node)} nodes: {given}"


def _write(results, output: Path, to_folder: bool, out, what: str, fmt: Optional[str] = None) -> dict[str, Path]:
    from contextlib import ExitStack

    from . import run_files as plain
    from .. import io
    from ..io import valuefiles
    from ..io.stdio import stdio_label

    kind, targets = plain.targets(results, output, to_folder, fmt)
    plain.prepare(kind, targets, results, output, fmt)
    if kind == "stdout":
        out.data_on_stdout = True
    if kind == "dir":
        for t in results:
            valuefiles.write(targets[t.name], t)
    else:
        with ExitStack() as stack:
            writer = stack.enter_context(io.open_writer(output, fmt=fmt))
            for t in results:
                if t.dtype.is_string:
                    writer.strings(t.name, t.strings, t.text_dtype)
                    continue
                with writer.tensor(t.name, tuple(t.shape), t.dtype) as sink:
                    if t.size:
                        sink(memoryview(valuefiles.row_major(t)))
    for t in results:
        out.note(f"{what} -> {quote(t.name)} {tuple(t.shape)} {t.dtype}, wrote {quote(stdio_label(targets[t.name]))}")
    return dict(targets)


def _document(m, files, feeds, results, written, ran, verifier, dumped, backend, total: float) -> dict:
    from . import options as cli
    from ..gpu.device import opened
    from ..ops.model import opset_of
    from ..render import json as report

    gpu = opened(backend)
    entries_in = [report.tensor_entry(t, files.get(n)) | {"name": n} for n, t in feeds.items()]
    outs = [{"name": t.name, "path": str(written[t.name]) if t.name in written else None,
             "shape": list(t.shape), "dtype": t.dtype.name} for t in results]
    try:
        opset = opset_of(m)
    except OnnxopError:
        opset = None
    return report.base("run") | {
        "op": "graph",
        "opset": opset,
        "attributes": {},
        "backend": gpu.info.our_backend if gpu is not None else "host",
        "adapter": gpu.name if gpu is not None else "host",
        "runs": [{"inputs": entries_in, "outputs": outs, "timings": {"total": round(total, 6)}}],
        "timings": {"total": round(total, 6)},
        **cli._kernels_used(backend),
        "ran": {runtime: dict(sorted(by.items())) for runtime, by in ran.nodes.items()},
        "regions": ran.regions,
        "transfers": {"uploaded": ran.uploaded, "read_back": ran.read_back},
        "verified": verifier.summary() if verifier is not None else None,
        "onnxruntime_differs": verifier.differs if verifier is not None else None,
        "dumped": {n: str(p) for n, p in dumped.items()} if dumped else None,
    }

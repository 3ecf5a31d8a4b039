"""``onnxop cases``: the edge-case corpus, written as ordinary node-test folders.

Each case is one node: ``<name>/model.onnx`` and ``<name>/test_data_set_0/
input_<i>.pb``, with ``output_<i>.pb`` when the case is valid, or
``expected_error.json`` when the spec requires the runtime to refuse it
(``{"error": why, "operator": ..., "class": ...}``). Any runtime's own node-test
runner reads the valid ones; ``onnxop conformance DIR --runtime NAME`` reads
both. The expected outputs come from onnx's reference evaluator, and an
error case is one the reference refuses too (``write`` checks both ways).

The classes are the ones onnxop was built around (``indices.py``,
``shapes.py``, ``bits.py``): indices at and past every edge, more inputs or
outputs than one bind group holds, Pad in every mode, ranks 5 to 8, zero-size
axes, NaN payloads and -0.0 in every float type, odd lengths of the 1-, 2-
and 4-bit types; with ``big``, dispatches past 65,535 workgroups and tensors
past one 128 MiB binding. Every value is drawn from fixed seeds, so two writes
are byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .case import EXPECTED_ERROR, Case, typed


def corpus(big: bool = False) -> list[Case]:
    """Every case, in a fixed order (``big``: the large ones too)."""
    from . import bits, indices, shapes

    cases = [*indices.cases(), *shapes.cases(), *bits.cases()]
    if big:
        cases += shapes.big_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "two cases share a name"
    assert all(map(typed, cases)), [c.name for c in cases if not typed(c)]
    return cases


def model(case: Case, outputs: list | None = None):
    """The one-node model; output types (and shapes) from ``outputs`` when known."""
    from onnx import helper

    names = [f"y{i}" if case.outputs > 1 else "y" for i in range(case.outputs)]
    node = helper.make_node(case.op, [n for n, _ in case.inputs], names, **case.attrs)

    def info(name, array):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    if outputs is None:  # an error case: the type of the data input, the shape unknown
        elem = helper.np_dtype_to_tensor_dtype(case.inputs[0][1].dtype)
        outs = [helper.make_tensor_value_info(n, elem, None) for n in names]
    else:
        outs = [info(n, a) for n, a in zip(names, outputs)]
    graph = helper.make_graph([node], case.name, [info(n, a) for n, a in case.inputs], outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)], producer_name="onnxop cases")
    m.ir_version = 10
    return m


def expected(case: Case) -> list | None:
    """The reference evaluator's outputs; None for an error case (one the
    spec calls an error: the reference is not asked, it checks some bounds
    and not others, and some out-of-range indices send it into very long
    loops). A valid case the reference refuses is a corpus bug."""
    import warnings

    import numpy as np
    from onnx.reference import ReferenceEvaluator

    if case.error:
        return None
    feeds = {n: a for n, a in case.inputs}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return [np.asarray(a) for a in ReferenceEvaluator(model(case)).run(None, feeds)]
    except Exception as e:  # noqa: BLE001 - the reference raises whatever numpy raises
        raise AssertionError(f"{case.name}: the reference refuses a valid case: {type(e).__name__}: {e}") from None


def write(out: Path, big: bool = False) -> list[Path]:
    """Write every case under ``out`` (created if need be)."""
    return [write_case(c, Path(out)) for c in corpus(big)]


def write_atomic(out: Path, big: bool = False) -> list[Path]:
    """Write the corpus into a new folder ``out``: built in a temporary folder
    beside it and renamed into place whole, so an interrupted or failed write
    leaves nothing. An existing ``out`` must be an empty folder."""
    import errno
    import os
    import shutil
    import tempfile

    from ...core import signals
    from ...errors import OutputError, UsageError

    out = Path(out)
    # what the user can fix is a usage error (exit 2), as every command's output path is
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise UsageError(f"{str(out)!r}: exists and is not a folder (cases write makes a new folder)")
        if any(out.iterdir()):
            raise UsageError(f"{str(out)!r}: exists and is not empty (cases write makes a new folder)")
    parent = out.absolute().parent
    if not parent.is_dir():
        raise UsageError(f"{str(out)!r}: the folder {str(parent)!r} does not exist")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".onnxop-tmp", dir=parent))
    except OSError as e:  # the error named the temporary folder, which the user never asked for
        error = OutputError if e.errno == errno.ENOSPC else UsageError
        raise error(f"{str(out)!r}: cannot make a folder in {str(parent)!r}: {e.strerror or e}") from None
    try:
        written = write(tmp, big)
        with signals.held():
            signals.commit()
            try:
                if out.is_dir():
                    out.rmdir()
                os.rename(tmp, out)
            except OSError as e:  # another process wrote into it (or made it) while this one built its own
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                raise OutputError(f"{str(out)!r}: another process wrote into it meanwhile; not written "
                                  f"(cases write makes a new folder)") from None
    except BaseException:
        with signals.held():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / p.name for p in written]


def entry(case: Case) -> dict[str, Any]:
    """A case as ``cases list --json`` shows it."""
    return {"name": case.name, "class": case.klass, "operator": case.op, "opset": case.opset,
            "error": case.error or None}


def write_case(case: Case, out: Path) -> Path:
    from onnx import numpy_helper

    outputs = expected(case)
    folder = out / case.name
    data_set = folder / "test_data_set_0"
    data_set.mkdir(parents=True, exist_ok=True)
    m = model(case, outputs)
    (folder / "model.onnx").write_bytes(m.SerializeToString())
    for i, (name, array) in enumerate(case.inputs):
        (data_set / f"input_{i}.pb").write_bytes(numpy_helper.from_array(array, name).SerializeToString())
    if outputs is None:
        doc = {"error": case.error, "operator": case.op, "opset": case.opset, "class": case.klass}
        (data_set / EXPECTED_ERROR).write_text(json.dumps(doc, indent=1) + "\n")
    else:
        for i, (info, array) in enumerate(zip(m.graph.output, outputs)):
            proto = numpy_helper.from_array(array, info.name)
            (data_set / f"output_{i}.pb").write_bytes(proto.SerializeToString())
    return folder


def read_expected_error(data_set: Path) -> str | None:
    """The reason an ``expected_error.json`` gives, or None when the data set has none."""
    path = data_set / EXPECTED_ERROR
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        return str(doc["error"])
    except (ValueError, KeyError, TypeError):
        return f"(unreadable {EXPECTED_ERROR})"

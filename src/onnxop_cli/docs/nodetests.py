"""onnx's own backend node tests for the operators onnxop runs, built offline.

The cases come from onnx's machinery: importing ``onnx.backend.test.case.node.<op>``
runs its ``export*`` methods, whose ``expect(...)`` calls register the test
models and data (seeded as onnx seeds them). They are written the way onnx's
``backend-test-tools generate-data`` writes node tests: ``<name>/model.onnx``
and ``<name>/test_data_set_0/{input,output}_<i>.pb``. Only single-node cases
are kept (onnx adds ``*_expanded`` function expansions of some operators).
Cases whose inputs are sequences or optionals (two of Identity's) are written
without data: conformance reports them as skipped, for every runtime, since
onnxop runs tensors and its cases feed and compare tensors.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..ops import OPERATORS


def node_testcases(op_types=None) -> list:
    """The registered single-node cases of ``op_types`` (default: every operator onnxop runs)."""
    wanted = set(op_types or OPERATORS)
    # each operator's own cases: a module's one-node expansion of another operator (CastLike's
    # *_expanded cases are one Cast) is not the other operator's, and is not listed twice
    return [
        c for op_type in sorted(wanted) for c in _module_cases(_module(op_type))
        if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type == op_type
    ]


_CASES: dict[str, list] = {}


def _module_cases(module: str) -> list:
    """The cases ``onnx.backend.test.case.node.<module>`` registers, and only
    those. Importing it runs its ``expect()`` calls; when something else
    (onnx's BackendTest, in the same process) imported it first, along with
    every other operator's module, it is run again into an empty list, so
    no other module's case is taken for this one's."""
    import sys
    import warnings

    import onnx.backend.test.case.node as node_cases

    if module not in _CASES:
        name = f"onnx.backend.test.case.node.{module}"
        registry, names = node_cases._NodeTestCases, node_cases._existing_names
        saved, saved_names = list(registry), dict(names)
        del registry[:]
        names.clear()  # (a second run of a module's expect() calls would refuse its own names)
        try:
            with warnings.catch_warnings():  # Cast's cases overflow numpy casts on purpose
                warnings.simplefilter("ignore", RuntimeWarning)
                if name in sys.modules:
                    importlib.reload(sys.modules[name])
                else:
                    importlib.import_module(name)
            _CASES[module] = list(registry)
        finally:
            # a reloaded module's cases are new objects with the names of ones the registry holds: keep
            # those, so onnx's own list (load_model_tests) never has a case twice
            held = {c.name for c in saved}
            registry[:] = saved + [c for c in registry if c.name not in held]
            names.update(saved_names)
    return _CASES[module]


def _module(op_type: str) -> str:
    """onnx's module of an operator's cases: ``concat``, ``center_crop_pad``,
    ``not_`` (a Python keyword), ``rangeop``."""
    import importlib.util

    lower = op_type.lower()
    for name in (lower, lower + "_", lower + "op"):
        if importlib.util.find_spec(f"onnx.backend.test.case.node.{name}") is not None:
            return name
    return "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(op_type))


def is_tensor_case(case) -> bool:
    graph = case.model.graph
    return all(v.type.HasField("tensor_type") for v in (*graph.input, *graph.output))


def write_case(case, out: Path) -> Path:
    folder = out / case.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    if not is_tensor_case(case):
        return folder
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_set = folder / f"test_data_set_{i}"
        data_set.mkdir(exist_ok=True)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, value in enumerate(values):
                (data_set / f"{kind}_{j}.pb").write_bytes(proto_of(value, infos[j].name).SerializeToString())
    return folder


def proto_of(value, name: str):
    """A case's array (or the TensorProto it gives: Cast's float8, int4) as a TensorProto named ``name``."""
    from onnx import numpy_helper

    if not hasattr(value, "SerializeToString"):
        return numpy_helper.from_array(value, name)
    proto = type(value)()
    proto.CopyFrom(value)
    proto.name = name
    return proto


def write_all(out: Path, op_types=None, only=None) -> list[Path]:
    return [write_case(c, out) for c in node_testcases(op_types) if not only or c.name in only]


def expect_pages(op_type: str) -> list[tuple[str, str, dict]]:
    """(source, text, exact) of pages in the docs' rst format holding
    ``op_type``'s official examples: its ``expect()`` cases, each rendered as
    the ONNX pages print an example. ``exact`` holds each case's input arrays
    by name and its expected outputs (case name -> (inputs, outputs)): large
    inputs are printed with '...', and the checker runs the exact values and
    holds the outputs to the expected ones. One page per opset the cases use."""
    from ..ops.model import build_node, graph_inputs
    from ..render.node import Shown, render_node
    from ..core.tensor import Tensor, dtype_of_numpy

    by_opset: dict[int, list[str]] = {}
    exact: dict[str, tuple[dict, list]] = {}
    for case in node_testcases([op_type]):
        if not is_tensor_case(case):
            continue
        model, (inputs, outputs) = case.model, case.data_sets[0]
        proto, opset = model.graph.node[0], model.opset_import[0].version
        feeds = dict(zip(graph_inputs(model), inputs))
        node = build_node(proto, opset, lambda name: Tensor.from_numpy(feeds[name], name))
        names = dict(zip(node.op.inputs[1:], proto.input[1:]))

        def shown(name, values):
            return Shown(name, values.shape, dtype_of_numpy(values.dtype).name, values)

        block = render_node(node, [shown(proto.input[0], feeds[proto.input[0]])],
                            [shown(proto.output[0], outputs[0])], names=names)
        exact[case.name] = ({name: feeds[name] for name in proto.input if name in feeds}, list(outputs))
        body = "\n".join(f"    {line}" if line else "" for line in block.split("\n"))
        by_opset.setdefault(opset, []).append(f"**{case.name}**\n\n.. code-block:: text\n\n{body}\n")
    return [
        (f"{op_type}-{opset} (onnx expect cases)",
         f"{op_type} - version {opset}\n{'=' * (len(op_type) + 10 + len(str(opset)))}\n\n"
         f"This page documents version **{opset}** of operator **{op_type}**.\n\n"
         "Examples\n--------\n\n" + "\n".join(blocks), exact)
        for opset, blocks in sorted(by_opset.items())
    ]


def sections(op_type: str) -> dict[str, tuple[str, str]]:
    """Case name -> (the ONNX page's example it belongs to, that example's
    code), for ``op_type``'s cases. A page example is one ``export*``
    method of onnx's case module (``export_gather_0`` is "gather_0", a bare
    ``export`` the operator's name in lower case, as onnx's docs name them);
    each of its ``expect()`` calls is one case. Found by running each
    method again, seeded as onnx seeds it, into an empty registry."""
    import inspect
    import sys

    import numpy as np
    import onnx.backend.test.case.node as node_cases
    from onnx.backend.test.case.base import Base, process_snippet

    module = _module(op_type)
    _module_cases(module)  # imported (and its own cases kept) before it is run again
    classes = [c for c in vars(sys.modules[f"onnx.backend.test.case.node.{module}"]).values()
               if inspect.isclass(c) and issubclass(c, Base) and c is not Base]
    registry, names = node_cases._NodeTestCases, node_cases._existing_names
    saved, saved_names = list(registry), dict(names)
    found: dict[str, tuple[str, str]] = {}
    try:
        for cls in classes:
            for key, value in vars(cls).items():
                if not (key.startswith("export") and isinstance(value, staticmethod)):
                    continue
                del registry[:]
                names.clear()
                np.random.seed(seed=0)
                getattr(cls, key)()
                snippet = process_snippet(cls.__name__, key, getattr(cls, key))
                found.update((c.name, snippet) for c in registry)
    finally:
        registry[:] = saved
        names.clear()
        names.update(saved_names)
    return found

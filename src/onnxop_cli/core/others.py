"""Run a partitioned model (core/partition.py) region by region.

onnxop's regions go through the one graph executor (core/graph.py: plan,
run_to_memory): their inputs are uploaded when the region starts, their
outputs read back when it ends, and nothing else crosses. The others' run
on onnxruntime's CPU provider (other_onnxruntime.py) or onnx.reference
(other_reference.py) on host arrays. Between regions every value is a host
Tensor, released once no later region or output reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError, OnnxopError
from .partition import HOST, ONNXOP, Partition, Region, ops, place_name

if TYPE_CHECKING:
    from .tensor import Tensor


@dataclass
class Ran:
    """What ran where and what crossed."""

    nodes: dict[str, dict[str, int]] = field(default_factory=dict)  # runtime -> operator -> count
    regions: list[dict] = field(default_factory=list)  # {"runtime", "nodes"}
    uploaded: int = 0
    read_back: int = 0

    def add(self, region: Region) -> None:
        by_op = self.nodes.setdefault(region.runtime, {})
        for op, n in ops(region.nodes):
            by_op[op] = by_op.get(op, 0) + n
        self.regions.append({"runtime": region.runtime, "nodes": len(region.nodes)})


def typed_input(name: str, t: Tensor):
    """A graph input declaring ``t``'s type and shape, built as onnx's ``helper.make_tensor_value_info``
    builds it (a scalar's shape present and empty) from the protobuf class alone: onnx's helpers import
    ml_dtypes, about a CPU-second that a run with ``--others`` would pay for nothing (core/onnx_lazy.py)."""
    from onnx import ValueInfoProto

    info = ValueInfoProto(name=name)
    tensor = info.type.tensor_type
    tensor.elem_type = t.dtype.onnx_type
    tensor.shape.SetInParent()
    for d in t.shape:
        tensor.shape.dim.add().dim_value = d
    return info


def submodel(part: Partition, region: Region, feeds: dict[str, Tensor], folder: Path):
    """The region as a model: the outer model's opsets, functions and IR
    version; the initializers it reads (external data read in, for a runtime
    that has no folder); the other values it reads as typed graph inputs."""
    from onnx import GraphProto, ModelProto, TensorProto, ValueInfoProto

    m = part.model
    inits = []
    for name in region.inputs:
        proto = part.initializers.get(name)
        if proto is None:
            continue
        if proto.data_location == TensorProto.EXTERNAL and region.runtime != ONNXOP:
            from onnx import numpy_helper

            from ..io.tensorproto import tensor_from_proto

            t = tensor_from_proto(proto, folder, f"initializer {name!r}", name)
            proto = numpy_helper.from_array(t.to_numpy(), name)
        inits.append(proto)
    inputs = [typed_input(n, feeds[n]) for n in region.inputs if n not in part.initializers]
    outputs = [ValueInfoProto(name=n) for n in region.outputs]
    for v in outputs if region.runtime == ONNXOP else []:
        v.type.tensor_type.SetInParent()  # a tensor of no declared type: the graph executor says what it made
    nodes = [*region.copies, *region.nodes]
    if region.runtime != ONNXOP:  # (the graph executor reads a node's external data from the folder itself)
        nodes = [inlined(n, folder) for n in nodes]
    g = GraphProto(node=nodes, name="region", input=inputs, output=outputs, initializer=inits)
    sub = ModelProto(ir_version=m.ir_version, graph=g)
    sub.opset_import.extend(m.opset_import)
    sub.functions.extend(m.functions)
    return sub


def inlined(node, folder: Path):
    """``node``, or a copy of it whose tensors in external data (a Loop's or Scan's body's
    initializers, a Constant's value, at any depth) are read in from the model's folder: a
    model handed over as bytes has no folder, and onnxruntime looked the files up in the
    working directory (where another w.bin was read without a word), onnx.reference not at all."""
    from onnx import AttributeProto, NodeProto, TensorProto

    def tensors(n):  # (holder, field, index) of each TensorProto a node's attributes hold, subgraphs included
        for a in n.attribute:
            if a.type == AttributeProto.TENSOR:
                yield a, "t", None
            yield from ((a, "tensors", k) for k in range(len(a.tensors)))
            for g in ([a.g] if a.type == AttributeProto.GRAPH else []) + list(a.graphs):
                yield from ((g, "initializer", k) for k in range(len(g.initializer)))
                for inner in g.node:
                    yield from tensors(inner)

    def proto(holder, field, k):
        return getattr(holder, field) if k is None else getattr(holder, field)[k]

    if not any(proto(*at).data_location == TensorProto.EXTERNAL for at in tensors(node)):
        return node
    from onnx import numpy_helper

    from ..io.tensorproto import tensor_from_proto

    copy = NodeProto()
    copy.CopyFrom(node)
    for at in list(tensors(copy)):
        t = proto(*at)
        if t.data_location == TensorProto.EXTERNAL:
            read = tensor_from_proto(t, folder, f"node {node.name!r} ({node.op_type}): tensor {t.name!r}", t.name)
            t.CopyFrom(numpy_helper.from_array(read.to_numpy(), t.name))
    return copy


def model_inlined(model, folder: Path):
    """A copy of ``model`` whose tensors in external data (initializers, and those
    inside its nodes) are read in from ``folder``, the model's: for a runtime handed
    the model as bytes (``conformance --runtime onnxruntime``, ``backend:``, ``ort-web``)."""
    from onnx import ModelProto, TensorProto, numpy_helper

    from ..io.tensorproto import tensor_from_proto

    copy = ModelProto()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            read = tensor_from_proto(t, folder, f"initializer {t.name!r}", t.name)
            t.CopyFrom(numpy_helper.from_array(read.to_numpy(), t.name))
    for k, n in enumerate(copy.graph.node):
        done = inlined(n, folder)
        if done is not n:
            copy.graph.node[k].CopyFrom(done)
    return copy


def run(part: Partition, feeds: dict[str, Tensor], folder: Path, *, backend: str | None = None,
        inspect: Callable[[Region, Callable[[str], Tensor]], None] | None = None,
        ran: Ran | None = None) -> tuple[list[Tensor], Ran]:
    """The graph's outputs (host Tensors, in order) and what ran where (added
    to ``ran``, a branch's to its model's). ``inspect(region, value)`` is
    called after each region, while every value it read and made can still
    be looked up by name (--verify, --dump)."""
    from ..io.tensorproto import tensor_from_proto

    host: dict[str, Tensor] = dict(feeds)
    last: dict[str, int] = {n: len(part.regions) for n in part.outputs}
    for k, region in enumerate(part.regions):
        for n in [*region.inputs, *(x for c in region.copies for x in c.output)]:  # (--verify reads a copy's)
            last[n] = max(last.get(n, -1), k)

    def value(name: str) -> Tensor:
        if name not in host:
            proto = part.initializers.get(name)
            if proto is None:
                raise OnnxopError(f"value {name!r} was released before its last reader")
            return tensor_from_proto(proto, folder, f"initializer {name!r}", name)
        return host[name]

    ran = Ran() if ran is None else ran
    for k, region in enumerate(part.regions):
        if not region.outputs and region.runtime != HOST:
            continue  # nothing reads what it makes (onnxruntime and the graph executor take no model without outputs)
        if region.runtime == HOST:
            ran.add(region)  # before its branch's regions
            made = _branch(part, region, value, folder, backend, inspect, ran)
        else:
            given = {n: value(n) for n in region.inputs if n not in part.initializers}
            sub = submodel(part, region, given, folder)
            if region.runtime == ONNXOP:
                made = _onnxop(sub, given, folder, backend, ran, region.places)
            else:
                made = _other(region.runtime).run(sub, given, region.outputs, region.label, region.needed)
                region.outputs = [n for n in region.outputs if n in made]  # (a sequence only --verify asked for)
            ran.add(region)
        host.update(made)
        if inspect is not None:
            inspect(region, value)
        for n in [n for n in host if last.get(n, -1) <= k and n not in part.outputs]:
            del host[n]
    return [_renamed(value(n), n) for n in part.outputs], ran


def _branch(part: Partition, region: Region, value: Callable[[str], Tensor], folder: Path, backend: str | None,
            inspect, ran: Ran) -> dict[str, Tensor]:
    """Run an If region: the Constants it holds, its condition read, then the
    branch it picks, split and run as a model of its own (its data movement
    on the GPU, the rest on the others' runtime). The If's outputs, by name."""
    from onnx import GraphProto, ModelProto, ValueInfoProto

    from .partition import split

    *constants, node = [*region.copies, *region.nodes]
    made = _constants(part, constants, folder) if constants else {}
    look = (lambda n: made[n] if n in made else value(n))
    where = f"If node {place_name(node, region.places[-1] if region.places else None)}"
    cond = look(node.input[0]).to_numpy() if node.input and node.input[0] else None
    if cond is None or cond.size != 1 or cond.dtype != bool:
        got = "no condition" if cond is None else f"{cond.size} element(s) of {cond.dtype}"
        raise InputError(f"{where}: its condition must be one bool, got {got}")
    name = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
    branch = next((a.g for a in node.attribute if a.name == name), None)
    outs = [x for x in node.output]
    if branch is None or len(branch.output) != len(outs):
        raise InputError(f"{where}: its {name} is missing or does not make its {len(outs)} output(s)")
    from ..ops.nodekinds import free_names

    outer = sorted(free_names(branch))
    feeds = {n: look(n) for n in outer if n not in part.initializers}
    g = GraphProto(node=list(branch.node), name=name, input=[typed_input(n, feeds[n]) for n in outer if n in feeds],
                   output=[ValueInfoProto(name=v.name) for v in branch.output],
                   initializer=[*branch.initializer, *(part.initializers[n] for n in outer if n in part.initializers)])
    model = ModelProto(ir_version=part.model.ir_version, graph=g)
    model.opset_import.extend(part.model.opset_import)
    model.functions.extend(part.model.functions)
    # (protobuf's depth limit bounds the nesting)
    try:  # a branch's node is named by its place in the branch: the If and the branch are named in front
        inner = split(model, part.others, keep_all=part.keep_all, keep_onnxop=part.keep_onnxop)
        results, _ = run(inner, feeds, folder, backend=backend, inspect=inspect, ran=ran)
    except OnnxopError as e:
        raise e.reworded(f"{where}, {name}: {e.message}") from None
    from .partition import type_text

    for k, (v, t) in enumerate(zip(branch.output, results)):  # the branches agree (check_ifs): so must what ran
        declared = type_text(v.type)
        if declared is not None and v.type.HasField("tensor_type") and declared != t.dtype.name:
            raise InputError(f"{where}: its {name} declares its output {k} ({v.name!r}) {declared} and makes "
                             f"{t.dtype.name}; ONNX requires a branch to make the types it declares")
    made.update({out: _renamed(t, out) for out, t in zip(outs, results) if out})
    return made


def _constants(part: Partition, constants: list, folder: Path) -> dict[str, Tensor]:
    """The values of an If region's Constants (its condition may be one), on the host."""
    from onnx.reference import ReferenceEvaluator

    from .other_common import as_tensors

    names = [x for n in constants for x in n.output if x]
    sub = submodel(part, Region(HOST, constants, outputs=names), {}, folder)
    return as_tensors(names, ReferenceEvaluator(sub).run(names, {}), "an If's Constant")


def _renamed(t: Tensor, name: str) -> Tensor:
    from dataclasses import replace

    return t if t.name == name else replace(t, name=name)


def _onnxop(sub, feeds: dict[str, Tensor], folder: Path, backend: str | None, ran: Ran,
            places: list[int]) -> dict[str, Tensor]:
    from ..ops.model import load_graph
    from . import graph

    g = load_graph(sub, folder, places)  # (an error names the node by its index in the model, not in the region)
    p = graph.plan(g, feeds, backend=backend)
    results, traffic = graph.run_to_memory(p, backend=backend)
    ran.uploaded += traffic.uploaded
    ran.read_back += traffic.read_back
    return {t.name: t for t in results}


def _other(runtime: str) -> Any:
    if runtime == "onnxruntime":
        from . import other_onnxruntime

        return other_onnxruntime
    from . import other_reference

    return other_reference

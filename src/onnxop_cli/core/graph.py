"""Many nodes: an ONNX graph checked whole, planned as index maps, run on one device.

    model --load--> Graph (operators, opset, attributes, names, order: all checked)
          --plan--> every value a View of a *base* (pure Python, no GPU)
          --run---> a gather per base that must exist; outputs streamed to sinks

Every operator onnxop runs today moves elements without changing them, so a
value is a strided view of a base: a graph input, an initializer, a
``Constant``, or a *step* -- a buffer on the device that a gather fills when
a view cannot be composed further (a transposed pair of axes that a Reshape
merges). A chain of view operators composes into one View: one gather,
streamed like a single operator, with no intermediate at all. Steps stay on
the device: the next gather reads them with a buffer-to-buffer copy, and each
is released after its last reader. Constant inputs (Reshape's shape, Slice's
starts) are host values, taken from their host base with numpy: they are
parameters, a few integers, not the data. ``Traffic`` counts what crossed.

Everything that can be refused is refused in ``load`` and ``plan``, before
the GPU is touched or an output opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError, OnnxopError, OpError, UsageError
from ..ops.model import ONNX_DOMAINS, Unsupported
from .view import View, c_strides, f_strides

if TYPE_CHECKING:
    import numpy as np

    from ..gpu.resident import DeviceBuffer, Traffic
    from ..io import Sink
    from ..ops import Node, OpVersion
    from .tensor import DType, Tensor

CONSTANT = "Constant"
CONSTANT_FIELDS = ("value", "value_int", "value_ints", "value_float", "value_floats", "value_string",
                   "value_strings", "sparse_value")


def supported() -> list[str]:
    """The operators a graph may hold: the registry's, and Constant."""
    from ..ops import OPERATORS

    return [*OPERATORS, CONSTANT]


# ------------------------------------------------------------------ checking


@dataclass
class GraphNode:
    proto: Any
    op: type[OpVersion] | None  # None: Constant
    label: str  # "node 2 'r' (Reshape-21)"


@dataclass
class Graph:
    model: Any
    opset: int
    nodes: list[GraphNode]
    inputs: list[str]  # what a caller feeds, in order (graph inputs without an initializer)
    initializers: dict[str, Any]
    outputs: list[str]
    folder: Path
    declared: dict[str, Any] = field(default_factory=dict)  # graph input name -> its ValueInfo


def opset_of(model) -> int:
    from ..ops import LATEST_OPSET

    opsets = [o.version for o in model.opset_import if o.domain in ONNX_DOMAINS]
    if not opsets:
        raise InputError("the model imports no ai.onnx opset")
    if len(set(opsets)) > 1:
        raise InputError(f"the model imports ai.onnx twice, at opsets {sorted(set(opsets))}")
    opset = int(opsets[0])
    if not 1 <= opset <= LATEST_OPSET:
        raise Unsupported(f"opset {opset} is outside what onnxop knows (1 to {LATEST_OPSET})")
    return opset


def node_label(i: int, proto, op: type[OpVersion] | None = None) -> str:
    name = f" {repr(proto.name)}" if proto.name else ""
    kind = f"{op.op_type}-{op.since_version}" if op is not None else proto.op_type
    plain = op is not None or (proto.op_type == CONSTANT and proto.domain in ONNX_DOMAINS)
    return f"node {i}{name} ({kind if plain else repr(kind)})"


def load(model, folder: Path) -> Graph:
    """The model's graph, checked whole; the first problem found is raised."""
    from onnx import AttributeProto

    from ..ops import op_version
    from ..ops.model import read_attributes
    g = model.graph
    opset = opset_of(model)
    functions = {(f.domain, f.name) for f in model.functions}
    bad: list[str] = []
    nodes: list[GraphNode] = []
    for i, proto in enumerate(g.node):
        label = node_label(i, proto)
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in proto.attribute):
            raise Unsupported(f"{label} holds a subgraph; onnxop runs no control flow (If, Loop, Scan)")
        if (proto.domain, proto.op_type) in functions:
            raise Unsupported(f"{label} calls the model's function {repr(proto.domain + '.' + proto.op_type)}; "
                              "onnxop runs no functions")
        if proto.domain not in ONNX_DOMAINS:
            raise Unsupported(f"{label} is in domain {repr(proto.domain)}; onnxop runs the ai.onnx domain only")
        if proto.op_type not in supported():
            bad.append(f"{label} at opset {opset}")
            continue
        if proto.op_type == CONSTANT:
            nodes.append(GraphNode(proto, None, label))
            continue
        try:
            op = op_version(proto.op_type, opset)
        except UsageError as e:
            raise Unsupported(f"{label}: {e.message}") from None
        nodes.append(GraphNode(proto, op, node_label(i, proto, op)))
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise Unsupported(f"unsupported {', '.join(bad[:3])}{more}; onnxop runs {', '.join(supported())}")

    for kind, values in (("input", g.input), ("output", g.output)):
        for v in values:
            what = v.type.WhichOneof("value")
            if what != "tensor_type":
                what = (what or "typeless").replace("_type", "")
                article = "an" if what[0] in "aeiou" else "a"
                raise Unsupported(f"graph {kind} {v.name!r} is {article} {what} value; onnxop runs tensors")
    initializers: dict[str, Any] = {}
    for t in g.initializer:
        if t.name in initializers:
            raise InputError(f"two initializers are named {repr(t.name)}")
        initializers[t.name] = t
    if g.sparse_initializer:
        raise Unsupported("the model has sparse initializers; onnxop runs dense tensors")
    known: dict[str, str] = {}  # name -> what defines it
    for v in g.input:
        if not v.name:
            raise InputError("a graph input has no name")
        if v.name in known:
            raise InputError(f"two graph inputs are named {repr(v.name)}")
        known[v.name] = "a graph input"
    for name in initializers:
        known.setdefault(name, "an initializer")
    producer_of: dict[str, int] = {}
    for i, gn in enumerate(nodes):
        for name in gn.proto.output:
            if name and name in known:
                raise InputError(f"{gn.label} produces {repr(name)}, which is already {known[name]}")
            if name:
                producer_of.setdefault(name, i)
                known[name] = f"produced by {gn.label}"
    for i, gn in enumerate(nodes):
        p = gn.proto
        for name in p.input:
            if not name:
                continue
            if name not in known or (name in producer_of and producer_of[name] >= i):
                if name in producer_of:
                    raise InputError(
                        f"{gn.label} reads {repr(name)} before {nodes[producer_of[name]].label} produces it: "
                        "the graph has a cycle or is not topologically sorted"
                    )
                raise InputError(f"{gn.label} reads {repr(name)}, which no input, initializer or node provides")
        _check_node(gn, read_attributes)
    outputs: list[str] = []
    for v in g.output:
        if v.name in outputs:
            raise InputError(f"graph output {repr(v.name)} is listed twice")
        if v.name not in known:
            raise InputError(f"graph output {repr(v.name)} is never produced")
        outputs.append(v.name)
    if not outputs:
        raise InputError("the graph has no outputs")
    feeds = [v.name for v in g.input if v.name not in initializers]
    return Graph(model, opset, nodes, feeds, initializers, outputs, folder, {v.name: v for v in g.input})


def _check_node(gn: GraphNode, read_attributes) -> None:
    p, op = gn.proto, gn.op
    outs = [o for o in p.output if o]
    if len(p.output) != 1 or not outs:
        raise InputError(f"{gn.label} has {len(p.output)} outputs ({', '.join(map(repr, p.output))}); it makes one")
    if op is None:  # Constant: exactly one value attribute
        seen = [a.name for a in p.attribute]
        if len(seen) != len(set(seen)):
            raise OpError(f"{gn.label}: an attribute is given twice ({', '.join(seen)})")
        unknown = [n for n in seen if n not in CONSTANT_FIELDS]
        if unknown:
            raise OpError(f"{gn.label} has no attribute {unknown[0]!r}")
        if len(seen) != 1:
            raise OpError(f"{gn.label} needs exactly one of {', '.join(CONSTANT_FIELDS)}; it has {len(seen)}")
        if p.input:
            raise InputError(f"{gn.label} takes no inputs, the node has {len(p.input)}")
        return
    read_attributes(p, op, gn.label)
    if len(p.input) > len(op.inputs):
        raise OpError(f"{gn.label} takes at most {len(op.inputs)} inputs, the node has {len(p.input)}")
    for i, schema_name in enumerate(op.inputs):
        given = i < len(p.input) and p.input[i]
        if not given and (i == 0 or schema_name not in op.optional):
            raise OpError(f"{gn.label} is missing its required input {schema_name!r}")


# ------------------------------------------------------------------ planning


@dataclass(eq=False)
class Step:
    """A base made on the device: ``source`` gathered into a row-major buffer."""

    source: Value
    label: str
    buffer: DeviceBuffer | None = None  # at run time
    strings: Any = None  # string tensors: gathered on the host at run time
    readers: int = 0  # later steps and outputs that read it


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: DType
    base: Any  # Tensor (host: input, initializer, Constant) or Step (device)
    view: View  # over the base's elements; its shape is ``shape``
    swap: int = 0  # byte-swap unit of a big-endian host base
    text_dtype: str = ""


@dataclass
class Plan:
    graph: Graph
    outputs: list[Value]
    steps: list[Step]
    nodes: list[Node]  # the onnxop nodes, in graph order (Constant left out)
    feeds: dict[str, Tensor] = field(default_factory=dict)

    @property
    def on_device(self) -> bool:
        return any(not v.dtype.is_string for v in self.outputs)


def of_tensor(name: str, t: Tensor) -> Value:
    strides = f_strides(t.shape) if t.order == "F" else c_strides(t.shape)
    return Value(name, tuple(t.shape), t.dtype, t, View(tuple(t.shape), strides), t.byteswap, t.text_dtype)


def plan(graph: Graph, feeds: dict[str, Tensor]) -> Plan:
    """Every value as a view of a base, every node's rules checked: raises
    before anything runs. ``feeds`` holds a tensor per ``graph.inputs``."""
    from ..io.tensorproto import tensor_from_proto
    from ..ops.model import build_node
    values: dict[str, Value] = {}
    for name in graph.inputs:
        if name not in feeds:
            raise UsageError(f"graph input {repr(name)} has no data")
        _check_declared(graph.declared.get(name), feeds[name])
        values[name] = of_tensor(name, feeds[name])
    for name, proto in graph.initializers.items():
        values[name] = of_tensor(name, tensor_from_proto(proto, graph.folder, f"initializer {repr(name)}", name))
    steps: list[Step] = []
    nodes: list[Node] = []
    for gn in graph.nodes:
        out = gn.proto.output[0]
        if gn.op is None:
            values[out] = of_tensor(out, _constant(gn, graph.folder))
            continue
        data = values[gn.proto.input[0]]
        node = build_node(gn.proto, graph.opset, lambda n: host_tensor(values[n]), gn.label)
        nodes.append(node)
        shape = _check(gn, node, data)
        w = node.view(data.shape, data.view.strides, data.view.offset)
        composed = w.reshaped(shape)
        if composed is not None:
            values[out] = Value(out, shape, data.dtype, data.base, composed, data.swap, data.text_dtype)
        else:  # no strides can say it: the node's result is made on the device
            step = Step(Value(out, tuple(w.shape), data.dtype, data.base, w, data.swap, data.text_dtype), gn.label)
            steps.append(step)
            values[out] = Value(out, shape, data.dtype, step, View.row_major(shape), 0, data.text_dtype)
    outputs = [values[name] for name in graph.outputs]
    for v in [*(s.source for s in steps), *outputs]:
        if isinstance(v.base, Step):
            v.base.readers += 1
    return Plan(graph, outputs, steps, nodes, dict(feeds))


def _check(gn: GraphNode, node: Node, data: Value) -> tuple[int, ...]:
    from ..ops import check_type
    from .tensor import check_shape

    try:
        shape = node.output_shape(data.shape)
        check_shape(shape, data.dtype.numpy_itemsize, node.op_type, noun="output shape")
        check_type(node, data.dtype)
    except (OpError, InputError) as e:
        raise type(e)(f"{gn.label}: {e.message}") from None
    return tuple(shape)


def _check_declared(info, t: Tensor) -> None:
    """A fed tensor must have the type and the fixed dims its graph input declares."""
    from .tensor import dtype_by_onnx

    if info is None:
        return
    tt = info.type.tensor_type
    if tt.elem_type:
        try:
            want = dtype_by_onnx(tt.elem_type)
        except OnnxopError:
            want = None
        if want is not None and want is not t.dtype:
            raise InputError(f"graph input {repr(info.name)} is declared {want}, the data is {t.dtype}")
    if tt.HasField("shape"):
        dims = tt.shape.dim
        if len(dims) != t.rank:
            raise InputError(f"graph input {repr(info.name)} is declared rank {len(dims)}, "
                             f"the data has shape {t.shape}")
        for k, (d, n) in enumerate(zip(dims, t.shape)):
            if d.HasField("dim_value") and d.dim_value != n:
                raise InputError(f"graph input {repr(info.name)} is declared with dim {k} = {d.dim_value}, "
                                 f"the data has shape {t.shape}")


def _constant(gn: GraphNode, folder: Path) -> Tensor:
    import numpy as np
    from onnx import AttributeProto, helper

    from ..io.tensorproto import tensor_from_proto
    from .tensor import Tensor

    a = gn.proto.attribute[0]
    kinds = {"value": AttributeProto.TENSOR, "value_int": AttributeProto.INT, "value_ints": AttributeProto.INTS,
             "value_float": AttributeProto.FLOAT, "value_floats": AttributeProto.FLOATS,
             "value_string": AttributeProto.STRING, "value_strings": AttributeProto.STRINGS}
    if a.name not in kinds:
        raise Unsupported(f"{gn.label}: attribute {a.name!r} (sparse tensors) is not supported")
    if a.type != kinds[a.name] or a.ref_attr_name:
        raise OpError(f"{gn.label}: attribute {a.name!r} must be {AttributeProto.AttributeType.Name(kinds[a.name])}"
                      + (f", got {AttributeProto.AttributeType.Name(a.type)}" if a.type in AttributeProto.AttributeType.values() else ""))
    out = gn.proto.output[0]
    if a.name == "value":
        return tensor_from_proto(a.t, folder, f"{gn.label} value", out)
    value = helper.get_attribute_value(a)
    if a.name in ("value_string", "value_strings"):
        return Tensor.from_numpy(np.array(value, dtype=object), out)
    dtype = np.int64 if "int" in a.name else np.float32
    return Tensor.from_numpy(np.array(value, dtype=dtype), out)


# ------------------------------------------------------------------ host values


def host_array(v: Value) -> np.ndarray:
    """The value on the host, with numpy: for constant inputs (a shape, a
    slice's starts), not for data."""
    import numpy as np

    base = v.base
    if isinstance(base, Step):
        raw = host_array(base.source).reshape(-1)
    elif base.dtype.is_string:
        raw = np.asarray(base.strings, dtype=object).reshape(-1)
    else:
        a = base.to_numpy()
        raw = (a.T if base.order == "F" else a).reshape(-1)
    return raw[element_index(v.view)].reshape(v.shape) if v.view.size else raw[:0].reshape(v.shape)


def host_tensor(v: Value) -> Tensor:
    from .tensor import Tensor

    return Tensor.from_numpy(host_array(v), v.name, dtype=v.dtype)


def element_index(view: View):
    import numpy as np

    index = np.full(view.shape, view.offset, dtype=np.int64)
    for k, (d, s) in enumerate(zip(view.shape, view.strides)):
        index += (np.arange(d, dtype=np.int64) * s).reshape((d,) + (1,) * (len(view.shape) - k - 1))
    return index.reshape(-1)


# ------------------------------------------------------------------ running


def execute(p: Plan, write: Callable[[Value, Callable[[Sink], None]], None], *, backend: str | None = None) -> Traffic:
    """Make the steps on the device, then hand each output to ``write(value,
    fill)``: ``fill(sink)`` streams the output's bytes into ``sink`` (string
    outputs: ``value.base`` is a host tensor with its strings). Device
    buffers are released after their last reader, and on any failure."""
    from ..gpu.resident import Traffic

    traffic = Traffic()
    gpu = None
    if p.on_device or any(not s.source.dtype.is_string for s in p.steps):
        from ..gpu import get_gpu

        gpu = get_gpu(backend)
    readers = {id(s): s.readers for s in p.steps}
    try:
        for step in p.steps:
            if not step.readers:
                continue  # nothing reads it: not made
            _make(gpu, step, traffic)
            _done_reading(step.source, readers)
        for v in p.outputs:
            write(_host_strings(v) if v.dtype.is_string else v, lambda sink, v=v: _stream(gpu, v, sink, traffic))
            _done_reading(v, readers)
    finally:
        for step in p.steps:
            if step.buffer is not None:
                step.buffer.release()
                step.buffer = None
    return traffic


def _done_reading(v: Value, readers: dict[int, int]) -> None:
    base = v.base
    if isinstance(base, Step):
        readers[id(base)] -= 1
        if not readers[id(base)] and base.buffer is not None:
            base.buffer.release()
            base.buffer = None


def _make(gpu, step: Step, traffic: Traffic) -> None:
    from ..gpu import resident

    v = step.source
    if v.dtype.is_string:
        step.strings = host_array(v)
        return
    source = v.base.buffer if isinstance(v.base, Step) else v.base.data
    try:
        step.buffer = resident.gather(gpu, source, v.view.simplified(), v.dtype.bits, swap=v.swap, traffic=traffic)
    except ValueError as e:  # a view outside its source: a bug, said plainly
        raise OnnxopError(f"{step.label}: {e}") from None


def _stream(gpu, v: Value, sink: Sink, traffic: Traffic) -> None:
    from .. import gpu as gpu_pkg
    from ..gpu import resident
    from .apply import _zero_pad_bits
    from .tensor import Tensor

    sink = _zero_pad_bits(sink, Tensor(v.name, v.shape, v.dtype))
    view = v.view.simplified()
    if v.view.size == 0:
        return
    if isinstance(v.base, Step):
        resident.gather(gpu, v.base.buffer, view, v.dtype.bits, sink=sink, traffic=traffic)
        return
    t = v.base
    if view.is_identity() and view.size == t.size and not v.swap:
        gpu_pkg.copy_through_kernel(gpu, t.data, sink)
        traffic.uploaded += t.nbytes
        traffic.read_back += t.nbytes
        return
    resident.gather(gpu, t.data, view, v.dtype.bits, swap=v.swap, sink=sink, traffic=traffic)


def _host_strings(v: Value) -> Value:
    """A string output gathered on the host (strings have no GPU form): a Value
    whose base is the finished tensor."""
    from .tensor import Tensor

    t = Tensor(v.name, v.shape, v.dtype, strings=host_array(v), text_dtype=v.text_dtype)
    return Value(v.name, v.shape, v.dtype, t, View.row_major(v.shape), 0, v.text_dtype)


def run_to_memory(p: Plan, *, backend: str | None = None) -> tuple[list[Tensor], Traffic]:
    """The outputs in memory (for the backend, printing and --check)."""
    import numpy as np

    from .sources import MemoryBytes
    from .tensor import Tensor

    results: list[Tensor] = []

    def write(v: Value, fill) -> None:
        out = Tensor(v.name, v.shape, v.dtype, named=True, text_dtype=v.text_dtype)
        if v.dtype.is_string:
            out.strings = v.base.strings
        else:
            buf = np.empty(out.nbytes, dtype=np.uint8)
            filled = 0

            def sink(chunk) -> None:
                nonlocal filled
                buf[filled : filled + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                filled += len(chunk)

            fill(sink)
            out.data = MemoryBytes(buf)
        results.append(out)

    traffic = execute(p, write, backend=backend)
    return results, traffic

"""Many nodes: an ONNX graph (checked whole by ops.model.load_graph) planned as
index maps and run on one device.

    model --load_graph--> Graph (operators, opset, attributes, names, order: all checked)
          --plan--> every value an Access of a *base*; every node planned, tensor-op nodes run (graph_steps.py)
          --run---> a gather per base that must exist; outputs streamed to sinks

A view operator moves elements without changing them, so its value is a
strided view of a base: a graph input, an initializer, a ``Constant``, or a
*step* -- a buffer on the device that a gather fills when a view cannot be
composed further (a transposed pair of axes that a Reshape merges), or that
a tensor-op node's kernel (Concat, Gather, Split, ...) fills. A chain of view
operators composes into one Access: one gather, streamed like a single
operator, with no intermediate at all. Steps stay on the device: the next
kernel reads them with a buffer-to-buffer copy, and each is released after
its last reader. Constant inputs (Reshape's shape, Slice's starts) are host
values: taken from a host base with numpy (a few integers, not the data), or
read back from a step and counted. ``Traffic`` counts what crossed.

Everything that can be refused is refused in ``load_graph`` (before the GPU
is touched) and ``plan`` (before an output is opened; a graph of view
operators only is planned without the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError, OnnxopError, UsageError
from ..ops.model import Graph, constant_tensor
from .graph_fill import Fill, _whole  # how each output is streamed or summarised
from .graph_steps import LAZY_BYTES
from . import value_bytes
from .graph_values import Step, Value, host_array, of_tensor
from .region import Access

if TYPE_CHECKING:

    from ..gpu.resident import Traffic
    from ..io import Sink
    from ..ops import Node
    from .tensor import Tensor

# ------------------------------------------------------------------ planning


@dataclass
class Plan:
    graph: Graph
    outputs: list[Value]
    steps: list[Step]
    nodes: list[Node]  # the onnxop nodes, in graph order (Constant left out)
    feeds: dict[str, Tensor] = field(default_factory=dict)
    runtime: Any = None  # graph_steps.Runtime: the device, what crossed, the buffers made while planning

    @property
    def on_device(self) -> bool:
        return any(not v.dtype.is_string for v in self.outputs)


def plan(graph: Graph, feeds: dict[str, Tensor], *, backend: str | None = None, shown: bool = False) -> Plan:
    """Every value as a view of a base, every node's rules checked: raises
    before any output exists. ``feeds`` holds a tensor per ``graph.inputs``.
    A graph of view operators is planned without the GPU; a tensor-op node
    (Concat, Gather, ...) runs here, on ``backend``'s device (graph_steps.py),
    so the nodes after it see its shapes and the values they need on the host.
    ``shown`` (print mode, for ``run_to_summaries`` only): no large value is
    made whole, each is made where a kernel reads it (core/value_bytes.py)."""
    from ..gpu.device import engine_lock
    from ..gpu.resident import Traffic
    from . import graph_steps

    rt = graph_steps.Runtime(backend, Traffic(), shown=shown)
    # The whole plan holds the engine's lock (gpu/device.py Gpu.lock): its
    # tensor-op nodes make, fill and release device buffers as it goes.
    with engine_lock(backend):
        try:
            return _plan(graph, feeds, rt)
        except BaseException:
            rt.release_all()
            raise


def _plan(graph: Graph, feeds: dict[str, Tensor], rt) -> Plan:
    from ..io.tensorproto import tensor_from_proto
    from . import graph_steps
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
    last_read = graph_steps.last_reads(graph)
    for i, gn in enumerate(graph.nodes):
        out = gn.proto.output[0]
        if gn.op is None:
            values[out] = of_tensor(out, constant_tensor(gn, graph.folder))
            continue
        nodes.append(graph_steps.run_node(gn, graph, values, rt, steps))  # view and tensor operators alike
        graph_steps.release_dead(i, last_read, values, rt)  # a buffer whose values were read on the host
    outputs = [values[name] for name in graph.outputs]
    needed: list[Step] = []  # the steps an output reads, through any chain of steps (graph_steps.reads)
    for v in outputs:
        needed += [s for s in graph_steps.reads(v.base) if s not in needed]
    for v in [*(s.source for s in steps if s in needed and s.source is not None), *outputs]:
        if isinstance(v.base, Step):
            v.base.readers += 1
    for step in needed:  # print mode: a tensor-op output not made reads these when it is (kept to the end)
        for dep in step.lazy.deps if step.lazy is not None else ():
            dep.readers += 1
    for step in rt.made:  # made for a tensor-op node, read by no output: released now
        if step not in needed and step.buffer is not None:
            step.buffer.release()
            step.buffer = None
    return Plan(graph, outputs, steps, nodes, dict(feeds), rt)


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
            if d.HasField("dim_value") and d.dim_value >= 0 and d.dim_value != n:  # -1: any (paddle2onnx)
                raise InputError(f"graph input {repr(info.name)} is declared with dim {k} = {d.dim_value}, "
                                 f"the data has shape {t.shape}")


def check_output(info, dtype, shape: tuple[int, ...]) -> None:
    """What the graph made for an output must have the type, the rank and the
    fixed dims the output declares: onnxruntime refuses such a model when it
    loads it (a type) or warns and goes on (a shape); onnx.reference returns
    what it made. Declared dims that are symbols, -1 or absent take any size.
    ``run`` checks its outputs so (cli/run.py, cli/run_mixed.py); conformance and
    the backend compare them with the expected outputs instead, which says more."""
    from .tensor import dtype_by_onnx

    if info is None or not info.type.HasField("tensor_type"):
        return
    tt = info.type.tensor_type
    made = f"the graph made {tuple(shape)} {dtype}"
    if tt.elem_type:
        try:
            want = dtype_by_onnx(tt.elem_type)
        except OnnxopError:
            want = None
        if want is not None and want is not dtype:
            raise InputError(f"graph output {repr(info.name)} is declared {want}, {made}")
    if tt.HasField("shape"):
        dims = tt.shape.dim
        if len(dims) != len(shape):
            raise InputError(f"graph output {repr(info.name)} is declared rank {len(dims)}, {made}")
        for k, (d, n) in enumerate(zip(dims, shape)):
            if d.HasField("dim_value") and d.dim_value >= 0 and d.dim_value != n:
                raise InputError(f"graph output {repr(info.name)} is declared with dim {k} = {d.dim_value}, {made}")


# ------------------------------------------------------------------ running


def execute(p: Plan, write: Callable[[Value, Callable[[Sink], None]], None], *, backend: str | None = None) -> Traffic:
    """Make the steps on the device, then hand each output to ``write(value,
    fill)``: ``fill(sink)`` streams the output's bytes into ``sink`` (string
    outputs: ``value.base`` is a host tensor with its strings). Device
    buffers are released after their last reader, and on any failure."""
    from ..gpu.device import engine_lock

    with engine_lock(backend if backend is not None else p.runtime.backend):  # as plan()
        return _execute(p, write, backend)


def _execute(p: Plan, write: Callable[[Value, Callable[[Sink], None]], None], backend: str | None) -> Traffic:
    rt = p.runtime
    traffic = rt.traffic
    gpu = rt.gpu
    if gpu is None and (p.on_device or any(s.source is not None and not s.source.dtype.is_string for s in p.steps)):
        from ..gpu import get_gpu

        gpu = get_gpu(backend if backend is not None else rt.backend)
    readers = {id(s): s.readers for s in p.steps}
    direct: dict[int, int] = {}  # outputs that are a step's elements as they lie
    for v in p.outputs:
        if isinstance(v.base, Step) and _whole(v, v.base):
            direct[id(v.base)] = direct.get(id(v.base), 0) + 1
    try:
        for step in p.steps:
            if not step.readers or step.source is None:
                continue  # nothing reads it, or a tensor-op node's output (made when planned)
            if direct.get(id(step)) == step.readers and not step.source.dtype.is_string:
                continue  # only outputs read it whole: gathered straight into their sinks (Fill)
            if rt.shown and not step.source.dtype.is_string and step.size * step.source.dtype.bits // 8 >= LAZY_BYTES:
                continue  # print mode: its elements are made where they are read (core/value_bytes.py)
            if step.buffer is None and step.strings is None:  # not made yet for a tensor-op node's input
                value_bytes.make_step(gpu, step, traffic, rt.shown)
            _done_reading(step.source, readers)
        for v in p.outputs:
            write(_host_strings(v) if v.dtype.is_string else v, Fill(gpu, v, traffic, rt.shown))
            _done_reading(v, readers)
    finally:
        for step in [*p.steps, *rt.made]:
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


def _host_strings(v: Value) -> Value:
    """A string output gathered on the host (strings have no GPU form): a Value
    whose base is the finished tensor."""
    from .tensor import Tensor

    t = Tensor(v.name, v.shape, v.dtype, strings=host_array(v), text_dtype=v.text_dtype)
    return Value(v.name, v.shape, v.dtype, t, Access.row_major(v.shape), 0, v.text_dtype)


def run_to_memory(p: Plan, *, backend: str | None = None, spill: bool = False) -> tuple[list[Tensor], Traffic]:
    """The outputs in memory (for the backend and --check); with ``spill``
    (--full), a large one in a mapped scratch file (core/apply_tensors.py ``collected``)."""
    results: list[Tensor] = []

    def write(v: Value, fill) -> None:
        results.append(_in_memory(v, fill, spill))

    traffic = execute(p, write, backend=backend)
    return results, traffic


def run_to_summaries(p: Plan, *, threshold: int, edge: int, backend: str | None = None):
    """For printing: each output in memory when it is under ``threshold``
    bytes, else only the elements its summary shows (``Fill.shown``), so a
    large output is never made whole. Returns ([(Value, array, summarised)], Traffic)."""
    shown: list[tuple[Value, Any, bool]] = []

    def write(v: Value, fill) -> None:
        from .tensor import Tensor

        if v.dtype.is_string or Tensor(v.name, v.shape, v.dtype).nbytes < threshold or v.view.size == 0:
            shown.append((v, _in_memory(v, fill).to_numpy(), False))
        else:
            shown.append((v, fill.shown(edge), True))

    traffic = execute(p, write, backend=backend)
    return shown, traffic


def _in_memory(v: Value, fill, spill: bool = False) -> Tensor:
    from .apply_tensors import collected
    from .tensor import Tensor

    out = Tensor(v.name, v.shape, v.dtype, named=True, text_dtype=v.text_dtype)
    if v.dtype.is_string:
        out.strings = v.base.strings
        return out
    out.data = collected(fill, out.nbytes, spill, v.name)
    return out

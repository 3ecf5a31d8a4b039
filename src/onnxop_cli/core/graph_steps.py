"""A graph's nodes: a view operator's one region composed, a tensor operator's (Concat, ...) steps.

    inputs (Values) --as_tensor--> Tensors whose bytes are a host source or a
        DeviceBuffer --core.apply_tensors.check--> OutputPlans --_filler--> DeviceSink
        --> a Step per output, already made, on the device

A tensor-op node's outputs cannot be index maps of one base, so each is made
on the device when the graph is planned (graph.plan), into a DeviceBuffer
that the next kernel reads with a buffer-to-buffer copy (gpu/pieces.py,
gpu/indexed.py, gpu/scatter.py take a DeviceBuffer source and a DeviceSink).
An input that is a view (Transpose before Concat) is first gathered into a
row-major buffer, the consecutive views before it composed into that one
gather. Values a node needs on the host (Shape feeding Reshape, Split's
sizes, Compress's condition) are read back by DeviceBuffer.readinto and
counted in ``Traffic.host_values`` by name. Metadata results (Shape, Size)
and string tensors are host tensors. Buffers are released once no later
node or output reads them (``release_dead``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import InputError, OnnxopError, OpError
from .graph_values import Counted, as_it_lies

if TYPE_CHECKING:
    from ..gpu.resident import DeviceBuffer, Traffic
    from ..ops import Node
    from ..ops.model import Graph, GraphNode
    from .graph_values import Step, Value
    from .tensor import Tensor


@dataclass
class Runtime:
    """The device side of a plan that runs tensor-op nodes: the device (opened
    at the first kernel), what crossed, the buffers made so far."""

    backend: str | None
    traffic: Traffic
    gpu: Any = None
    made: list[Step] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)  # "node 2 (Concat-13): pieces"
    input_gathers: int = 0  # views gathered into a temporary buffer for a tensor-op node's input
    # print mode (core/value_bytes.py): a large value a node reads is made only where it is read
    shown: bool = False

    def device(self):
        if self.gpu is None:
            from ..gpu import get_gpu

            self.gpu = get_gpu(self.backend)
        return self.gpu

    def release_all(self) -> None:
        for step in self.made:
            if step.buffer is not None:
                step.buffer.release()
                step.buffer = None


def run_node(gn: GraphNode, graph: Graph, values: dict[str, Value], rt: Runtime, steps: list[Step]) -> Node:
    """Run tensor-op node ``gn`` now: its outputs become made Steps (or host
    tensors) in ``values``; raises (with the node's label) before any output
    exists when a rule is broken. Returns the node it built. A view
    operator's node is its plan's one region over its input as it lies
    (``_view_node``): no kernel, no input gathered."""
    from ..ops.tensor_nodes import build_tensor_node, is_tensor_op, node_inputs
    from . import apply_tensors
    from .graph_values import Step

    if not is_tensor_op(gn.op):
        return _view_node(gn, graph, values, steps)
    try:
        node = build_tensor_node(gn.proto, graph.opset)
    except OnnxopError as e:
        raise e.reworded(f"{gn.label}: {e.message}") from None
    temporaries: list[DeviceBuffer] = []
    try:
        made: dict[str, Tensor] = {}  # an input named twice (Concat(t, t)) is gathered once

        def tensor(n: str) -> Tensor:
            if n not in made:
                made[n] = as_tensor(values[n], rt, temporaries)
            return made[n]

        tensors = node_inputs(gn.proto, tensor)
        plans = apply_tensors.check(node, tensors, where=gn.label)
        # inputs read as their base lies (no temporary): an output that is one strided copy of one of
        # them (Split's parts, a crop) is a view of that base, composed with the views after it
        bases = {k: values[n] for k, (n, t) in enumerate(zip(gn.proto.input, tensors))
                 if t is not None and t.data is not None and not any(t.data is b for b in temporaries)
                 and not _rearranged(t.data, values[n])}
        deps = [values[n].base for n in gn.proto.input if rt.shown and n and isinstance(values[n].base, Step)]
        kinds = []
        for name, p in zip(gn.proto.output, plans):
            if not name:
                continue
            view = _as_view(name, p, bases)
            values[name] = view if view is not None else _output(gn, name, p, tensors, rt, steps, deps)
            kinds.append("view" if view is not None else "host" if p.dtype.is_string else p.kernel)
        kinds = dict.fromkeys(kinds)
        rt.kernels.append(f"{gn.label}: {', '.join(kinds)}")
    except (OpError, InputError) as e:  # found by a kernel (an index out of range): name the node
        if e.message.startswith(gn.label):
            raise
        raise (InputError if isinstance(e, InputError) else OpError)(f"{gn.label}: {e.message}") from None
    finally:
        for buf in temporaries:
            buf.release()
    return node


def as_tensor(v: Value, rt: Runtime, temporaries: list) -> Tensor:
    """``v`` as a kernel's input: a host tensor read as it lies, a made
    buffer, or the view gathered into a new row-major buffer (a temporary)."""
    from ..gpu.gather import gather_resident
    from .graph_values import Step, host_tensor, of_tensor
    from .tensor import Tensor

    if v.dtype.is_string:
        return host_tensor(v)
    base = v.base
    if _made_where_read(v, rt):
        from .value_bytes import ValueBytes

        return Tensor(v.name, v.shape, v.dtype, data=ValueBytes(v, rt.device, rt.traffic))
    if not isinstance(base, Step):
        if v.view == of_tensor(v.name, base).view or (base.order == "C" and as_it_lies(v.view, base.size)):
            return replace(base, name=v.name, shape=v.shape, data=Counted(base.data, rt.traffic))
        source = base.data
    else:
        ensure(base, rt)
        if as_it_lies(v.view, base.size):
            return Tensor(v.name, v.shape, v.dtype, data=base.buffer)
        source = base.buffer
    gpu = rt.device()
    try:
        buf = gather_resident(gpu, source, v.view.simplified(), v.dtype.bits, swap=v.swap, traffic=rt.traffic)
    except ValueError as e:  # a view outside its source: a bug, said plainly
        raise OnnxopError(f"{v.name}: {e}") from None
    assert buf is not None
    buf.traffic, buf.label = rt.traffic, v.name
    temporaries.append(buf)
    rt.input_gathers += 1
    return Tensor(v.name, v.shape, v.dtype, data=buf)


def _made_where_read(v: Value, rt: Runtime) -> bool:
    """Print mode: the next kernel reads ``v`` as bytes made where it reads
    them (core/value_bytes.py), not gathered or made whole: a large value
    that is not a made buffer or a host tensor as it lies, or one whose
    chain of gather steps reaches a large one not made."""
    from .graph_values import Step

    if not rt.shown:
        return False
    base = v.base
    unmade = isinstance(base, Step) and base.buffer is None
    if v.view.size * v.dtype.bits // 8 >= LAZY_BYTES and (unmade or not as_it_lies(v.view, base.size)):
        return True
    return unmade and _reads_unmade(base)


def _reads_unmade(step: Step) -> bool:
    """Print mode: the chain of gather steps under ``step`` reaches a large one not made."""
    from .graph_values import Step, unmade_chain

    chain = unmade_chain(step)
    if not chain:
        return False
    deepest = chain[0].source.base
    return isinstance(deepest, Step) and deepest.buffer is None and deepest.lazy is not None or any(
        s.size * s.source.dtype.bits // 8 >= LAZY_BYTES for s in chain)


def _rearranged(data, v: Value) -> bool:
    """A ValueBytes input whose bytes are not its base's as they lie (a view made on demand)."""
    from .graph_values import Step
    from .value_bytes import ValueBytes

    return isinstance(data, ValueBytes) and not (isinstance(v.base, Step) and as_it_lies(v.view, v.base.size))


def ensure(step: Step, rt: Runtime) -> None:
    """A gather step made now (a tensor-op node reads it), its sources first:
    the chain of steps not made yet is walked in a loop, never by recursion
    (a chain is as long as the graph is deep)."""
    from .graph_values import unmade_chain
    from .value_bytes import make_step

    if step.buffer is None and step.source is None and step.lazy is not None:  # a lazy tensor-op output
        step.lazy.make(step)
        return
    for s in unmade_chain(step):  # the deepest source first (make_step makes a lazy one it reads)
        make_step(rt.device(), s, rt.traffic)
        if s.buffer is not None:
            s.buffer.traffic, s.buffer.label = rt.traffic, s.source.name
        rt.made.append(s)


def _as_view(name: str, p, bases: dict[int, Value]) -> Value | None:
    """Output ``p`` as a view of an input's base, when it is one strided copy
    of an input read as it lies; else None (a kernel makes it)."""
    if p.pieces is None or len(p.pieces) != 1 or p.dtype.is_string or p.size == 0:
        return None
    pc = p.pieces[0]
    load = pc.copied  # not a masked, filled or converted region
    if load is None or load.input not in bases or pc.size != p.size:
        return None
    if not pc.dst.is_identity() and p.size > 1:
        return None
    v = bases[load.input]
    if v.dtype != p.dtype:
        return None
    return _region(name, tuple(p.shape), load.at, v)


def _view_node(gn: GraphNode, graph: Graph, values: dict[str, Value], steps: list[Step]) -> Node:
    """A view operator's node: its plan (ops/base.py: its rules, then one
    region) over its input as it lies in its base, composed with the views
    before it; where no strides can say the result, a gather step makes it."""
    from ..ops.model import build_node
    from ..ops.plan import Arg
    from .graph_values import Step, Value, host_tensor
    from .region import Access

    data, out = values[gn.proto.input[0]], gn.proto.output[0]
    node = build_node(gn.proto, graph.opset, lambda n: host_tensor(values[n]), gn.label)
    try:
        (p,) = node.op.plan(node, [Arg(gn.label, data.shape, data.dtype, None, data.view.strides, data.view.offset)])
    except (OpError, InputError) as e:
        raise e.reworded(f"{gn.label}: {e.message}") from None
    values[out] = _region(out, p.shape, p.view, data)
    if values[out] is None:  # no strides can say it: the node's result is made on the device
        step = Step(Value(out, tuple(p.view.shape), p.dtype, data.base, p.view, data.swap, data.text_dtype), gn.label)
        steps.append(step)
        values[out] = Value(out, p.shape, p.dtype, step, Access.row_major(p.shape), 0, data.text_dtype)
    return node


def _region(name: str, shape: tuple[int, ...], region, v: Value) -> Value | None:
    """``region`` (a strided view of ``v``'s base) as value ``name`` of
    ``shape``, composed into one view; None where no strides can say it."""
    from .graph_values import Value

    view = region.reshaped(shape)
    return None if view is None else Value(name, shape, v.dtype, v.base, view, v.swap, v.text_dtype)


def _output(gn: GraphNode, name: str, p, tensors, rt: Runtime, steps: list[Step], deps: list[Step]) -> Value:
    import numpy as np

    from ..gpu import resident
    from .apply_tensors import _checks_empty, _filler, _host, _source
    from .graph_values import Step, Value, of_tensor
    from .sources import MemoryBytes
    from .tensor import Tensor
    from .region import Access

    if p.dtype.is_string:
        t = Tensor(name, p.shape, p.dtype, strings=np.asarray(_host(p, tensors), dtype=object))
        return of_tensor(name, t)
    if p.values is not None or p.size == 0:  # metadata (Shape, Size), or nothing to make: a host tensor
        buf = bytearray()
        gpu = rt.device() if _checks_empty(p) else None  # an empty gather's indices are checked all the same
        with gpu.lock if gpu is not None else contextlib.nullcontext():
            _filler(gpu, p, tensors)(lambda chunk: buf.extend(bytes(chunk)))
        t = Tensor(name, p.shape, p.dtype, data=MemoryBytes(np.frombuffer(bytes(buf), dtype=np.uint8)))
        return of_tensor(name, t)
    step = Step(None, gn.label, shape=tuple(p.shape), dtype=p.dtype)  # type: ignore[arg-type]
    rt.made.append(step)
    steps.append(step)
    lazy = Lazy(p, list(tensors), rt, name, deps)
    if p.size * p.dtype.bits // 8 >= LAZY_BYTES and (rt.shown or not any(
            isinstance(tensors[k].data, resident.DeviceBuffer) for k in _read(p, tensors))):
        step.lazy = lazy  # made when read: by a later node, or streamed to an output (core/graph.py)
        if p.precheck is not None:  # what only the device can check (indices), refused now
            gpu = rt.device()
            with gpu.lock:
                p.precheck(gpu, [None if t is None else _source(t) for t in tensors])
    else:
        lazy.make(step)
    return Value(name, tuple(p.shape), p.dtype, step, Access.row_major(tuple(p.shape)))


def _read(p, tensors) -> set[int]:
    """The inputs whose bytes the output's kernel reads (not a shape read on the host when planned)."""
    if p.runner is not None:
        return {k for k, t in enumerate(tensors) if t is not None}
    return {x.input for pc in p.pieces or [] for x in pc.loads}  # a select's other side too


LAZY_BYTES = 64 << 20  # a tensor-op output this large whose inputs are host tensors is made only when read


@dataclass
class Lazy:
    """How a tensor-op node's output is made: into its step's device buffer
    (``make``), streamed into any sink in bands (``stream``), or only the
    elements a summary shows (``shown``, core/shown_values.py). Its inputs
    are host tensors, so nothing on the device has to outlive the node --
    except in print mode, where they may be made steps or values made on
    demand (core/value_bytes.py): ``deps``, kept alive while it is
    (``release_dead``)."""

    plan: Any
    tensors: list
    rt: Runtime
    name: str = ""
    deps: list = field(default_factory=list)  # the steps its inputs are views of

    def make(self, step: Step) -> None:
        from ..gpu import resident
        from .apply_tensors import _copied, _filler

        p, rt = self.plan, self.rt
        gpu = rt.device()
        out = resident.DeviceBuffer(gpu, (p.size * p.dtype.bits + 7) // 8, self.name or p.name)
        out.traffic = rt.traffic
        step.buffer = out
        from .value_bytes import ValueBytes, plan_runs

        with gpu.lock:
            copied = _copied(p, self.tensors)
            if copied is not None and isinstance(copied.data, resident.DeviceBuffer):
                resident.copy_on_device(gpu, copied.data, out)  # BitCast of an intermediate: the same bytes
            elif any(t is not None and isinstance(t.data, ValueBytes) for t in self.tensors):
                # print mode: its inputs made only where its kernel reads them (core/value_bytes.py)
                from ..gpu.pieces import BAND

                sink = resident.DeviceSink(out, rt.traffic)
                plan_runs(p, self.tensors, self.stream, gpu, rt.traffic, [(0, p.size)], sink, cap=BAND)
                sink.close()
            else:
                sink = resident.DeviceSink(out, rt.traffic)
                _filler(gpu, p, self.tensors)(sink)
                sink.close()

    def stream(self, sink) -> None:
        from .apply_tensors import _filler

        gpu = self.rt.device()
        with gpu.lock:
            _filler(gpu, self.plan, self.tensors)(sink)

    def shown(self, edge: int):
        from .shown_values import plan_shown

        return plan_shown(self.rt.device(), self.plan, self.tensors, edge=edge, backend=self.rt.backend)


def release_dead(i: int, last_read: dict[str, int], values: dict[str, Value], rt: Runtime) -> None:
    """Release the buffers no value read after node ``i`` (or an output) needs."""
    if not rt.made:
        return
    live: set[int] = set()
    for name, v in values.items():
        if last_read.get(name, -1) <= i:
            continue
        live.update(id(s) for s in reads(v.base))
    for step in rt.made:
        if id(step) not in live and step.buffer is not None:
            step.buffer.release()
            step.buffer = None


def reads(base) -> list[Step]:
    """The steps a value of ``base`` needs: the base, its sources and, for a
    tensor-op output not made, the steps its inputs read (print mode), in a loop."""
    from .graph_values import Step

    seen: dict[int, Step] = {}
    todo = [base]
    while todo:
        s = todo.pop()
        if not isinstance(s, Step) or id(s) in seen:
            continue
        seen[id(s)] = s
        if s.source is not None:
            todo.append(s.source.base)
        if s.lazy is not None:
            todo.extend(s.lazy.deps)
    return list(seen.values())


def last_reads(graph: Graph) -> dict[str, int]:
    """Each value's last reader: a node's index, or past the end for an output."""
    last: dict[str, int] = {}
    for i, gn in enumerate(graph.nodes):
        for name in gn.proto.input:
            if name:
                last[name] = i
    for name in graph.outputs:
        last[name] = len(graph.nodes)
    return last

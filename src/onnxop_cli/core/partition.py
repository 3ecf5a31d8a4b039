"""A model split into regions: the nodes onnxop runs and those another runtime runs.

    model --classify--> each node onnxop's or the others' (a Constant goes
          with its readers) --schedule--> a topological order that keeps each
          runtime's nodes together --regions--> maximal runs of one runtime,
          each a sub-model (its own inputs, initializers and outputs)

The regions run in order (core/others.py): onnxop's through the one graph
executor (core/graph.py), the others' on onnxruntime (core/other_onnxruntime.py)
or onnx.reference (core/other_reference.py). A value crosses between the
device and the host only where it leaves or enters an onnxop region.

A node is the others' when onnxop has no such operator at the model's opset,
it is in another domain (com.microsoft), it calls one of the model's
functions, an attribute holds a graph (Loop, Scan: the node goes to the
other runtime whole, with every outer value its bodies read), or it reads or
makes a sequence, map or optional; a region hands on tensors, so the nodes
between such a value's maker and its reader go to the others too (_apart). An If is the
host's, a region of its own: its condition is read back and the branch it
picks is split and run as a model of its own (core/others.py), so the data
movement inside a branch runs on the GPU too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..ops.model import CONSTANT, ONNX_DOMAINS
from ..ops.nodekinds import (  # noqa: F401
    NOT_TENSORS, OtherNodes, Unsupported, counted, kind, model_opset, onnxop_runs, ops, others_in, reads, value_types)

ONNXOP = "onnxop"
HOST = "host"  # an If: its condition read, its branch run as a model of its own
OTHERS = ("onnxruntime", "reference")  # --others
RUNTIME_NAMES = {ONNXOP: "onnxop (WebGPU)", HOST: "host (If)", "onnxruntime": "onnxruntime (CPU)",
                 "reference": "onnx.reference"}


@dataclass
class Region:
    runtime: str  # ONNXOP or one of OTHERS
    nodes: list[Any]  # NodeProtos, in the order they run
    inputs: list[str] = field(default_factory=list)  # values read from before the region (initializers too)
    outputs: list[str] = field(default_factory=list)  # values made here that a later region or the caller reads
    copies: list[Any] = field(default_factory=list)  # Constants an earlier region made too: run again, not counted
    needed: set[str] = field(default_factory=set)  # the outputs read later (the rest: keep_all's, for --verify, --dump)
    places: list[int] = field(default_factory=list)  # each node's index in the model, copies then nodes (as submodel's)

    @property
    def label(self) -> str:
        return f"{RUNTIME_NAMES[self.runtime]} region of {len(self.nodes)} node(s) ({counted(ops(self.nodes))})"


@dataclass
class Partition:
    model: Any
    regions: list[Region]
    outputs: list[str]  # the graph's outputs
    initializers: dict[str, Any]
    others: str = "onnxruntime"  # the runtime of the nodes onnxop does not run
    keep_all: bool = False  # every value a node makes is a region output
    keep_onnxop: bool = False  # every value a node of onnxop's regions makes is one (--verify reads them)


# ------------------------------------------------------------------ splitting


def split(model, others: str, *, keep_all: bool = False, keep_onnxop: bool = False,
          unknown: bool = False) -> Partition:
    """The model's regions, in the order they run. ``keep_all``: every value a
    node makes is a region output (--dump reads each of them); ``keep_onnxop``: every value
    a node of onnxop's regions makes (--verify compares each; the others' keep only what
    is read later, as in a plain run). ``unknown``: a node whose input types onnx's shape
    inference cannot tell is onnxop's, not the others' (--verify or --dump without
    --others: the plan then refuses what it does not run, as the plain run does)."""
    from ..ops.model import check_names

    check_names(model)
    g = model.graph
    opset = model_opset(model)
    functions = {(f.domain, f.name) for f in model.functions}
    nodes = list(g.node)
    producer: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for name in n.output:
            if name:
                producer.setdefault(name, i)
    readers: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    needs: list[set[int]] = []
    for i, n in enumerate(nodes):
        deps = {producer[x] for x in reads(n) if x in producer and producer[x] != i}
        needs.append(deps)
        for d in deps:
            readers[d].append(i)
    types = value_types(model)  # float Add is the others': onnxop runs integer arithmetic only
    side = [HOST if _is_if(n) else ONNXOP if onnxop_runs(n, opset, functions, types, unknown=unknown) else others
            for n in nodes]
    # a Constant that a node reads goes into every region that reads it: a weight
    # never crosses, and onnxruntime sees it as the constant it is (prepacked, as
    # in its own run of the whole model)
    attached = {i for i, n in enumerate(nodes) if n.op_type == CONSTANT and n.domain in ONNX_DOMAINS and readers[i]}
    needs = [d - attached for d in needs]
    order = _schedule(needs, readers, side, attached)
    if len(order) + len(attached) != len(nodes):
        at = next(i for i in range(len(nodes)) if i not in set(order) | attached)
        stuck = nodes[at]
        raise InputError(f"node {place_name(stuck, at)} ({kind(stuck)}) is on a cycle: the graph cannot be ordered")
    while moved := _apart(_runs(order, side), nodes, producer, types, side, others):
        for i in moved:
            side[i] = others
        order = _schedule(needs, readers, side, attached)
    runs = _runs(order, side)
    regions = [Region(runtime, [nodes[i] for i in run]) for runtime, run in runs]
    owned: set[int] = set()
    for region, (_, run) in zip(regions, runs):
        wanted = dict.fromkeys(producer[x] for n in region.nodes for x in reads(n)
                               if x in producer and producer[x] in attached)
        region.nodes[:0] = [nodes[i] for i in wanted if i not in owned]
        region.copies = [nodes[i] for i in wanted if i in owned]
        region.places = [*(i for i in wanted if i in owned), *(i for i in wanted if i not in owned), *run]
        owned |= set(wanted)
    check_ifs(nodes)  # every If, nested ones too, before anything runs
    outputs = [v.name for v in g.output]
    _wire(regions, outputs, keep_all, keep_onnxop)
    return Partition(model, regions, outputs, {t.name: t for t in g.initializer}, others, keep_all, keep_onnxop)


def _is_if(proto) -> bool:
    return proto.op_type == "If" and proto.domain in ONNX_DOMAINS


def made_values(nodes) -> list[str]:
    """Every value the nodes make, the values of their If branches included
    (either branch may run), each once."""
    from ..ops.nodekinds import subgraphs

    found: dict[str, None] = {}
    stack = [list(nodes)]
    while stack:
        for n in stack.pop():
            found.update(dict.fromkeys(x for x in n.output if x))
            if _is_if(n):
                stack += [list(g.node) for g in subgraphs(n)]
    return list(found)


def check_values(model) -> None:
    """The graph's names as the graph executor checks them (ops/model.py's
    load_graph) for a model of any nodes, in any order: inputs and
    initializers named once, each value made once, every value a node (or
    its subgraphs) reads and every graph output defined, each output listed
    once."""
    from ..ops.model import graph_outputs, node_label

    g = model.graph
    known: dict[str, str] = {}
    for v in g.input:
        if not v.name:
            raise InputError("a graph input has no name")
        if v.name in known:
            raise InputError(f"two graph inputs are named {v.name!r}")
        known[v.name] = "a graph input"
    names = [t.name for t in g.initializer] + [t.values.name for t in g.sparse_initializer]
    # what a file gives and a file takes: a tensor (or an optional one), never a sequence or a map
    for side, values in (("input", [v for v in g.input if v.name not in names]), ("output", g.output)):
        for v in values:
            what = v.type.WhichOneof("value")
            if what == "optional_type":
                what = v.type.optional_type.elem_type.WhichOneof("value")
            if what not in (None, "tensor_type"):
                what = what.replace("_type", "").replace("_", " ")
                raise Unsupported(f"graph {side} {v.name!r} is {'an' if what[0] in 'aeiou' else 'a'} {what} value; "
                                  f"onnxop {'reads' if side == 'input' else 'writes'} tensors")
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"two initializers are named {name!r}")
        known.setdefault(name, "an initializer")
    for i, n in enumerate(g.node):
        for name in (x for x in n.output if x):
            if name in known:
                raise InputError(f"{node_label(i, n)} produces {name!r}, which is already {known[name]}")
            known[name] = f"produced by {node_label(i, n)}"
    for i, n in enumerate(g.node):
        for name in reads(n):
            if name not in known:
                raise InputError(f"{node_label(i, n)} reads {name!r}, which no input, initializer or node provides")
    graph_outputs(g, known)


def check_ifs(nodes) -> None:
    """Each If's branches make its outputs, as many and of one type each (as
    ONNX requires and onnxruntime checks when it loads a model): the branch a
    condition picks must not decide the type of a value."""
    from ..ops.nodekinds import subgraphs

    stack = [list(nodes)]
    while stack:
        for i, n in enumerate(stack.pop()):
            stack += [list(g.node) for g in subgraphs(n)]  # (a Loop's or Scan's body too)
            if not _is_if(n):
                continue
            branches = {a.name: a.g for a in n.attribute if a.name in ("then_branch", "else_branch")}
            if len(branches) != 2:
                continue  # (the run names the one missing, if it is picked)
            where = f"If node {place_name(n, i)}"
            then, other = branches["then_branch"], branches["else_branch"]
            if not len(then.output) == len(other.output) == len(n.output):
                raise InputError(f"{where}: its then_branch makes {len(then.output)} output(s), its else_branch "
                                 f"{len(other.output)}; ONNX requires both to make the If's {len(n.output)}")
            for k, (a, b) in enumerate(zip(then.output, other.output)):
                ta, tb = type_text(a.type), type_text(b.type)
                if ta is not None and tb is not None and ta != tb:
                    raise InputError(f"{where}: its output {k} is {ta} from its then_branch ({a.name!r}) and {tb} "
                                     f"from its else_branch ({b.name!r}); ONNX requires the branches' outputs to "
                                     "agree in type")


def place_name(proto, place: int | None) -> str:
    """``3 'tr'``: a node's index in its graph (the model's, or its If branch's) and its name where it has
    one, as messages name it after ``node``; an unnamed node's name alone ('') named none."""
    return " ".join([*([str(place)] if place is not None else []), *([repr(proto.name)] if proto.name else [])])


def type_text(tp) -> str | None:
    """``float32``, ``sequence of int64``...; None where the type is not declared."""
    from .tensor import dtype_by_onnx

    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        elem = getattr(tp, which).elem_type
        if not elem:
            return None
        try:
            name = dtype_by_onnx(elem).name
        except InputError:
            name = f"data type {elem}"
        return name if which == "tensor_type" else f"sparse {name}"
    if which in ("sequence_type", "optional_type"):
        inner = type_text(getattr(tp, which).elem_type)
        return None if inner is None else f"{which.split('_')[0]} of {inner}"
    return None if which is None else which


def _schedule(needs: list[set[int]], readers: dict[int, list[int]], side: list[str], skip: set[int]) -> list[int]:
    """Kahn's order, taking the first ready node of the runtime now running
    before switching: each runtime's nodes stay together where the edges allow.
    A switch goes to onnxop's ready nodes first (at the start too): they read
    nothing the others have still to make, so the others' run after them is not
    cut in two where it waits for them (a float16 value crossing such a cut is
    rounded, which onnxruntime's own run keeps in float32 between its nodes)."""
    import heapq

    waiting = [len(d) for d in needs]
    ready: dict[str, list[int]] = {}
    for i, w in enumerate(waiting):
        if not w and i not in skip:
            heapq.heappush(ready.setdefault(side[i], []), i)
    order: list[int] = []
    current = None
    while any(ready.values()):
        if not ready.get(current):
            current = ONNXOP if ready.get(ONNXOP) else side[min(q[0] for q in ready.values() if q)]
        i = heapq.heappop(ready[current])
        order.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if not waiting[r]:
                heapq.heappush(ready.setdefault(side[r], []), r)
    return order


def _runs(order: list[int], side: list[str]) -> list[tuple[str, list[int]]]:
    """The regions of an order: its maximal runs of one runtime, an If a run of its own."""
    runs: list[tuple[str, list[int]]] = []
    for i in order:
        if not runs or runs[-1][0] != side[i] or side[i] == HOST:
            runs.append((side[i], []))
        runs[-1][1].append(i)
    return runs


def _apart(runs: list[tuple[str, list[int]]], nodes: list[Any], producer: dict[str, int],
           types: dict[str, str], side: list[str], others: str) -> set[int]:
    """The nodes that must go to the others so that no sequence, map or optional
    crosses between regions (a region hands on tensors; onnxruntime's and
    onnx.reference's sequences are Python lists, an empty optional None): those of onnxop's regions and Ifs from the region
    that makes such a value to the one that reads it, both included. Empty when
    none crosses."""
    where = {i: k for k, (_, run) in enumerate(runs) for i in run}
    move: set[int] = set()
    for i, n in enumerate(nodes):
        for x in reads(n) if i in where else ():
            if types.get(x) in NOT_TENSORS and producer.get(x) in where and where[producer[x]] != where[i]:
                a, b = sorted((where[producer[x]], where[i]))
                move |= {j for _, run in runs[a:b + 1] for j in run if side[j] != others}
    return move


def _wire(regions: list[Region], outputs: list[str], keep_all: bool, keep_onnxop: bool = False) -> None:
    later: set[str] = set(outputs)  # read after the region being wired
    for region in reversed(regions):
        made = [x for n in region.nodes for x in n.output if x]
        verified = keep_onnxop and region.runtime == ONNXOP
        region.outputs = list(dict.fromkeys(x for x in made if keep_all or verified or x in later))
        if verified:  # --verify reads the Constants an earlier region made too
            region.outputs += [x for n in region.copies for x in n.output if x and x not in region.outputs]
        region.needed = {x for x in made if x in later}
        made_set = set(made) | {x for n in region.copies for x in n.output}
        inputs: list[str] = []
        for n in region.nodes:
            inputs += [x for x in reads(n) if x not in made_set]
        region.inputs = list(dict.fromkeys(inputs))
        later |= set(region.inputs)

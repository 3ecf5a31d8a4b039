"""The values of a planned graph (core/graph.py, core/graph_steps.py): each a
strided Access of a *base* -- a host tensor (graph input, initializer,
``Constant``) or a ``Step``, a buffer on the device -- and how a value is
read on the host when a later node needs it (a shape, a slice's starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .region import Access, c_strides, f_strides

if TYPE_CHECKING:
    import numpy as np

    from ..gpu.resident import DeviceBuffer, Traffic
    from .tensor import DType, Tensor


@dataclass(eq=False)
class Step:
    """A base made on the device: ``source`` gathered into a row-major buffer,
    or (``source`` None) a tensor-op node's output, made when planned
    (graph_steps.py), of ``shape`` and ``dtype``."""

    source: Value | None
    label: str
    buffer: DeviceBuffer | None = None  # at run time
    strings: Any = None  # string tensors: gathered on the host at run time
    readers: int = 0  # later steps and outputs that read it
    shape: tuple[int, ...] = ()
    dtype: Any = None
    # a tensor-op node's large output not made when planned (graph_steps.Lazy): made by ``buffer_of``
    # when a later node reads it, streamed straight to an output's sink, or only its shown elements
    lazy: Any = None

    @property
    def size(self) -> int:
        if self.source is not None:
            return self.source.view.size
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: DType
    base: Any  # Tensor (host: input, initializer, Constant) or Step (device)
    view: Access  # over the base's elements; its shape is ``shape``
    swap: int = 0  # byte-swap unit of a big-endian host base
    text_dtype: str = ""


def of_tensor(name: str, t: Tensor) -> Value:
    strides = f_strides(t.shape) if t.order == "F" else c_strides(t.shape)
    return Value(name, tuple(t.shape), t.dtype, t, Access(tuple(t.shape), strides), t.byteswap, t.text_dtype)


def unmade_chain(step: Step) -> list[Step]:
    """The gather steps ``step`` needs made, itself included, deepest source
    first: a loop down the chain of sources (never recursion: a chain is as
    long as the graph is deep), stopping at a made step or a host base."""
    chain: list[Step] = []
    while isinstance(step, Step) and step.buffer is None and step.source is not None:
        chain.append(step)
        step = step.source.base
    return chain[::-1]


def host_array(v: Value) -> np.ndarray:
    """The value on the host, with numpy: for constant inputs (a shape, a
    slice's starts), not for data. A chain of gather steps is followed down
    to its first host value (a host base, a tensor-op node's output, a made
    string step), then its views are taken back up, in loops."""
    import numpy as np

    chain = [v]  # v, then the source of each gather step below it
    while isinstance(chain[-1].base, Step) and chain[-1].base.source is not None \
            and chain[-1].base.strings is None:
        chain.append(chain[-1].base.source)
    base = chain[-1].base
    if isinstance(base, Step) and base.strings is not None:  # a string step already gathered
        raw = np.asarray(base.strings, dtype=object).reshape(-1)
    elif isinstance(base, Step):  # a tensor-op node's output: read back (counted)
        buffer = buffer_of(base)
        assert buffer is not None, f"{base.label}'s buffer was released before its last reader"
        from .tensor import Tensor as T

        raw = T(chain[-1].name, base.shape, base.dtype, data=buffer).to_numpy().reshape(-1)
    elif base.dtype.is_string:
        raw = np.asarray(base.strings, dtype=object).reshape(-1)
    else:
        a = base.to_numpy()
        raw = (a.T if base.order == "F" else a).reshape(-1)
    for value in reversed(chain):
        raw = raw[element_index(value.view)] if value.view.size else raw[:0]
    return raw.reshape(v.shape)


def host_tensor(v: Value) -> Tensor:
    from .tensor import Tensor

    return Tensor.from_numpy(host_array(v), v.name, dtype=v.dtype)


def element_index(view: Access):
    import numpy as np

    if 0 in view.shape:  # no element (another axis's positions could be 2**40 of them)
        return np.zeros(0, dtype=np.int64)
    index = np.full(view.shape, view.offset, dtype=np.int64)
    for k, (d, s) in enumerate(zip(view.shape, view.strides)):
        index += (np.arange(d, dtype=np.int64) * s).reshape((d,) + (1,) * (len(view.shape) - k - 1))
    return index.reshape(-1)


def buffer_of(step: Step):
    """The step's device buffer, a lazy tensor-op output made now (graph_steps.Lazy)."""
    if step.buffer is None and step.lazy is not None:
        step.lazy.make(step)
    return step.buffer


class Counted:
    """A host input's bytes, counting what a kernel uploads of them."""

    def __init__(self, data: Any, traffic: Traffic) -> None:
        self.data, self.traffic, self.nbytes = data, traffic, data.nbytes

    def readinto(self, offset: int, out: memoryview) -> None:
        self.data.readinto(offset, out)
        self.traffic.uploaded += len(out)

    def to_array(self):
        return self.data.to_array()

    def close(self) -> None:
        pass


def as_it_lies(view, size: int) -> bool:
    """The view reads all ``size`` elements of a row-major base in order."""
    if view.size != size:
        return False
    return view.size == 0 or view.is_identity() or (view.size == 1 and view.offset == 0)

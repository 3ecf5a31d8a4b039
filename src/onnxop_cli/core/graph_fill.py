"""How a planned graph's output reaches its writer (core/graph.py ``execute``):
``Fill(sink)`` streams all its bytes, ``Fill.shown(edge)`` makes only the
elements a summary shows. An output that is a step's elements as they lie,
the step not made (graph_steps.Lazy, or a gather only outputs read), is
streamed straight from what makes the step, band by band: never whole, on
the device or on the host, printed or written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .graph_values import Step, Value, buffer_of
from .region import Access

if TYPE_CHECKING:
    import numpy as np

    from ..gpu.resident import Traffic
    from ..io import Sink


class Fill:
    """How ``write`` gets an output: ``fill(sink)`` streams all its bytes;
    ``fill.shown(edge)`` makes only the elements a summary shows
    (core/summary.py). An output that is a step's elements as they lie,
    the step not made (a large tensor-op output, graph_steps.Lazy, or a
    gather only outputs read), is streamed straight from what makes the
    step, in bands: it is never whole, on the device or on the host."""

    def __init__(self, gpu, v: Value, traffic: Traffic, print_mode: bool = False) -> None:
        self.gpu, self.v, self.traffic = gpu, v, traffic
        self.print_mode = print_mode  # print mode: an unmade step is made only where read (core/value_bytes.py)

    def __call__(self, sink: Sink) -> None:
        from .apply_tensors import _zero_pad_bits
        from .tensor import Tensor

        v = self.v
        stream = self._producer()
        if stream is not None and _whole(v, v.base):
            stream(_zero_pad_bits(sink, Tensor(v.name, v.shape, v.dtype)))
            return
        if stream is not None and self.print_mode:  # a part of an unmade step (a slice of a Concat): that part
            from ..gpu.pieces import BAND
            from .value_bytes import produce

            whole = _zero_pad_bits(sink, Tensor(v.name, v.shape, v.dtype))
            produce(v, self.gpu, self.traffic, [(0, v.view.size)], whole, cap=BAND)
            return
        _stream(self.gpu, v, sink, self.traffic)

    def _producer(self):
        """How the unmade step under this output streams its row-major bytes; None when it is made."""
        v = self.v
        base = v.base
        if not isinstance(base, Step) or base.buffer is not None:
            return None
        if base.lazy is not None:
            return base.lazy.stream
        if base.source is not None:
            from .value_bytes import read_source

            src = base.source
            source = read_source(src.base, self.gpu, self.traffic, self.print_mode) if isinstance(src.base, Step) \
                else src.base.data
            return lambda sink: self._gather(source, src.view.simplified(), src.swap, sink)
        return None

    def _gather(self, source, view: Access, swap: int, sink) -> None:
        from ..gpu.gather import gather_through_kernel

        gather_through_kernel(self.gpu, source, sink, view=view, bits=self.v.dtype.bits, swap=swap,
                              traffic=self.traffic)

    def shown(self, edge: int) -> np.ndarray:
        """The summary's elements, as an array of the narrowed shape (numpy's
        summary of it is the whole output's): the narrowed view gathered,
        the narrowed pieces of an unmade step run over its inputs (read where
        they are read, core/value_bytes.py), or (pieces that cannot be
        narrowed) the step streamed through and only the shown elements
        kept (core/shown_values.py)."""
        from .shown_values import edge_view, stream_shown

        v = self.v
        base = v.base
        if isinstance(base, Step) and base.buffer is None and (base.lazy is not None or base.source is not None):
            made = self._unmade_shown(edge)
            return made if made is not None else stream_shown(self._producer(), v.view, v.dtype, v.name, edge)
        narrowed, shape = edge_view(v.view, edge)
        source = buffer_of(base) if isinstance(base, Step) else base.data
        return self._array(lambda sink: self._gather(source, narrowed.simplified(), v.swap, sink),
                           tuple(narrowed.shape)).reshape(shape)

    def _unmade_shown(self, edge: int):
        """An unmade step's shown elements: its node's narrowed pieces (or cut
        table) when the output is the step as it lies, else the view's
        narrowed index map over the step's elements, made where read."""
        from .shown import narrow, view_piece
        from .shown_values import pieces_shown
        from .tensor import Tensor
        from .value_bytes import ValueBytes, whole_value

        v = self.v
        base = v.base
        if base.lazy is not None and _whole(v, base) and v.shape == base.shape:  # not reshaped: its own summary
            return base.lazy.shown(edge)
        pieces = narrow([view_piece(v.view)], v.shape, edge)
        if pieces is None:
            return None
        data = ValueBytes(whole_value(base), lambda: self.gpu, self.traffic)
        t = Tensor(v.name, (base.size,), v.dtype, data=data)  # the step's elements, row-major
        return pieces_shown(pieces, v.shape, v.dtype, [t], edge=edge, gpu=self.gpu)

    def _array(self, stream, shape: tuple[int, ...]) -> np.ndarray:
        import numpy as np

        from .sources import MemoryBytes
        from .tensor import Tensor

        chunks: list[bytes] = []
        stream(lambda c: chunks.append(bytes(c)))
        data = MemoryBytes(np.frombuffer(b"".join(chunks), dtype=np.uint8))
        return Tensor(self.v.name, shape, self.v.dtype, data=data).to_numpy()


def _whole(v: Value, base) -> bool:
    """``v`` is all of the step's elements, row-major, as they lie."""
    from .graph_values import as_it_lies

    return isinstance(base, Step) and v.view.size == base.size and as_it_lies(v.view, base.size)


def _stream(gpu, v: Value, sink: Sink, traffic: Traffic) -> None:
    from .. import gpu as gpu_pkg
    from ..gpu.gather import gather_through_kernel
    from .apply_tensors import _zero_pad_bits
    from .tensor import Tensor

    sink = _zero_pad_bits(sink, Tensor(v.name, v.shape, v.dtype))
    view = v.view.simplified()
    if v.view.size == 0:
        return
    if isinstance(v.base, Step):
        gather_through_kernel(gpu, buffer_of(v.base), sink, view=view, bits=v.dtype.bits, traffic=traffic)
        return
    t = v.base
    if view.is_identity() and view.size == t.size and not v.swap:
        gpu_pkg.copy_through_kernel(gpu, t.data, sink)
        traffic.uploaded += t.nbytes
        traffic.read_back += t.nbytes
        return
    gather_through_kernel(gpu, t.data, sink, view=view, bits=v.dtype.bits, swap=v.swap, traffic=traffic)

"""A scatter's updates applied in rounds (gpu/render/scatter.py's ``Apply`` and ``Pass``), over the whole data or a
band at a time, and how updates combine (``Reduce``; ``arithmetic`` and ``apply_head``: the kernels' variant and
the host's NaN facts for it).

The k-th update of one element goes in round k, updates of distinct elements in parallel: onnx.reference's result
(it loops in index order) on every run, with no atomics whose order matters. One round per update of the
most-updated element, in batches of 1, 2, 4 .. 64 with a readback after each; with reduction none a second round is
two updates of one element, refused before the readback.

Data (or its claims, 4 bytes an element) past one storage binding goes a band at a time (``scatter_banded``; the
updates and their targets still fit one binding each): the targets are found once, into the whole data; per band,
the band pass keeps the updates whose targets lie in it, the rounds run and the band goes to the sink: the same
bytes as one pass (the slice and line kernels address the whole data: not there). With reduction none every band's
one round runs first, so a duplicate is refused before any band is written.
"""

from __future__ import annotations

import functools
import operator
import struct
from dataclasses import dataclass
from typing import Any

from ..errors import OpError
from . import indexed_buffers
from .bands import fill
from .buffers import reset_status
from .device import Gpu
from .indexed import Buffers, Data, Gather, Sink, Table, binding_limit, launch, read_small, row_strides, to_sink, U
from .program import compiled, grid_x
from .render.scatter import ARITH, PASSES, ROUND_PARAMS, ROUNDS_WG, Apply, Pass

DUPLICATES = "two updates write one element with reduction none (the result is undefined); use distinct indices or a reduction"


@dataclass(frozen=True)
class Reduce:
    """How updates combine: ``kind`` none, add, mul, max or min; ``cls`` the arithmetic
    class (0 unsigned, 1 signed, 2 IEEE float, 3 bool, 4 bfloat16: ops/indexed_plan.py);
    ``numpy`` np.maximum's NaN rule (ScatterND) or Python's max() (ScatterElements)."""

    kind: str = "none"
    cls: int = 0
    numpy: bool = True
    inner: int = 0  # elements numpy combines in one call: 0 scalars (ScatterElements), else a slice's


def arithmetic(reduce: Reduce, bits: int) -> str | None:
    """The kernels' arithmetic (the key of gpu/render/scatter.py's ARITH that declares ``reduce``'s kind
    and class at ``bits``), or None where it has none (float64 add and mul: no f64 in WGSL, the op refuses them)."""
    return next((op for op, a in ARITH.items() if a.kind == reduce.kind and reduce.cls in a.classes
                 and bits in a.widths and a.numpy in (None, reduce.numpy)), None)


@functools.lru_cache(maxsize=None)
def nan_first(kind: str, bits: int, inner: int, bfloat: bool = False) -> bool:
    """Whether, of two NaN operands, numpy's ``+``/``*`` keeps the first (the element's) -- asked of this host's
    numpy (ml_dtypes for bfloat16), on scalars (``inner`` 0) or on arrays of ``inner`` elements, as the
    reference combines them: its scalar and SIMD loops answer differently on x86. The two NaNs differ in sign,
    which is all bfloat16 keeps of a NaN."""
    import numpy as np

    if kind not in ("add", "mul") or bits not in (16, 32):
        return False
    if bfloat:
        import ml_dtypes

        t, q, u = ml_dtypes.bfloat16, (0x7FC1, 0xFFC2), np.uint16
    elif bits == 32:
        t, q, u = np.float32, (0x7FC00001, 0xFFC00002), np.uint32
    else:
        t, q, u = np.float16, (0x7E01, 0xFE02), np.uint16
    a, b = (np.full(max(inner, 1), v, dtype=u).view(t) for v in q)
    scalar, in_place = (operator.mul, operator.imul) if kind == "mul" else (operator.add, operator.iadd)
    with np.errstate(invalid="ignore"):  # the reference's ``*``/``+`` on scalars, ``*=``/``+=`` on its slices
        r = scalar(a[0], b[0]) if inner == 0 else in_place(a.copy(), b)[0]
    sign = 1 << (bits - 1)
    return int(np.asarray(r).view(u)) & sign == q[0] & sign


def _default_nan() -> int:
    import numpy as np

    with np.errstate(invalid="ignore"):
        nan = np.float32(np.inf) - np.float32(np.inf)
    return int(np.array(nan, dtype="<f4").view("<u4"))


def apply_head(reduce: Reduce, bits: int) -> dict[str, int]:
    """The kernels' Params ``default_nan`` and ``nan_first`` for ``reduce`` on elements of ``bits``."""
    return {"default_nan": _default_nan(), "nan_first": int(
        reduce.cls in (2, 4) and nan_first(reduce.kind, bits, reduce.inner, reduce.cls == 4))}


def rounds(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, targets: Any, data: Data, n: int,
           reduce: Reduce, op: str, max_dim: int, band: tuple[int, int] | None = None) -> None:
    """Apply the updates, round after round, until none is pending: batches of 1, 2, 4 .. 64 rounds, each over the
    updates the last one left (gathered by the compact pass), a readback of what is left after each. ``band``
    (first data element, elements): ``out`` holds only that band of the data, and only the updates whose targets
    lie in it are applied (the band pass marks the others done; ``scatter_banded``)."""
    # new buffers are zeroed: no element claimed, no update done
    claim = bufs.new("claims", 4 * (data.size if band is None else band[1]), U.STORAGE)
    done = bufs.new("done", 4 * (-(-n // 32)), U.STORAGE)
    status = bufs.result("status")
    none = reduce.kind == "none"
    # two lists, the pending ones and the next; none runs one batch and never reads a list: a stand-in next
    lists = [bufs.new("pending", 4 * n if k == 0 or not none else 4, U.STORAGE) for k in range(2)]
    wg = ROUNDS_WG  # the passes' and the apply's: one grid
    head = apply_head(reduce, data.bits)
    if band is not None:  # every update outside the band marked done, the others' targets rebased onto it
        band_targets = bufs.new("band targets", 4 * n, U.STORAGE)
        launch(bufs, Pass("band", wg), n, 1, max_dim, "band params",
               dict(count=n, direct=1, base=band[0], size=band[1], **head),
               [targets, claim, done, None, lists[0], status, band_targets])
        targets = band_targets
    passes = {name: compiled(gpu, Pass(name, wg)) for name in PASSES if name != "band"}
    small = bufs.new("round params", ROUND_PARAMS.size, U.UNIFORM | U.COPY_DST)  # the passes' and the apply's
    arith = arithmetic(reduce, data.bits)
    assert arith is not None, f"the op refuses reduction {reduce.kind} on {data.bits}-bit class {reduce.cls}"
    k_apply = compiled(gpu, Apply(arith, data.bits, wg))
    count, direct, current = n, 1, 0
    batch = 1
    while True:
        groups = -(-count // wg)
        gpu.queue.write_buffer(small, 0, ROUND_PARAMS.pack(count=count, groups_x=grid_x(groups, max_dim),
                                                           direct=direct, base=0, size=0, **head))
        reset_status(gpu, status, 0)
        ls, nxt = lists[current], lists[1 - current]
        bound = [targets, claim, done, small, ls, status, nxt]
        # a round: claim, apply, reset (none is one round: the apply kernel flags a second update); then compact
        one = [(passes["claim"], bound), (k_apply, [targets, claim, done, small, upd, out, status, ls])]
        steps = one * batch if none else [*one, (passes["reset"], bound)] * batch + [(passes["compact"], bound)]
        encoder = gpu.device.create_command_encoder()
        for kernel, resources in steps:
            kernel.dispatch(encoder, groups, max_dim, kernel.bind(resources))
        gpu.queue.submit([encoder.finish()])
        _, pending, left = struct.unpack("<3I", read_small(gpu, bufs, status, 12))
        if not pending:
            return
        if none:
            raise OpError(f"{op}: {DUPLICATES}")
        count, direct, current = left, 0, 1 - current
        batch = min(batch * 2, 64)


def targets_of(bufs: Buffers, data: Any, norm: Any, table: Table, max_dim: int) -> Any:
    """Each update's data element (the gather kernel's offsets mode over ``table``), a new buffer."""
    targets = bufs.new("targets", 4 * table.size, U.STORAGE | U.COPY_SRC)
    Gather(bufs, data, norm, table, max_dim).run(targets, 0, table.size, offsets=True)
    return targets


def band_elements(bits: int, cap: int) -> int:
    """Elements of a band: its data and its claims each within ``cap`` bytes, whole words."""
    return max(128, min(cap * 8 // bits, cap // 4) // 128 * 128)


class Fill:
    """A band of the data into a buffer, row-major and little-endian: read straight from the source when it is so
    already, else re-laid (and swapped) by the gather kernel from the data's windows."""

    def __init__(self, gpu: Gpu, bufs: Buffers, data: Data, max_dim: int, band: int) -> None:
        from .resident import DeviceBuffer

        self.gpu, self.data = gpu, data
        self.direct = not data.swap and data.row_major
        self.on_device = isinstance(data.source, DeviceBuffer)  # a graph's intermediate: copied on the device
        self.staging = None
        if self.on_device and self.direct:
            return
        if self.direct:
            self.staging = bufs.new("upload", min(indexed_buffers.UPLOAD_STEP, band * data.bits // 8),
                                    U.MAP_WRITE | U.COPY_SRC)
            return
        self.windows = indexed_buffers.plan_windows(gpu, bufs, data.source, data.size, data.bits,
                                                    binding_limit(gpu), data.nbytes, band * data.bits // 8,
                                                    stream=False)
        ident = Table.over(data.shape, data.strides or row_strides(data.shape), (0,) * len(data.shape))
        self.kernel = Gather(bufs, self.windows.first, bufs.new("norm", 16, U.STORAGE), ident, max_dim, None,
                             data.bits, data.swap)

    def __call__(self, out: Any, b0: int, bn: int) -> None:
        d = self.data
        if self.direct:  # copied on the device from a graph's intermediate, else through the staging buffer
            fill(self.gpu, out, d.source, [(b0 * d.bits // 8, 0, (bn * d.bits + 7) // 8)], self.staging)
            return
        self.windows.run_each(self.kernel.run, [(out, b0, bn)])


def scatter_banded(gpu: Gpu, bufs: Buffers, data: Data, upd: Any, norm: Any, table: Table, reduce: Reduce,
                   op: str, max_dim: int, sink: Sink, cap: int) -> int:
    """gpu/scatter.scatter_indexed's work, band by band (see the module), the
    updates already in ``upd`` (None: there are none); returns the bytes written."""
    n = table.size
    band = band_elements(data.bits, cap)
    bands = [(b0, min(band, data.size - b0)) for b0 in range(0, data.size, band)]
    out = bufs.result("scatter band", (band * data.bits + 7) // 8)
    fill = Fill(gpu, bufs, data, max_dim, band)
    targets = targets_of(bufs, upd, norm, table, max_dim) if n else None

    def band_rounds(b: tuple[int, int]) -> None:
        sub = bufs.child()  # a band's claims and lists, freed before the next band's
        try:
            rounds(gpu, sub, out, upd, targets, data, n, reduce, op, max_dim, band=b)
        finally:
            sub.release()

    if n and reduce.kind == "none":  # two updates of one element: refused before any band is written
        for b in bands:
            band_rounds(b)
    written = 0
    for b0, bn in bands:
        fill(out, b0, bn)
        if n:
            band_rounds((b0, bn))
        written += to_sink(gpu, bufs, out, (bn * data.bits + 7) // 8, sink)
    return written

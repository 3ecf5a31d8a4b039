"""Every answer a schedule question (gpu/choose.py) may give is exact: each
candidate, forced in turn, writes the same bytes as numpy, over a few shapes
and dtypes drawn from the ``rng`` fixture, on every adapter; and the
measurement itself refuses a candidate that writes a wrong byte."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.tensor import swap_unit
from onnxop_cli.core.region import Access
from onnxop_cli.errors import GpuError
from onnxop_cli.gpu import choose, gather_through_kernel, indexed_buffers, indexed_variants
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

TRANSPOSE_DTYPES = ["<f4", "<i8", ">f4", "<c8", "<u2"]  # 4, 8, 16-byte elements, big-endian; 2-byte: no question
ND_DTYPES = [("<f4", ()), ("<f8", ()), ("u1", (4,)), ("<i4", (2,))]  # slices of one and two words


def forced(monkeypatch, question: str, answer: str) -> None:
    monkeypatch.setenv(choose.ENV_SCHEDULE, f"{question}={answer}")


def _gathered(gpu, x, i, check, table, swap: int = 0, **kw) -> bytes:
    """The indexed gather of ``x`` by int64 ``i`` (``kw``: gather_indexed's), unwritten bytes poisoned."""
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, x.dtype.itemsize * 8, swap),
                      ix.Index(MemoryBytes(i), i.shape, True, False), check, table, out.extend, poison=0xA5, **kw)
    return bytes(out)


def test_every_transpose_answer_writes_the_same_bytes(gpu, rng, monkeypatch):
    monkeypatch.delenv("ONNXOP_GATHER", raising=False)
    for k in range(5):  # the first a case every kernel takes whole (20 blocks along a), then
        rank = int(rng.integers(2, 5))  # drawn ones
        shape = tuple(int(d) for d in rng.integers(1, 40, rank)) if k else (36, 80)
        perm = tuple(int(p) for p in rng.permutation(rank)) if k else (1, 0)
        dtype = np.dtype(TRANSPOSE_DTYPES[int(rng.integers(len(TRANSPOSE_DTYPES)))] if k else "<f4")
        a = random_array(rng, shape, dtype.newbyteorder("<")).astype(dtype)
        t = a.transpose(perm)
        want = np.ascontiguousarray(t).astype(dtype.newbyteorder("<")).tobytes()
        view = Access(t.shape, tuple(s // dtype.itemsize for s in t.strides))
        for answer in choose.QUESTIONS["transpose"].candidates:
            forced(monkeypatch, "transpose", answer)
            out = bytearray()
            gather_through_kernel(gpu, MemoryBytes(a), out.extend, view=view, bits=dtype.itemsize * 8,
                                  swap=swap_unit(dtype), poison=0xA5)
            assert bytes(out) == want, (answer, shape, perm, dtype)
            counts = gpu.cache["gather-last"]
            assert k or counts["blocked"] == (0 if answer == "generic" else counts["dispatches"]), answer


def test_every_nd_run_answer_writes_the_same_bytes(gpu, rng, monkeypatch):
    monkeypatch.setattr(indexed_variants, "LONG_ROW", 40)  # rows of 40 or more slices ask: small tensors take long runs
    runs = {"long": 64, "short": 16}
    for _ in range(3):
        dtype, tail = ND_DTYPES[int(rng.integers(len(ND_DTYPES)))]
        data = tuple(int(d) for d in rng.integers(2, 20, 2))
        lead = (int(rng.integers(1, 5)), int(rng.integers(40, 300)))
        x = random_array(rng, data + tail, dtype)
        i = np.stack([rng.integers(-d, d, lead) for d in data], axis=-1).astype("<i8")
        want = np.ascontiguousarray(x[i[..., 0], i[..., 1]]).tobytes()
        table, check = indexing.gather_nd("GatherND", x.shape, i.shape, 0)
        for answer, run in runs.items():
            forced(monkeypatch, "nd_run", answer)
            out = _gathered(gpu, x, i, check, table)
            assert gpu.cache[ix.LAST]["nd run"] == run and out == want, (answer, dtype, tail, data, lead)


def test_every_gather_source_answer_writes_the_same_bytes(gpu, rng, monkeypatch):
    """Gather of rows from a source of many small windows: streamed in passes
    (the answer where device memory is the process's own) or resident."""
    passes: list = []  # each gather's pass bytes: None where the source stayed resident
    real = indexed_buffers._pass_bytes
    monkeypatch.setattr(indexed_buffers, "_pass_bytes", lambda *a: passes.append(real(*a)) or passes[-1])
    for _ in range(2):
        dtype = ["<f4", "u1", "<f8", ">i4"][int(rng.integers(4))]
        x = random_array(rng, (int(rng.integers(150, 300)), int(rng.integers(4, 9))), dtype)  # windows of 128 elements
        i = rng.integers(-x.shape[0], x.shape[0], int(rng.integers(20, x.shape[0]))).astype("<i8")
        want = np.ascontiguousarray(x[i]).astype(x.dtype.newbyteorder("<")).tobytes()
        table, check = indexing.gather("Gather", x.shape, i.shape, 0)
        swap = x.dtype.itemsize if x.dtype.byteorder == ">" else 0
        for answer in choose.QUESTIONS["gather_source"].candidates:
            forced(monkeypatch, "gather_source", answer)
            first = len(passes)  # this gather's pass: a question it asks may run gathers of its own
            out = _gathered(gpu, x, i, check, table, swap, window_bytes=64)
            assert out == want and (passes[first] is not None) == (answer == "streamed"), (answer, dtype)


@pytest.mark.parametrize("name", ["transpose", "nd_run", "select", "one_hot", "scatter_lines", "elementwise",
                                  "lines_wg"])  # gather_source: a fact
def test_a_wrong_byte_fails_the_measurement(gpu, monkeypatch, name):
    """The measurement checks each candidate's output byte for byte (and that
    it took the work) before timing it: one wrong byte is a GpuError, never
    an answer."""
    from onnxop_cli.gpu import schedule_cases

    question = choose.QUESTIONS[name]
    real = schedule_cases.case

    def broken(gpu, asked):
        case = real(gpu, asked)
        wrong = bytearray(case.expected)
        wrong[len(wrong) // 2] ^= 1
        return schedule_cases.Case(case.run, bytes(wrong), case.nbytes, case.time, case.close)

    monkeypatch.setattr(schedule_cases, "case", broken)
    with pytest.raises(GpuError, match=f"schedule {name}={question.candidates[0]}: wrong bytes"):
        choose._measure(gpu, question)


# the widths each whole-word body takes (ONNX's Where and OneHot take no 4-bit type): 8 and 16 bits (small),
# 32 (wide, and Where's rows), 128 (complex128, four words an element)
WORD_DTYPES = [np.bool_, np.float16, np.float32, np.complex128]
# Where's condition, X and Y shapes: full, X a row broadcast along leading axes (rows when 32-bit), the
# condition a trailing run, Y a scalar
WHERE_SHAPES = [((3, 40), (3, 40), (3, 40)), ((5, 48), (48,), (5, 48)), ((6, 1), (6, 33), ())]


def test_every_select_answer_matches_the_reference(backend, gpu, rng, monkeypatch):
    from onnxop_cli import where
    from tensor_refs import reference

    for answer in choose.QUESTIONS["select"].candidates:
        forced(monkeypatch, "select", answer)
        for dtype in WORD_DTYPES:
            for cs, xs, ys in WHERE_SHAPES:
                c = rng.integers(0, 2, cs).astype(bool)
                x, y = random_array(rng, xs, dtype), random_array(rng, ys, dtype)
                got = where(c, x, y, backend=backend)
                want = reference("Where", 16, [c, x, y])[0]
                assert got.tobytes() == want.tobytes() and got.shape == want.shape, (answer, dtype, cs, xs, ys)
                assert gpu.cache["select-last"]["schedule"].wg == int(answer.split("x")[0]), answer


def test_every_one_hot_answer_matches_the_reference(backend, gpu, rng, monkeypatch):
    from onnxop_cli import one_hot
    from tensor_refs import reference

    for answer in choose.QUESTIONS["one_hot"].candidates:
        forced(monkeypatch, "one_hot", answer)
        for dtype in (np.int8, np.int16, np.int32, np.complex128):
            values = random_array(rng, (2,), dtype) if dtype == np.complex128 else rng.integers(1, 100, 2).astype(dtype)
            for shape, depth, axis in (((7,), 40, -1), ((3, 21), 5, 1), ((2, 9), 3, 0)):
                i = rng.integers(-depth, depth, shape).astype(np.int64)
                got = one_hot(i, depth=np.array(depth, np.int64), values=values, axis=axis, backend=backend)
                hot = np.moveaxis(np.arange(depth) == (i % depth)[..., None], -1, axis)
                want = np.where(hot, values[1], values[0])  # the reference's off + hot * (on - off): for integers
                if dtype != np.complex128:
                    want = reference("OneHot", 11, [i, np.array(depth, np.int64), values], {"axis": axis})[0]
                assert got.tobytes() == want.tobytes() and got.shape == want.shape, (answer, dtype, shape, axis)
                assert gpu.cache["one-hot-last"]["schedule"].wg == int(answer.split("x")[0]), answer


@pytest.mark.parametrize("name", ["select", "one_hot"])
def test_the_rendered_candidates_key_the_cached_answer(gpu, monkeypatch, name):
    """No .wgsl file holds these kernels: the cache key digests every
    candidate's rendered text, so an edited render measures again."""
    from onnxop_cli.gpu import word_kernels

    question = choose.QUESTIONS[name]
    before = question.key(gpu)
    assert question.key(gpu) == before
    cls = word_kernels.KERNELS[name]
    edited = type("Edited", (cls,), {"NAME": f"{cls.NAME} edited"})  # every text's first line names the kernel
    monkeypatch.setitem(word_kernels.KERNELS, name, edited)
    assert question.key(gpu) != before


GATHER_WORDS_DTYPES = [("<f4", (3,)), ("u1", (12,)), ("<i8", (3,)), ("<u2", (5, 2))]  # 3, 3, 6 and 5 words


def test_every_gather_words_answer_writes_the_same_bytes(gpu, rng, monkeypatch):
    """Gather of whole-word slices that are not whole vectors: the indexed gather
    (elements) and indexed_slices.wgsl (slices) write the same bytes, int64
    indices some negative; each answer's kernel took the work."""
    for _ in range(3):
        dtype, tail = GATHER_WORDS_DTYPES[int(rng.integers(len(GATHER_WORDS_DTYPES)))]
        n, lead = int(rng.integers(2, 40)), tuple(int(d) for d in rng.integers(1, 30, 2))
        x = random_array(rng, (n,) + tail, dtype)
        i = rng.integers(-n, n, lead).astype("<i8")
        want = np.ascontiguousarray(x[i]).tobytes()
        table, check = indexing.gather("Gather", x.shape, i.shape, 0)
        for answer in choose.QUESTIONS["gather_words"].candidates:
            forced(monkeypatch, "gather_words", answer)
            assert _gathered(gpu, x, i, check, table) == want, (answer, dtype, tail, n, lead)
            assert bool(gpu.cache[ix.LAST].get("slices")) == (answer == "slices"), answer


def test_the_gather_words_answer_is_keyed_by_the_rendered_gather(gpu, monkeypatch):
    """The element candidate has no .wgsl file: its rendered text keys the cached answer."""
    from onnxop_cli.gpu.render import indexed as rendered

    question = choose.QUESTIONS["gather_words"]
    before = question.key(gpu)
    monkeypatch.setattr(rendered, "_BODY", rendered._BODY + "// edited\n")
    rendered.Frame.wgsl.cache_clear()  # each render is kept once made
    try:
        assert question.key(gpu) != before
    finally:
        monkeypatch.undo()
        rendered.Frame.wgsl.cache_clear()
    assert question.key(gpu) == before


# (operator, opset, input dtypes, input shapes, attributes): packed sub-word output, 32 and 64 bits, a broadcast
# input, a 64-bit division; sizes past one workgroup of every candidate, none a multiple of one
ELEMENTWISE_CASES = [
    ("Add", 14, (np.int8, np.int8), ((3, 700), (700,)), {}),
    ("Add", 14, (np.int32, np.int32), ((2101,), (2101,)), {}),
    ("Div", 14, (np.int64, np.int64), ((5, 333), (5, 1)), {}),
    ("Equal", 13, (np.uint16, np.uint16), ((1, 1500), (4, 1)), {}),
    ("Cast", 21, (np.uint8,), ((2999,),), {"to": 5}),  # int16
]


def test_every_elementwise_answer_matches_the_reference(backend, gpu, rng, monkeypatch):
    """The elementwise kernel on each workgroup writes onnx.reference's bytes; each answer's workgroup ran."""
    import onnxop_cli
    from onnxop_cli.gpu.elementwise import LAST
    from tensor_refs import reference

    for answer in choose.QUESTIONS["elementwise"].candidates:
        forced(monkeypatch, "elementwise", answer)
        for op, opset, dtypes, shapes, attrs in ELEMENTWISE_CASES:
            args = [random_array(rng, shape, dtype) for dtype, shape in zip(dtypes, shapes)]
            if op == "Div":
                args[1][args[1] == 0] = 3  # no zero divisor: that is an error, not a value
            want = reference(op, opset, args, attrs)[0]
            function = getattr(onnxop_cli, op.lower())
            got = function(*args, backend=backend, **({"to": np.int16} if op == "Cast" else {}))
            assert got.tobytes() == want.tobytes() and got.shape == want.shape, (answer, op, dtypes, shapes)
            assert gpu.cache[LAST]["wg"] == int(answer), answer


# ScatterElements (data shape, indices/updates shape, axis, reduction, dtype): the widths the scatter kernels
# apply differently (8 and 16 bits in their words, 32, 64), many updates an element so that the order shows;
# updates and lines (300, 301) past one workgroup of every candidate, none a multiple of one
SCATTER_CASES = [
    ((300, 40), (300, 90), 1, "add", np.float32),
    ((50, 700), (60, 300), 0, "mul", np.int8),
    ((301, 21), (301, 30), 1, "max", np.float16),  # rows of an odd length: lines that share words
    ((300, 2), (300, 7), 1, "min", np.int64),
]


def scatter_elements(gpu, x, i, u, axis, reduction, **kw) -> tuple[bytes, bytes]:
    """The device's bytes and onnx.reference's."""
    from onnxop_cli.gpu import scatter as sc
    from tensor_refs import reference

    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, axis)
    out = bytearray()
    cls = {"u": 0, "i": 1, "f": 2, "b": 3}[x.dtype.kind]
    sc.scatter_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, x.itemsize * 8), ix.Data(MemoryBytes(u), u.shape,
                       u.itemsize * 8), ix.Index(MemoryBytes(i), i.shape, True, False), check, table,
                       sc.Reduce(reduction, cls, False), out.extend, **kw)
    with np.errstate(all="ignore"):
        want = reference("ScatterElements", 18, [x, i, u], {"axis": axis, "reduction": reduction})[0]
    return bytes(out), want.tobytes()


def scatter_inputs(rng, data, updates, axis, reduction, dtype):
    x, u = random_array(rng, data, dtype), random_array(rng, updates, dtype)
    if reduction == "none":  # distinct targets along the axis
        i = np.argsort(rng.random(updates), axis=axis).astype("<i8")
    else:
        i = rng.integers(-data[axis], data[axis], updates).astype("<i8")
    return x, i, u


def test_every_lines_wg_answer_matches_the_reference(gpu, rng, monkeypatch):
    """The scatter line kernel on each workgroup writes onnx.reference's bytes (words of one writer, and the
    shared 8- and 16-bit lines); each answer's workgroup ran."""
    for data, updates, axis, reduction, dtype in SCATTER_CASES:
        x, i, u = scatter_inputs(rng, data, updates, axis, reduction, dtype)
        for answer in choose.QUESTIONS["lines_wg"].candidates:
            monkeypatch.setenv(choose.ENV_SCHEDULE, f"scatter_lines=lines,lines_wg={answer}")
            got, want = scatter_elements(gpu, x, i, u, axis, reduction)
            assert got == want, (answer, data, updates, reduction, dtype)
            assert gpu.cache[ix.LAST]["lines wg"] == int(answer), answer

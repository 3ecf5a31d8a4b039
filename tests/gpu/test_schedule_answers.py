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
from onnxop_cli.gpu import choose, gather_through_kernel, indexed_buffers
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

TRANSPOSE_DTYPES = ["<f4", "<i8", ">f4", "<c8", "<u2"]  # 4, 8, 16-byte elements, big-endian; 2-byte: no question


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


@pytest.mark.parametrize("name", ["transpose", "scatter_lines"])  # gather_source: a fact
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

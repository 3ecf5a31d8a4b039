"""The ``pieces_min_row`` question (gpu/choose.py, gpu/piece_records.py): rows
of piece_records.MIN_ROW_BYTES up to piece_records.SHORT_ROW_BYTES run by runs
where the answer is 64 and keep the general kernel where it is 128, each
writing the same bytes as numpy; longer rows run by runs whatever the answer;
the question is asked only when such a short row is met; and its case
(gpu/schedule_cases.py) is exact and names the kernel that took it."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.pieces import Piece
from onnxop_cli.core.region import Access, Load
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import choose, piece_records, pieces, schedule_cases


def concat(gpu, arrays) -> tuple[bytes, dict]:
    """Concatenate ``arrays`` (2-D, one dtype) along axis 1 by pieces: the bytes and the kernels that ran."""
    rows, widths = arrays[0].shape[0], [a.shape[1] for a in arrays]
    total, at, parts = sum(widths), 0, []
    for k, (a, n) in enumerate(zip(arrays, widths)):
        parts.append(Piece((rows, n), (total, 1), at, Load(k, Access.row_major((rows, n)))))
        at += n
    out, kept = bytearray(), pieces.Runs()
    try:
        pieces.run_pieces(gpu, [pieces.Source(MemoryBytes(a)) for a in arrays], out.extend, pieces=parts,
                          count=rows * total, bits=arrays[0].dtype.itemsize * 8, reuse=kept)
        (run,) = kept.kept.values()
        return bytes(out), {k: run.taken[k] for k in ("runs", "general")}
    finally:
        kept.release()


@pytest.mark.parametrize("dtype", ["<f4", "u1", "<i8"])
def test_each_answer_writes_the_same_bytes_and_only_short_rows_follow_it(gpu, rng, monkeypatch, dtype):
    size = np.dtype(dtype).itemsize
    short = [random_array(rng, (9, piece_records.MIN_ROW_BYTES // size + k), dtype) for k in (0, 3)]
    long = [random_array(rng, (9, piece_records.SHORT_ROW_BYTES // size + k), dtype) for k in (0, 5)]
    for answer in choose.QUESTIONS[piece_records.QUESTION].candidates:
        monkeypatch.setenv(choose.ENV_SCHEDULE, f"{piece_records.QUESTION}={answer}")
        got, took = concat(gpu, short)
        assert got == np.concatenate(short, axis=1).tobytes(), answer
        assert took == ({"runs": 2, "general": 0} if answer == "64" else {"runs": 0, "general": 2}), answer
        got, took = concat(gpu, long)
        assert got == np.concatenate(long, axis=1).tobytes() and took == {"runs": 2, "general": 0}, answer


def test_the_question_is_asked_only_for_a_short_row(gpu, rng, monkeypatch):
    monkeypatch.delenv(choose.ENV_SCHEDULE, raising=False)
    gpu.schedules_used.pop(piece_records.QUESTION, None)
    long = [random_array(rng, (4, piece_records.SHORT_ROW_BYTES // 4), "<f4") for _ in range(2)]
    assert concat(gpu, long)[1] == {"runs": 2, "general": 0}
    assert piece_records.QUESTION not in gpu.schedules_used
    concat(gpu, [random_array(rng, (4, piece_records.MIN_ROW_BYTES // 4), "<f4") for _ in range(2)])
    assert piece_records.QUESTION in gpu.schedules_used


def test_the_case_is_exact_and_names_the_kernel_that_took_it(gpu, monkeypatch):
    case = schedule_cases.pieces_min_row(gpu)
    try:
        for answer in choose.QUESTIONS[piece_records.QUESTION].candidates:
            monkeypatch.setenv(choose.ENV_SCHEDULE, f"{piece_records.QUESTION}={answer}")
            assert case.run() == (case.expected, answer)
            assert case.time() > 0
    finally:
        case.close()

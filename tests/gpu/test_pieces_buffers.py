"""The buffers one pieces run makes (gpu/pieces.py's ``Run``): a mapped
run (CPU adapters, host sources and sinks) stages nothing -- no upload
buffer, shared or not -- and a staged run makes one upload buffer per
window, or the one shared one it is given."""

from __future__ import annotations

import pytest

from onnxop_cli.gpu import pieces
from onnxop_cli.gpu.buffers import can_map


def made(run) -> int:
    """The buffers ``run`` made (src, mask, other, dst, params, axes; a staged run's readback and uploads)."""
    try:
        return len(run.buffers)
    finally:
        run.release()


def test_a_mapped_run_makes_no_upload_buffer_even_when_given_a_shared_size(gpu):
    if not can_map(gpu):
        pytest.skip("this adapter maps no storage buffer: its runs stage")
    run = pieces.Run(gpu, 4096, (1024,) * 3, None, shared_upload=2048, mapped=True)
    assert run.upload is run.upload_mask is run.upload_other is None
    assert made(run) == 6


def test_a_staged_run_makes_its_uploads_or_the_shared_one(gpu):
    run = pieces.Run(gpu, 4096, (1024,) * 3, None)
    assert len({id(run.upload), id(run.upload_mask), id(run.upload_other)}) == 3 and made(run) == 10
    run = pieces.Run(gpu, 4096, (1024,) * 3, None, shared_upload=2048)
    assert run.upload is run.upload_mask is run.upload_other
    assert made(run) == 8

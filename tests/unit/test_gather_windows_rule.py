"""When a gather's source streams (gpu/indexed_buffers.py's rule): where the
device's memory is the process's own (choose.py's ``gather_source`` answers
"streamed", as it does on CPU adapters), a source of more than two windows,
an output no larger than the source; the passes then halves of the source,
so at most two. Elsewhere it stays resident, and a source too small to
stream asks nothing. (tests/gpu/test_gather_streamed.py runs the streamed
path; tests/process/test_schedules.py the question's measurement.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from onnxop_cli.gpu import choose
from onnxop_cli.gpu import indexed_buffers as gw

MIB = 1 << 20
WINDOW = 128 * MIB


def adapter(kind: str, monkeypatch) -> SimpleNamespace:
    """A stand-in adapter whose ``gather_source`` answer is forced: "streamed" for a CPU adapter."""
    monkeypatch.setenv(choose.ENV_SCHEDULE, f"gather_source={'streamed' if kind == 'CPU' else 'resident'}")
    return SimpleNamespace(schedules_used={})


@pytest.mark.parametrize(
    "kind, source, out, passes",
    [
        ("CPU", 1024 * MIB, 1024 * MIB, 2),  # a permutation of a 1 GiB source's rows
        ("CPU", 1024 * MIB, 64 * MIB, 1),  # a few rows of it: one pass, every window once
        ("CPU", 1024 * MIB, 513 * MIB, 2),
        ("CPU", 1024 * MIB, 1025 * MIB, None),  # more than two passes' worth: resident
        ("CPU", 256 * MIB, 256 * MIB, None),  # two windows: resident
        ("CPU", 257 * MIB, 64 * MIB, 1),
        ("DiscreteGPU", 1024 * MIB, 1024 * MIB, None),  # the device's own memory: resident
        ("IntegratedGPU", 1024 * MIB, 1024 * MIB, None),
    ],
)
def test_rule(kind, source, out, passes, monkeypatch):
    got = gw._pass_bytes(adapter(kind, monkeypatch), source, WINDOW, out)
    if passes is None:
        assert got is None
    else:
        assert got is not None and got >= source // 2 and -(-out // got) == passes


def test_a_source_too_small_to_stream_asks_nothing():
    """object() cannot answer a question: the sizes decide before one is asked."""
    assert gw._pass_bytes(object(), 2 * WINDOW, WINDOW, 64 * MIB) is None
    assert gw._pass_bytes(object(), 1024 * MIB, WINDOW, 1025 * MIB) is None

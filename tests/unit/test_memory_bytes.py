"""core.sources.MemoryBytes counts the bytes it is given, whatever holds them."""

from __future__ import annotations

import numpy as np
import pytest

from onnxop_cli.core.sources import MemoryBytes


@pytest.mark.parametrize("make", [bytes, bytearray, lambda b: memoryview(bytes(b))], ids=["bytes", "bytearray", "memoryview"])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_raw_bytes_are_their_length(make, n):
    raw = bytes(range(1, n + 1))
    m = MemoryBytes(make(raw))
    assert m.nbytes == n and m.to_array().tobytes() == raw


def test_an_array_is_its_bytes():
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    assert MemoryBytes(a).to_array().tobytes() == a.tobytes()
    assert MemoryBytes(np.empty(0, np.float32)).nbytes == 0

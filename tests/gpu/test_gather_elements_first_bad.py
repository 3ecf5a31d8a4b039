"""GatherElements' runs (the indexed kernel's rows): the index check folded into the kernel names the
first of many bad indices and writes nothing; fixed, the bytes are numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing
from onnxop_cli.core.tensor import MemoryBytes


def test_elements_first_of_many_bad(gpu, rng):
    """GatherElements' runs: bad indices in one invocation's run and in later
    ones; the first position is named, nothing written; fixed, the bytes of
    numpy's take_along_axis (onnx.reference's GatherElements fails on this
    numpy for 70 columns)."""
    x = random_array(rng, (9, 70), "<f4")
    i = rng.integers(-70, 70, x.shape).astype(np.int64)
    i[2, 35], i[2, 33], i[2, 47], i[7, 3] = 70, 2**32 + 1, -71, 2**32
    table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check, table, got.append)
    assert not got and gpu.cache[ix.LAST].get("rows") == 1
    assert e.value.position == (2, 33) and e.value.value == 2**32 + 1
    i[2, 33], i[2, 35], i[2, 47], i[7, 3] = 5, -70, 69, 0
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check, table, out.extend)
    assert gpu.cache[ix.LAST].get("rows") == 1
    assert bytes(out) == np.take_along_axis(x, np.where(i < 0, i + 70, i), axis=1).tobytes()

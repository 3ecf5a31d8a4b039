"""A result only printed as a summary (print mode, --json)
is not made whole: only the elements shown go through the gather kernel
(core/summary.py), and the text is the same as for the whole result. The
huge case runs as a real process with $TMPDIR on a 1 MiB tmpfs."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.shown_values import edge_view
from onnxop_cli.core.summary import summarised_result
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.core.region import Access
from onnxop_cli.ops import make_node
from onnxop_cli.render.values import EDGE_ITEMS, format_values

CASES = [
    # (op, attributes, input shape, numpy reference)
    ("Expand", {"shape": [9, 1, 5, 8]}, (3, 1, 8), lambda a: np.broadcast_to(a, (9, 3, 5, 8))),
    ("Transpose", {"perm": [2, 0, 1]}, (7, 9, 11), lambda a: a.transpose(2, 0, 1)),
    ("Slice", {"starts": [1, 70], "ends": [8, 2], "axes": [0, 1], "steps": [1, -3]}, (9, 80),
     lambda a: a[1:8, 70:2:-3]),
    ("Flatten", {"axis": 1}, (4, 5, 6), lambda a: a.reshape(4, 30)),
    ("Reshape", {"shape": [10, 12]}, (4, 5, 6), lambda a: a.reshape(10, 12)),
    ("Identity", {}, (7, 17), lambda a: a),
    ("Tile", {"repeats": [2, 3]}, (4, 5), lambda a: np.tile(a, (2, 3))),
    ("Unsqueeze", {"axes": [0]}, (200,), lambda a: a[None]),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "float64", "bool"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.one_backend  # the summary (core/summary.py) is tested; the gather kernel fans out in test_gather.py
def test_the_summary_text_is_the_whole_results(gpu, backend, rng, case, dtype):
    op, attrs, shape, reference = case
    a = random_array(rng, shape, dtype)
    node = make_node(op, **attrs)
    tensor = Tensor.from_numpy(a, "x")
    found = summarised_result(node, tensor, edge=EDGE_ITEMS, threshold=0, backend=backend)
    assert found is not None  # Tile too: its pieces are cut to the shown entries (core/shown.py)
    result = found
    ((values, _),) = result.shown
    expect = np.ascontiguousarray(reference(a))
    assert result.output.shape == expect.shape and result.output.data is None
    assert expect.size > 100  # summarised: the only case the caller (a result of 64 MiB or more) meets
    assert format_values(values, summarised=True) == format_values(expect)


def test_only_the_edges_are_gathered():
    view, shape = edge_view(Access((1048576, 1048576, 2, 3), (0, 0, 3, 1)), 3)
    assert view.size == 8 * 8 * 2 * 3 and shape == (8, 8, 2, 3)


def test_a_24_tib_result_is_printed_without_touching_tmpdir(tmp_path, rng):
    """`expand x.npy --shape 1048576,1048576,2,3`: print mode and --json end at
    once, $TMPDIR a 1 MiB tmpfs stays empty."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(tmp)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        a = random_array(rng, (2, 3), "float32")
        np.save(tmp_path / "x.npy", a)
        env = {**os.environ, "ONNXOP_BACKEND": "vulkan", "TMPDIR": str(tmp)}
        argv = [sys.executable, "-m", "onnxop_cli", "expand", "x.npy", "--shape", "1048576,1048576,2,3"]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        expect = format_values(np.broadcast_to(a, (8, 8, 2, 3)), summarised=True)
        assert "output: shape=(1048576, 1048576, 2, 3), dtype=float32" in done.stdout
        assert "\n".join(line[4:] for line in done.stdout.split("output: shape=")[1].splitlines()[1:]) == expect
        done = subprocess.run([*argv, "--json"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert '"shape": [1048576, 1048576, 2, 3]' in done.stdout.replace("\n", "").replace("  ", "") or \
            "1048576" in done.stdout
        assert os.listdir(tmp) == []
    finally:
        subprocess.run(["umount", str(tmp)], capture_output=True)

"""docs/backend.md's examples, and onnx's runner on onnxop_cli.backend as a user runs it: pytest in a
process of its own on the page's file.

Over a mix of node tests onnxop runs and does not, the runner reports passes and skips that name
onnxop's reason, never a failure; the ``_cuda`` cases are skipped (the device is the CPU's WebGPU
adapter); and an output one ulp off fails the page's exact comparison where onnx's ``allclose``
passes it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from test_readme import PYTHON, REPO

# The page's examples and the runner are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

PAGE = (REPO / "docs" / "backend.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, re.S)
RECIPE = BLOCKS[0]
INCLUDE = 'tests.include(r"^test_(transpose|reshape|slice|flatten|unsqueeze)_")'
# Node tests onnxop runs (a view, a family operator at a negative axis) and does not (another
# operator, a sequence, an optional), and a model test (onnx's pytorch-converted GLU: Sigmoid, Mul)
MIX = ("transpose_default", "split_equal_parts_1d_opset13", "concat_1d_axis_negative_1", "relu",
       "add_bcast", "sequence_insert_at_back", "optional_get_element_tensor", "GLU")


def pytest_file(tmp_path: Path, code: str, backend: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_onnxop_backend.py").write_text(code)
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    return subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-W", "ignore", "test_onnxop_backend.py",
         *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)


def counts(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", last)}


def test_the_page_s_recipe_runs_onnx_s_runner(tmp_path, backend):
    assert INCLUDE in RECIPE and len([line for line in RECIPE.splitlines() if line.strip()]) == 4
    done = pytest_file(tmp_path, RECIPE, backend,
                       "-k", "test_transpose_default_cpu or test_reshape_reduced_dims_cpu or test_flatten_axis0_cuda")
    assert done.returncode == 0, done.stdout[-3000:]
    assert counts(done.stdout) == {"passed": 2, "skipped": 1}, done.stdout[-3000:]
    assert "Backend doesn't support device CUDA" in done.stdout


def test_what_onnxop_does_not_run_is_skipped_with_its_reason(tmp_path, backend):
    code = RECIPE.replace(INCLUDE, f'tests.include(r"^test_({"|".join(MIX)})_(cpu|cuda)$")')
    done = pytest_file(tmp_path, code, backend)
    assert done.returncode == 0, done.stdout[-3000:]
    run = {"passed": 3}  # transpose, split, concat on the CPU device
    skipped = (len(MIX) - 1) * 2 + 2 - 3  # each node test twice (cpu, cuda), GLU twice, less the passes
    assert {k: v for k, v in counts(done.stdout).items() if k != "skipped"} == run, done.stdout[-3000:]
    reasons = re.findall(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$", done.stdout, re.M)
    said: dict[str, int] = {}
    for n, reason in reasons:  # one line per place in onnx's runner that skips
        said[reason] = said.get(reason, 0) + int(n)
    assert sum(said.values()) - said.get("no matched include pattern", 0) == skipped, said
    assert said["Backend doesn't support device CUDA"] == len(MIX), said  # 7 node tests and GLU
    assert any(r.endswith("1 node(s) onnxop does not run: Relu x1") for r in said), said
    assert any(r.endswith("1 node(s) onnxop does not run: SequenceInsert x1") for r in said), said
    assert "Not compatible with backend" in said, said  # the model test: the runner's is_compatible


def test_one_ulp_off_fails_the_page_s_comparison_and_passes_onnx_s(tmp_path, backend):
    """A backend one ulp off in one element: the page's ExactBackendTest fails it, onnx's BackendTest
    (allclose) passes it."""
    (tmp_path / "flipped.py").write_text('''
import numpy as np
import onnxop_cli.backend as real


class Rep:
    def __init__(self, rep):
        self.rep = rep

    def run(self, inputs, **kwargs):
        out = list(self.rep.run(inputs))
        out[0] = out[0].copy()
        out[0].reshape(-1)[0] = np.nextafter(out[0].reshape(-1)[0], np.float32(np.inf))
        return out


def prepare(model, device="CPU", **kwargs):
    return Rep(real.prepare(model, device, **kwargs))


is_compatible, supports_device = real.is_compatible, real.supports_device
''')
    exact = RECIPE.replace("(onnxop_cli.backend, __name__)", "(flipped, __name__)").replace(
        "import onnxop_cli.backend\n", "import onnxop_cli.backend\nimport flipped\n")
    plain = exact.replace("onnxop_cli.backend.ExactBackendTest", "onnx.backend.test.BackendTest").replace(
        "import flipped\n", "import flipped\nimport onnx.backend.test\n")
    # both files in one pytest process (onnx makes its node tests once per process)
    (tmp_path / "test_plain_allclose.py").write_text(plain)
    done = pytest_file(tmp_path, exact, backend, "test_plain_allclose.py", "-rfE",
                       "-k", "test_transpose_all_permutations_1_cpu")
    assert done.returncode == 1 and counts(done.stdout) == {"failed": 1, "passed": 1}, done.stdout[-3000:]
    assert "1 of 24 elements differ in their bits; first at flat index 0" in done.stdout, done.stdout[-3000:]
    failed = re.findall(r"^FAILED (\S+?)::", done.stdout, re.M)
    assert failed == ["test_onnxop_backend.py"], done.stdout[-3000:]  # the exact one; onnx's allclose passed


@pytest.mark.parametrize("index", range(1, len(BLOCKS)))
def test_the_page_s_other_examples_run(tmp_path, backend, index):
    (tmp_path / "example.py").write_text(BLOCKS[index])
    done = subprocess.run([PYTHON, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "ONNXOP_BACKEND": backend}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_every_example_of_the_page_is_found():
    assert len(BLOCKS) == 2

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
import sys
from xml.etree import ElementTree

import pytest

from commands import run_script
from test_readme import PYTHON, REPO

# The page's examples and the runner are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

PAGE = (REPO / "docs" / "backend.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, re.S)
RECIPE = BLOCKS[0]
INCLUDE = 'tests.include(r"^test_(transpose|reshape|slice|flatten|unsqueeze)_")'
# Node tests onnxop runs (a view, a tensor operator at a negative axis) and does not (another
# operator, a sequence, an optional), and a model test (onnx's pytorch-converted GLU: Sigmoid, Mul)
MIX = ("transpose_default", "split_equal_parts_1d_opset13", "concat_1d_axis_negative_1", "relu",
       "add_bcast", "sequence_insert_at_back", "optional_get_element_tensor", "GLU")


FLIPPED = '''
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
'''
# onnx's runner makes every node test it ships when it starts (each module of onnx.backend.test.case.node
# computes its expected outputs: about 10 CPU s, Pool's the most), and it collects them all, then -k or
# the include pattern leaves out all but a few. What is under test is how the runner reports onnxop's
# answers on the cases it runs, so its process makes only the modules of the node tests the files run
# (a conftest.py beside them, which the runner's pytest loads first); the model tests (GLU) are onnx's
# files on disk, listed as before.
NODE_MODULES = ("transpose", "reshape", "flatten", "split", "concat", "relu", "add", "sequenceinsert",
                "optionalgetelement")
ONLY_THESE_NODE_TESTS = f'''
import importlib

import onnx.backend.test.case.node as node
import onnx.backend.test.loader as loader


def load_node_model_tests():
    for name in {NODE_MODULES!r}:
        importlib.import_module("onnx.backend.test.case.node." + name)
    return node._NodeTestCases


loader.load_node_model_tests = load_node_model_tests
'''
# The runner's files, each with the node tests it runs (-k); named so that no onnx test name holds them
RECIPE_K = "test_transpose_default_cpu or test_reshape_reduced_dims_cpu or test_flatten_axis0_cuda"
ULP_K = "test_transpose_all_permutations_1_cpu"
FILES = {"page_recipe": RECIPE_K, "page_mixed": None, "page_exact_flipped": ULP_K, "onnx_allclose_flipped": ULP_K}


def only(code: str, pattern: str) -> str:
    """A runner file that keeps, of the test classes the recipe put in its globals, the tests
    whose names match ``pattern``."""
    return code + (
        "\nimport re as _re\n"
        "for _case in [v for k, v in list(globals().items()) if k.startswith('OnnxBackend')]:\n"
        f"    for _name in [n for n in vars(_case) if n.startswith('test_') and not _re.search(r'{pattern}', n)]:\n"
        "        delattr(_case, _name)\n")


@pytest.fixture(scope="module")
def runner(tmp_path_factory, backend) -> tuple[subprocess.CompletedProcess, dict[str, list[tuple[str, str, str]]]]:
    """onnx's runner as a user runs it, pytest in a process of its own, over the page's recipe, the
    mix, and the page's exact comparison and onnx's allclose on a backend one ulp off: one file each,
    in one process (onnx makes its node tests once per process). The process, and
    each file's (test, outcome, message) from its JUnit XML report."""
    tmp_path = tmp_path_factory.mktemp("runner")
    (tmp_path / "flipped.py").write_text(FLIPPED)
    (tmp_path / "conftest.py").write_text(ONLY_THESE_NODE_TESTS)
    exact = RECIPE.replace("(onnxop_cli.backend, __name__)", "(flipped, __name__)").replace(
        "import onnxop_cli.backend\n", "import onnxop_cli.backend\nimport flipped\n")
    plain = exact.replace("onnxop_cli.backend.ExactBackendTest", "onnx.backend.test.BackendTest").replace(
        "import flipped\n", "import flipped\nimport onnx.backend.test\n")
    mixed = f'^test_({"|".join(MIX)})_(cpu|cuda)$'
    # The page's recipe runs as written; the three files made from it drop, before pytest collects
    # them, the tests that their include pattern or -k leaves out.
    codes = {"page_recipe": RECIPE,
             "page_mixed": only(RECIPE.replace(INCLUDE, f'tests.include(r"{mixed}")'), mixed),
             "page_exact_flipped": only(exact, f"^{ULP_K}$"), "onnx_allclose_flipped": only(plain, f"^{ULP_K}$")}
    for name, code in codes.items():
        (tmp_path / f"{name}.py").write_text(code)
    k = " or ".join(f"({name} and ({kk}))" if kk else name for name, kk in FILES.items())
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-W", "ignore", "--junitxml=report.xml",
         "-k", k, *(f"{name}.py" for name in FILES)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        # pytest's own plugins only: the venv's hypothesis and xdist (about 0.4 CPU s) are not under test
        env={**os.environ, "ONNXOP_BACKEND": backend, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    by_file: dict[str, list[tuple[str, str, str]]] = {name: [] for name in FILES}
    for case in ElementTree.parse(tmp_path / "report.xml").iter("testcase"):
        tags = [child for child in case if child.tag in ("skipped", "failure", "error")]
        outcome, message = (tags[0].tag, tags[0].get("message", "") + "\n" + (tags[0].text or "")) if tags else (
            "passed", "")
        by_file[case.get("classname").split(".")[0]].append((case.get("name"), outcome, message))
    return done, by_file


def counts(results: list[tuple[str, str, str]]) -> dict[str, int]:
    said: dict[str, int] = {}
    for _, outcome, _ in results:
        said[outcome] = said.get(outcome, 0) + 1
    return said


def skip_reasons(results: list[tuple[str, str, str]]) -> dict[str, int]:
    said: dict[str, int] = {}
    for _, outcome, message in results:
        if outcome == "skipped":
            reason = message.split("\n")[0]
            said[reason] = said.get(reason, 0) + 1
    return said


def test_the_runner_s_process_ran_each_file_and_failed_only_the_exact_one(runner):
    done, by_file = runner
    assert done.returncode == 1, done.stdout[-3000:]  # the one ulp off, in the page's exact comparison
    last = done.stdout.strip().splitlines()[-1]
    assert re.search(r"\b1 failed\b", last) and not re.search(r"\berrors?\b", last), done.stdout[-3000:]
    assert all(by_file.values()), {name: len(results) for name, results in by_file.items()}


def test_the_page_s_recipe_runs_onnx_s_runner(runner):
    assert INCLUDE in RECIPE and len([line for line in RECIPE.splitlines() if line.strip()]) == 4
    results = runner[1]["page_recipe"]
    assert counts(results) == {"passed": 2, "skipped": 1}, results
    assert skip_reasons(results) == {"Backend doesn't support device CUDA": 1}, results


def test_what_onnxop_does_not_run_is_skipped_with_its_reason(runner):
    results = runner[1]["page_mixed"]
    run = {"passed": 3}  # transpose, split, concat on the CPU device
    skipped = (len(MIX) - 1) * 2 + 2 - 3  # each node test twice (cpu, cuda), GLU twice, less the passes
    assert {k: v for k, v in counts(results).items() if k != "skipped"} == run, counts(results)
    said = skip_reasons(results)
    assert sum(said.values()) - said.get("no matched include pattern", 0) == skipped, said
    assert said["Backend doesn't support device CUDA"] == len(MIX), said  # 7 node tests and GLU
    assert any(r.endswith("1 node(s) onnxop does not run: Relu x1") for r in said), said
    assert any(r.endswith("1 node(s) onnxop does not run: SequenceInsert x1") for r in said), said
    assert "Not compatible with backend" in said, said  # the model test: the runner's is_compatible


def test_one_ulp_off_fails_the_page_s_comparison_and_passes_onnx_s(runner):
    """A backend one ulp off in one element: the page's ExactBackendTest fails it, onnx's BackendTest
    (allclose) passes it."""
    done, by_file = runner
    exact, plain = by_file["page_exact_flipped"], by_file["onnx_allclose_flipped"]
    assert [(name, outcome) for name, outcome, _ in exact] == [(ULP_K, "failure")], exact
    assert "1 of 24 elements differ in their bits; first at flat index 0" in exact[0][2], exact
    assert [(name, outcome) for name, outcome, _ in plain] == [(ULP_K, "passed")], plain  # onnx's allclose passed
    assert re.findall(r"^FAILED (\S+?)::", done.stdout, re.M) == ["page_exact_flipped.py"], done.stdout[-3000:]


@pytest.mark.parametrize("index", range(1, len(BLOCKS)))
def test_the_page_s_other_examples_run(tmp_path, backend, index, monkeypatch):
    """Each is a script the page shows, run as ``python example.py`` runs it, in this process
    (tests/commands.py's run_script): what it computes is under test, not a process start. With
    $ONNXOP_TEST_PYTHON (another interpreter's onnxop) it runs there."""
    (tmp_path / "example.py").write_text(BLOCKS[index])
    monkeypatch.setenv("ONNXOP_BACKEND", backend)
    monkeypatch.chdir(tmp_path)
    done = run_script(tmp_path / "example.py") if PYTHON == sys.executable else subprocess.run(
        [PYTHON, "example.py"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_every_example_of_the_page_is_found():
    assert len(BLOCKS) == 2

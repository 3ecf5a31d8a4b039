"""benchmarks/suite_cases.py's case names: backend and folder stripped, nothing else."""

from __future__ import annotations

import pytest

from conftest import load_benchmark


@pytest.mark.parametrize("node_id, name", [
    ("tests/gpu/test_x.py::test_y[vulkan]", "test_x.py::test_y"),
    ("tests/test_x.py::test_y[dawn-vulkan-3-f4]", "test_x.py::test_y[3-f4]"),
    ("tests/cli/test_x.py::test_y[runs-gl-16-tile-<c16]", "test_x.py::test_y[runs-16-tile-<c16]"),
    ("tests/test_x.py::test_y[dawn-gl]", "test_x.py::test_y"),
    ("tests/test_x.py::test_y[global-1]", "test_x.py::test_y[global-1]"),  # not a backend: kept
    ("tests/test_x.py::test_y[-1-vulkan]", "test_x.py::test_y[-1]"),
    ("tests/test_x.py::test_y", "test_x.py::test_y"),
])
def test_a_case_is_its_id_without_backend_or_folder(node_id, name):
    assert load_benchmark("suite_cases").case(node_id) == name

"""``ONNXOP_TEST_KERNEL_LOG=PATH``: every kernel a test dispatches, one line per (backend, kernel, test)
and process, appended to PATH -- to count the distinct kernels a pass runs on each backend (the matrix
passes must run every one: tests/matrix_subset.py).

A line is tab-separated: ``engine-backend`` (``dawn-gl``), the kernel (the first 16 hex digits of the
sha256 of its WGSL and binding layout), its label, the test's node id ($PYTEST_CURRENT_TEST, which the
processes a test starts inherit), ``cal`` where the dispatch was a schedule's measurement (gpu/choose.py,
measure.py, schedule_cases.py) rather than the test's own work, and the process id. Recorded at dispatch
(gpu/program.py's ``Compiled.record``), so a kernel a process compiled for an earlier test is counted for
each test that runs it. tests/conftest.py loads it in the test processes, and it puts this folder on
$PYTHONPATH for every Python process they start; without the variable it does nothing.
"""

from __future__ import annotations

import os
import sys

LOG = os.environ.get("ONNXOP_TEST_KERNEL_LOG")
PROGRAM = "onnxop_cli.gpu.program"
MEASURING = ("gpu/choose.py", "gpu/measure.py", "gpu/schedule_cases.py")


def _write(line: str) -> None:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # one write per line: processes share it
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _measuring(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.endswith(MEASURING):
            return True
        frame = frame.f_back
    return False


def patch(program) -> None:
    """Log what ``program``'s Compiled.record dispatches (the sha of the Program that compiled it)."""
    import hashlib

    if getattr(program, "_kernel_log", False):  # at start-up ($PYTHONPATH) and again by conftest: once
        return
    program._kernel_log = True
    on, record = program.Program.on, program.Compiled.record
    kernels: dict[int, tuple] = {}  # id(pipeline) -> (sha, label, pipeline: kept, so the id stays its own)
    seen: set = set()

    def logged_on(self, gpu):
        compiled = on(self, gpu)
        if id(compiled.pipeline) not in kernels:
            sha = hashlib.sha256((self.code + repr(self.kinds)).encode()).hexdigest()[:16]
            kernels[id(compiled.pipeline)] = (sha, self.shader, compiled.pipeline)
        return compiled

    def logged_record(self, compute, groups, *args, **kwargs):
        if groups:
            sha, label, _ = kernels.get(id(self.pipeline), ("?", "?", None))
            test = os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" (", 1)[0]
            backend = f"{self.gpu.engine_name}-{self.gpu.backend}"
            if (backend, sha, test) not in seen:
                seen.add((backend, sha, test))
                cal = "cal" if _measuring(sys._getframe(1)) else "-"
                _write("\t".join((backend, sha, label, test, cal, str(os.getpid()))) + "\n")
        return record(self, compute, groups, *args, **kwargs)

    program.Program.on, program.Compiled.record = logged_on, logged_record


def install() -> None:
    """Patch gpu/program.py now if it is imported, else when it is."""
    if PROGRAM in sys.modules:
        patch(sys.modules[PROGRAM])
        return
    import importlib.abc
    import importlib.util

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != PROGRAM:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            exec_module = spec.loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                patch(module)
            spec.loader.exec_module = exec_and_patch
            return spec

    sys.meta_path.insert(0, Finder())


if LOG:
    install()
    # and in the processes this one starts: Python imports ``sitecustomize`` from $PYTHONPATH at start-up
    HERE = os.path.dirname(os.path.abspath(__file__))
    PATHS = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if HERE not in PATHS:
        os.environ["PYTHONPATH"] = os.pathsep.join([HERE] + PATHS)

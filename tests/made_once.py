"""A module fixture's result made once per test run, whichever xdist worker asks first.

``--dist worksteal`` (pyproject.toml) hands a module's tests to both workers
whenever one runs dry, and a module-scoped fixture is then made in each: the
same onnxop processes run twice (a run of the README's command made
test_print_memory_chains.py's 20 huge printouts twice, 22 CPU s each). Under
``made_once`` the first worker to ask makes it, under a lock in the run's
shared temporary folder, and leaves it there pickled; the other waits for the
lock (no CPU) and reads it. Without xdist it is simply made. What it returns
must pickle (paths, arrays, CompletedProcess); files it made stay where it
made them, in the first worker's temporary folder, which lasts the run.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from typing import Callable, TypeVar

T = TypeVar("T")


def made_once(tmp_path_factory, key: str, make: Callable[[], T]) -> T:
    """``make()``'s result, made by one worker of this run (``key``: unique in the run)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make()
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's own
    made = shared / f"made-once-{key}.pickle"
    with open(shared / f"made-once-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if made.exists():
            return pickle.loads(made.read_bytes())
        value = make()
        made.write_bytes(pickle.dumps(value))
        return value

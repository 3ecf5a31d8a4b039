"""``python -m onnxop_cli`` and the ``onnxop`` command."""

import gc
import os
import sys


def main() -> None:
    """Install the signal handlers first, so that a signal while the CLI's
    modules load ends the run in one line, as one later would."""
    # numpy's OpenBLAS starts a spinning thread per core at `import numpy`: 0.05-0.15 of a small run's
    # 0.7-0.9 CPU s (docs/performance.md). onnxop multiplies no matrices, so the command asks for one
    # thread before numpy loads; one the user set is kept. The API leaves its caller's numpy alone.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .core import signals
    from .errors import interruption

    signals.install()
    try:
        # Loading the CLI makes objects that live as long as the process (modules,
        # classes, the commands): collecting while it loads, and traversing them
        # again in each later full collection, was about 15% of a small run's CPU
        # time (docs/performance.md). The run itself collects as usual.
        gc.disable()
        try:
            from .cli.main import main as cli_main
        finally:
            gc.freeze()
            gc.enable()

        cli_main()  # it handles signals itself once its run has started, and exits
    except Exception as e:  # a signal while modules load, before any file is touched
        stopped = interruption(e)
        if stopped is None:
            raise
        sys.stderr.write(f"onnxop: error: {stopped}\n")
        signals.settle()
        sys.exit(stopped.exit_code)


if __name__ == "__main__":
    main()

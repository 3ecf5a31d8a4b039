"""``python -m onnxop_cli`` and the ``onnxop`` command."""

import sys


def main() -> None:
    """Install the signal handlers first, so that a signal while the CLI's
    modules load ends the run in one line, as one later would."""
    from . import signals
    from .errors import Interrupted

    signals.install()
    try:
        from .cli import main as cli_main

        cli_main()  # it handles signals itself once its run has started, and exits
    except Interrupted as e:  # while modules load, before any file is touched
        sys.stderr.write(f"onnxop: error: {e}\n")
        signals.settle()
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()

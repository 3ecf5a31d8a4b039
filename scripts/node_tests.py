"""Write ONNX's official backend node tests of onnxop's operators to a folder.

The cases are built from the installed onnx package (see
``onnxop_cli.docs.nodetests``); ``onnxop conformance`` with no folder does the same
in a temporary folder and runs them.

    python scripts/node_tests.py OUT_DIR [--op Transpose ...] [--only NAME ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from onnxop_cli.docs.nodetests import node_testcases, write_all, write_case  # noqa: F401 - used by the tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--op", nargs="*", help="operators (default: every one onnxop runs)")
    parser.add_argument("--only", nargs="*", help="case names to write (default: all)")
    args = parser.parse_args()
    for folder in write_all(args.out, args.op, args.only):
        print(folder)


if __name__ == "__main__":
    main()

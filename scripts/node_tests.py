"""Write ONNX's official backend node tests for Flatten and Unsqueeze to a folder.

The cases come from onnx's own machinery: importing
``onnx.backend.test.case.node.flatten`` / ``.unsqueeze`` runs their
``export*`` methods, whose ``expect(...)`` calls register the test models and
data (seeded as onnx seeds them). They are written the way onnx's
``backend-test-tools generate-data`` writes node tests: ``<name>/model.onnx``
and ``<name>/test_data_set_0/{input,output}_<i>.pb``. (``collect_testcases``
would run every operator's exports, ~10 s; only these two modules are needed.)

    python scripts/node_tests.py OUT_DIR [--only NAME ...]
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

OPS = ("flatten", "unsqueeze")


def node_testcases(ops=OPS) -> list:
    import onnx.backend.test.case.node as node_cases

    for op in ops:
        importlib.import_module(f"onnx.backend.test.case.node.{op}")
    wanted = {op.capitalize() for op in ops}
    return [c for c in node_cases._NodeTestCases if c.model.graph.node[0].op_type in wanted]


def write_case(case, out: Path) -> Path:
    from onnx import numpy_helper

    folder = out / case.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_set = folder / f"test_data_set_{i}"
        data_set.mkdir(exist_ok=True)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, value in enumerate(values):
                proto = numpy_helper.from_array(value, infos[j].name)
                (data_set / f"{kind}_{j}.pb").write_bytes(proto.SerializeToString())
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", help="case names to write (default: all)")
    args = parser.parse_args()
    for case in node_testcases():
        if not args.only or case.name in args.only:
            print(write_case(case, args.out))


if __name__ == "__main__":
    main()

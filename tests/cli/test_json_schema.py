"""The ``--json`` schema itself (tests/cli/json_schema.py): the validator
catches departures, the docs document every key, and the documents of
compare, --keep-going, --any-type and show --graph match it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from conftest import cli, random_array
from json_schema import COMMON, SCHEMAS, document, keys_of, problems
from pb_files import f8_pb

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]


def test_the_validator_catches_departures():
    assert problems({"command": "x", "status": "ok"}, COMMON) == ["$: missing 'exit_code'"]
    assert problems({"command": None, "status": "ok", "exit_code": 0, "x": 1}, COMMON) == ["$: unexpected 'x'"]
    assert problems({"command": 1, "status": "ok", "exit_code": True}, COMMON) != []
    assert problems([1, "2"], [int]) == ["$[1]: '2' is not <class 'int'>"]
    assert problems({"axes": [1, 2]}, {str: (int, [int])}) == []


def test_the_docs_document_every_key_of_the_schema():
    section = (REPO / "docs" / "json.md").read_text()
    section += (REPO / "docs" / "cli-details.md").read_text()  # compare, --keep-going, --any-type, show --graph
    keys = set().union(*(keys_of(s) for s in SCHEMAS.values()))
    missing = sorted(k for k in keys if f"`{k}`" not in section and f'"{k}"' not in section)
    assert missing == []


def test_compare_keep_going_any_type_and_graph_documents_match_the_schemas(cwd, capsys, rng):
    np.save("a.npy", random_array(rng, (3, 4), "float32"))
    np.save("b.npy", random_array(rng, (3, 4), "float32"))
    f8_pb(cwd / "f8.pb")
    os.mkdir("out")
    assert document(cli(capsys, "compare", "a.npy", "b.npy", "--json")[1], "compare")["pairs"][0]["first"]
    doc = document(cli(capsys, "slice", "a.npy", "f8.pb", "--starts", "0", "--ends", "1", "-o", "out", "-k",
                       "--json")[1], "slice")
    assert doc["refused"]
    doc = document(cli(capsys, "slice", "f8.pb", "--starts", "0", "--ends", "1", "-o", "out/s.pb", "--any-type",
                       "--json")[1], "slice")
    assert doc["any_type"] is True
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, "N"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), "m.onnx")
    assert document(cli(capsys, "show", "m.onnx", "--graph", "--json")[1], "show")["files"][0]["graph"]
    assert document(cli(capsys, "show", "m.onnx", "--json")[1], "show")["files"][0]["graph"]["inputs"]

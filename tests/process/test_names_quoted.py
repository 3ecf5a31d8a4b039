"""Names from files (tensor names, .npz members, file names,
node and attribute values) never forge an output line. Each is quoted as
``ls -b`` quotes (render.quote); --json keeps them exact. Commands run
through onnxop's entry (tests/commands.py): what a terminal or a log
would receive is what is checked."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from commands import Prepared
from conftest import random_array, seeded_rng
from onnxop_cli.render.node import printable, quote

FORGED = "ev\nonnxop: error: INJECTED"
ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}


def no_forged_line(*texts: bytes) -> None:
    for text in texts:
        for line in text.decode("utf-8", "replace").splitlines():
            assert not line.startswith("onnxop: error: INJECTED"), line
            assert "\x1b" not in line and "\r" not in line, line


@pytest.mark.parametrize(
    "name, quoted",
    [
        ("abc", "abc"),
        ("a\nb", "a\\nb"),
        ("a\\nb", "a\\\\nb"),  # a backslash is quoted too: the two names stay apart
        ("\x1b[31mred", "\\x1b[31mred"),
        ("t\tb\r", "t\\tb\\r"),
        ("x\udcffy", "x\\xffy"),  # invalid UTF-8 in a file name (surrogateescape)
        ("\u202eevil", "\\u202eevil"),  # a right-to-left override is no printable character
        ("ü", "ü"),
    ],
)
def test_quote(name, quoted):
    assert quote(name) == quoted
    assert "\n" not in quote(name) and quote(name).isprintable()


def test_printable_quotes_invalid_utf8_the_same_way():
    assert printable("x\udcffy\n") == "x\\xffy\\n"


prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Every prepared test's commands, in one process (what they print is under test, not the
    process): name -> (its folder, its results, as bytes); random values from the module's seed."""
    return prepared.run(tmp_path_factory, seeded_rng(request), text=False, env=ENV)


def hostile(tmp_path, rng):
    """A .pb whose tensor is named FORGED, an .npz member and a file named with a newline."""
    from onnx import numpy_helper

    a = random_array(rng, (2, 3, 4), "float32")
    (tmp_path / "ev.pb").write_bytes(numpy_helper.from_array(a, name=FORGED).SerializeToString())
    np.savez(tmp_path / "m.npz", **{FORGED: a})
    np.save(tmp_path / f"{FORGED}.npy", a)


# Every command that prints a name from a file, and --json's own document
FORGING = [
    ["show", "ev.pb"],
    ["show", "ev.pb", "--full"],
    ["show", "ev.pb", "--hist"],
    ["show", "m.npz"],
    ["show", f"{FORGED}.npy"],
    ["show", f"{FORGED}.npy", "--full"],
    ["transpose", "ev.pb"],
    ["transpose", "ev.pb", "--full"],
    ["transpose", "m.npz"],
    ["transpose", "ev.pb", "-o", "out.npy"],
    ["transpose", "m.npz", "-o", "out.npz"],
    ["transpose", f"{FORGED}.npy", "-o", f"{FORGED}2.npy"],
    ["transpose", f"{FORGED}.npy", "ev.pb"],  # titled blocks: "# FILE"
    ["transpose", "ev.pb", "-o", "-"],  # the human lines go to stderr
    ["flatten", f"{FORGED}.npy", "--axis", "9"],  # an error naming the file
    ["show", f"{FORGED}-missing.npy"],
]


@prepared
def forging(tmp_path, rng):
    hostile(tmp_path, rng)
    return [*FORGING, ["show", "m.npz", "--json"]]


def test_no_output_line_is_forged_and_json_keeps_names_exact(ran):
    """The 16 commands of FORGING, each checked on its own, then show --json."""
    _, (*done, as_json) = ran["forging"]
    for argv, r in zip(FORGING, done, strict=True):
        no_forged_line(r.stdout if "-" not in argv else b"", r.stderr)
        text = (r.stderr if "-" in argv or r.returncode else r.stdout).decode()
        assert "ev\\nonnxop: error: INJECTED" in text, (argv, text)
    r = as_json
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["tensors"][0]["name"] == FORGED  # exact once parsed
    assert b"\nonnxop: error" not in r.stdout  # JSON escapes it on the wire


@prepared
def model_names(tmp_path, rng):
    import onnx
    from onnx import TensorProto, helper

    a = random_array(rng, (2, 3), "float32")
    node = helper.make_node("Transpose", [FORGED], ["y\nonnxop: error: INJECTED"], perm=[1, 0])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(FORGED, TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y\nonnxop: error: INJECTED", TensorProto.FLOAT, [3, 2])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    np.save(tmp_path / "a.npy", a)
    return [["run", "m.onnx", "a.npy"]]


def test_node_and_attribute_names_from_a_model(ran):
    """op_type and attribute values of a model are printed quoted by `run`."""
    _, [r] = ran["model_names"]
    no_forged_line(r.stdout, r.stderr)
    assert r.returncode == 0 or r.stderr.count(b"\n") == 1, r.stderr

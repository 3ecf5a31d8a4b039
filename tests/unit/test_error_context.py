"""An error passed up with its file or node named in front (``reworded``)
keeps what its class carries besides the words: rebuilding it with
``type(e)(message)`` turned a SIGTERM into exit 130 (Interrupted's default
signal) and dropped OutOfScope's reason and OtherNodes' counts."""

from __future__ import annotations

import signal
from pathlib import Path

from onnxop_cli.errors import Interrupted, OnnxopError, OutOfScope
from onnxop_cli.ops.nodekinds import OtherNodes

SRC = Path(__file__).resolve().parents[2] / "src" / "onnxop_cli"


def test_a_signal_keeps_its_exit_code():
    e = Interrupted.by(signal.SIGTERM).reworded("model.onnx: interrupted by SIGTERM")
    assert type(e) is Interrupted and e.exit_code == 143 and e.signum == signal.SIGTERM
    assert str(e) == e.message == e.args[0] == "model.onnx: interrupted by SIGTERM"


def test_what_a_refusal_carries_is_kept():
    e = OutOfScope("Add: input a is float16: ...", reason="float16 inputs").reworded("node 0 'n' (Add-14): Add: ...")
    assert type(e) is OutOfScope and e.reason == "float16 inputs" and str(e).startswith("node 0")
    others = OtherNodes([("Conv", 3), ("Relu", 1)])
    again = others.reworded(f"m.onnx: {others.message}")
    assert again.counts == [("Conv", 3), ("Relu", 1)] and again.message == "m.onnx: 4 node(s) onnxop does not run: " \
        "Conv x3, Relu x1"
    assert others.message == "4 node(s) onnxop does not run: Conv x3, Relu x1"  # the original is left as it was


def test_no_error_is_rebuilt_from_its_words():
    """Every place that names a file or node in front of an error rewords it."""
    rebuilt = [f"{p.relative_to(SRC)}:{n}" for p in SRC.rglob("*.py")
               for n, line in enumerate(p.read_text().splitlines(), 1) if "type(e)(" in line and "``" not in line]
    assert rebuilt == []
    assert OnnxopError.reworded  # the one way

"""A small run loads and builds only what it uses (start-up),
checked in a fresh process by what is in sys.modules and what typer built,
never by timing (the figure is in docs/performance.md):

- the registry (every operator module) is imported without the indexed
  kernels' code: ops/ plans with gpu/index_table.py, and gpu/indexed.py,
  gpu/scatter.py load when a Gather or a Scatter runs;
- `onnxop flatten ...` has typer build the flatten command alone, where it
  built every command's click parameters on every run (cli/main.py
  _only_command); `onnxop --help` still builds them all;
- the command (cli/main.py main) reads models and .pb files with onnx's
  protobuf classes, and its shape inference child answers, without onnx's
  ``__init__`` (its helpers import ml_dtypes, about a CPU-second:
  core/onnx_lazy.py); a command that needs more (--verify) gets all of onnx.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import random_array

LAZY = ("onnxop_cli.gpu.indexed", "onnxop_cli.gpu.scatter")

PROBE = """
import json, sys
import typer.main
from onnxop_cli.cli import main as cli
from onnxop_cli.cli.app import app
from onnxop_cli import ops

built = []
make = typer.main.get_command_from_info
def counting(*a, **kw):
    info = a[0] if a else kw["command_info"]
    built.append(info.name or info.callback.__name__)
    return make(*a, **kw)
typer.main.get_command_from_info = counting

lazy = %(lazy)r
out = {"registry": len(ops.SPECS), "commands": len(app.registered_commands)}
for step, argv in %(steps)s:
    built.clear()
    code = cli.run(argv)
    out[step] = {"code": code, "built": list(built), "loaded": [m for m in lazy if m in sys.modules],
                 "commands": len(app.registered_commands)}
print(json.dumps(out))
"""


def probe(tmp_path: Path, steps: list[tuple[str, list[str]]]) -> dict:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = PROBE % {"lazy": LAZY, "steps": json.dumps(steps)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_flatten_loads_no_indexed_kernels_and_builds_one_command(tmp_path, rng):
    a = random_array(rng, (4, 8, 32), "float32")
    np.save(tmp_path / "a.npy", a)
    found = probe(tmp_path, [
        ("flatten", ["flatten", "a.npy", "--axis", "1", "--backend", "vulkan", "-o", "b.npy", "-q"]),
        ("gather", ["gather", "a.npy", "--indices", "2,0,-1", "--backend", "vulkan", "-o", "g.npy", "-q"]),
    ])
    assert found["registry"] >= 30 and found["commands"] > 30  # every operator is registered all the same
    flat = found["flatten"]
    assert flat["code"] == 0 and flat["built"] == ["flatten"] and flat["loaded"] == []
    assert flat["commands"] == found["commands"]  # the full list is back after the run
    assert np.load(tmp_path / "b.npy").tobytes() == a.reshape(4, 256).tobytes()
    # what a Flatten leaves out a Gather loads (the test watches real names; gpu/scatter.py a Scatter)
    gather = found["gather"]
    assert gather["code"] == 0 and gather["built"] == ["gather"] and gather["loaded"] == ["onnxop_cli.gpu.indexed"]
    assert all(importlib.util.find_spec(name) for name in LAZY)
    assert np.load(tmp_path / "g.npy").tobytes() == a[[2, 0, -1]].tobytes()


def test_help_and_unknown_commands_still_see_every_command(tmp_path):
    found = probe(tmp_path, [("help", ["--help"]), ("typo", ["flaten", "x.npy"]), ("after", ["-q", "flatten", "--help"])])
    assert found["help"]["code"] == 0 and len(found["help"]["built"]) == found["commands"]
    assert found["typo"]["code"] == 2 and len(found["typo"]["built"]) == found["commands"]  # "did you mean"
    assert len(found["after"]["built"]) == found["commands"]  # a name after an option: the whole group, as before
    assert all(not found[s]["loaded"] for s in ("help", "typo", "after"))


MAIN = """
import atexit, json, sys
from onnxop_cli.core import inference, onnx_lazy

def state():
    return {"onnx": onnx_lazy.loaded(), "ml_dtypes": "ml_dtypes" in sys.modules}

reply = inference._reply
def watched(model):  # the shape inference child (a fork) says what it loaded
    out = reply(model)
    with open("child.json", "w") as f:
        json.dump(state(), f)
    return out
inference._reply = watched
atexit.register(lambda: print(json.dumps(state())))
from onnxop_cli.__main__ import main
sys.argv = ["onnxop", *sys.argv[1:]]
main()
"""


def main_state(tmp_path: Path, argv: list[str]) -> tuple[dict, dict | None]:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "child.json").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", MAIN, *argv], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    child = tmp_path / "child.json"
    return json.loads(done.stdout.strip().splitlines()[-1]), json.loads(child.read_text()) if child.exists() else None


def test_models_and_pb_files_are_read_without_onnx_helpers(tmp_path, rng):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = random_array(rng, (4, 8, 32), "float32")
    np.save(tmp_path / "x.npy", x)
    onnx.save_tensor(numpy_helper.from_array(x), str(tmp_path / "x.pb"))
    nodes = [helper.make_node("Flatten", ["x"], ["y"], axis=1), helper.make_node("Transpose", ["y"], ["t"], perm=[1, 0]),
             # Constants of both kinds (a TensorProto, a list attribute): read without onnx's helpers too
             helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(np.array([128, 8], np.int64))),
             helper.make_node("Reshape", ["t", "s"], ["r"]),
             helper.make_node("Constant", [], ["s2"], value_ints=[256, 4]), helper.make_node("Reshape", ["r", "s2"], ["z"]),
             # a Constant whose values are in a typed field (int64_data, not raw_data), a tensor operator's attribute
             helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", TensorProto.INT64, [2], [3, 0])),
             helper.make_node("Gather", ["z", "k"], ["g"], axis=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8, 32])],
                              [helper.make_tensor_value_info("g", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    others = helper.make_graph(nodes + [helper.make_node("Add", ["g", "g"], ["a"])], "g", graph.input,
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(others, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "others.onnx"))
    light = {"onnx": False, "ml_dtypes": False}
    z = x.reshape(4, 256).T.reshape(256, 4)

    found, child = main_state(tmp_path, ["run", "m.onnx", "x.npy", "--backend", "vulkan", "-o", "z.npy", "-q"])
    assert (found, child) == (light, light)  # the model, its inference (in the child) and its run
    assert np.load(tmp_path / "z.npy").tobytes() == z[[3, 0]].tobytes()
    # the others' region handed to onnxruntime is built from the protobuf classes too
    found, child = main_state(tmp_path, ["run", "others.onnx", "x.npy", "--others", "onnxruntime", "--backend", "vulkan",
                                         "-o", "a.npy", "-q"])
    assert (found, child) == (light, light)
    assert np.load(tmp_path / "a.npy").tobytes() == (z[[3, 0]] + z[[3, 0]]).tobytes()
    found, _ = main_state(tmp_path, ["show", "m.onnx", "--graph"])  # the nodes' attributes (Gather's axis) shown
    assert found == light
    found, child = main_state(tmp_path, ["flatten", "x.pb", "--axis", "2", "--backend", "vulkan", "-o", "y.pb", "-q"])
    assert (found, child) == (light, None)
    assert numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "y.pb"))).tobytes() == x.tobytes()
    found, _ = main_state(tmp_path, ["flatten", "x.npy", "--backend", "vulkan", "-o", "f.npy", "-q"])
    assert found == light
    # what needs more of onnx loads it all, in the same module (onnx.reference for --verify)
    found, _ = main_state(tmp_path, ["run", "m.onnx", "x.npy", "--backend", "vulkan", "--verify", "-o", "v.npy", "-q"])
    assert found == {"onnx": True, "ml_dtypes": True}
    assert np.load(tmp_path / "v.npy").tobytes() == z[[3, 0]].tobytes()

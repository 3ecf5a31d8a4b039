"""The API comes from the registry: one function per ops.SPECS entry, made by
api.py from the spec (signature, defaults, docstring), listed by the package
(``__all__``, ``dir``) from the spec too, so a new operator needs no name
written anywhere but its module and its registry entry."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest

import onnxop_cli
from onnxop_cli import api
from onnxop_cli.ops import SPECS

ONE_BACKEND = True  # names and signatures: no backend under test

# the view functions' signatures as they were written by hand (kept by the generation)
SIGNATURES = {
    "flatten": "(x, axis=1, *, opset=28, backend=None, engine=None)",
    "unsqueeze": "(x, axes, *, opset=28, backend=None, engine=None)",
    "identity": "(x, *, opset=28, backend=None, engine=None)",
    "reshape": "(x, shape, *, allowzero=None, opset=28, backend=None, engine=None)",
    "squeeze": "(x, axes=None, *, opset=28, backend=None, engine=None)",
    "transpose": "(x, perm=None, *, opset=28, backend=None, engine=None)",
    "expand": "(x, shape, *, opset=28, backend=None, engine=None)",
    "slice_": "(x, starts, ends, axes=None, steps=None, *, opset=28, backend=None, engine=None)",
    "tile": "(x, repeats, *, opset=28, backend=None, engine=None)",
    "depth_to_space": "(x, blocksize, mode=None, *, opset=28, backend=None, engine=None)",
    "space_to_depth": "(x, blocksize, mode=None, *, opset=28, backend=None, engine=None)",
}


def test_every_registry_entry_is_an_api_function():
    names = [spec.api_name for spec in SPECS.values()]
    assert list(api.FUNCTIONS) == names == api.__all__
    for spec in SPECS.values():
        fn = getattr(onnxop_cli, spec.api_name)
        assert fn is getattr(api, spec.api_name) and fn.__name__ == spec.api_name
        assert fn.__module__ == "onnxop_cli.api" and fn.__doc__ and spec.op_type in fn.__doc__
    assert set(names) | {"OnnxopError", "OpError"} <= set(onnxop_cli.__all__) <= set(dir(onnxop_cli))
    assert api.FUNCTIONS["slice_"] is onnxop_cli.slice_  # a builtin's name gets a "_"


@pytest.mark.parametrize("name", SIGNATURES)
def test_view_signatures_are_as_they_were_written(name):
    assert str(inspect.signature(getattr(onnxop_cli, name))) == SIGNATURES[name]


def test_no_name_list_is_left_to_edit():
    assert not [name for name in dir(onnxop_cli) if name.endswith("_FUNCTIONS")]


def test_a_new_registry_entry_is_a_function_and_a_name(monkeypatch):
    """What the next operator gets from its registry entry alone."""
    spec = dataclasses.replace(SPECS["Transpose"], op_type="Transpose", api_doc="")
    fn = api._function(spec)
    assert str(inspect.signature(fn)) == SIGNATURES["transpose"] and "ONNX Transpose:" in fn.__doc__
    import onnxop_cli.ops as ops

    monkeypatch.setitem(ops.SPECS, "Nothing", dataclasses.replace(SPECS["Identity"], op_type="Nothing"))
    assert "nothing" in onnxop_cli.__all__ and "nothing" in dir(onnxop_cli)


def test_help_of_a_tensor_operator_function_and_of_the_package():
    code = "import onnxop_cli; help(onnxop_cli.concat); help(onnxop_cli.reshape); help(onnxop_cli)"
    text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PAGER": "cat", "TERM": "dumb", "PATH": "/usr/bin:/bin"}).stdout
    assert "concat(*inputs" in text and "ONNX Concat:" in text
    assert "reshape(x, shape, *, allowzero=None, opset=28, backend=None, engine=None)" in text
    assert "gather_nd(*inputs" in text  # the package's help lists every function


def test_importing_the_package_imports_no_operator():
    code = ("import sys, onnxop_cli\n"
            "assert 'onnxop_cli.ops' not in sys.modules and 'numpy' not in sys.modules\n"
            "names = dir(onnxop_cli)\n"
            "assert 'concat' in names and 'numpy' not in sys.modules\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr


def test_every_registry_operator_is_a_conformance_op():
    """conformance --op takes every operator of the registry (their one-node
    cases), not only those a graph may hold."""
    from onnxop_cli.docs.conformance import _known_op

    for op_type in SPECS:
        assert _known_op(op_type.lower()) == op_type
    assert _known_op("constant") == "Constant"


def test_api_md_names_every_function_whose_name_gets_a_trailing_underscore():
    """docs/api.md named slice_ alone, so a reader called onnxop_cli.range, abs or min and met an AttributeError:
    every function named with a "_" after Python's own name is named on the page."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    renamed = [name for name in api.FUNCTIONS if name.endswith("_")]
    assert "range_" in renamed and [name for name in renamed if f"`{name}`" not in page] == []

"""Global options (--backend, --kernel, --json, ...) on both sides of the
command: each works after it, given twice must agree, has one definition;
a kernel typed after the command beats the environment.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, error_of


@pytest.mark.parametrize("command", [["transpose", "a.npy", "-o", "k.npy"], ["show", "a.npy"],
                                     ["compare", "a.npy", "a.npy"], ["info"]])
def test_every_global_option_works_after_the_command(cwd, capsys, command):
    np.save("a.npy", np.ones((2, 2), np.float32))
    for option in (["--kernel", "storage"], ["--backend", "vulkan"], ["--engine", "wgpu"], ["-q"], ["--debug"]):
        code, _, err = cli(capsys, *command, *option)
        assert code == 0, (option, err)
        code, _, err = cli(capsys, *option, *command)
        assert code == 0, (option, err)
    code, out, _ = cli(capsys, *command, "--json")
    assert code == 0 and json.loads(out)["status"] == "ok"


def test_kernel_after_the_command_is_the_kernel_that_runs(cwd, capsys):
    np.save("a.npy", np.arange(8, dtype=np.float32))
    code, out, _ = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--kernel", "storage", "--json")
    assert code == 0 and json.loads(out)["kernel"] == {"name": "storage", "reason": "forced"}


def test_a_global_option_given_twice_must_agree(cwd, capsys):
    np.save("a.npy", np.ones(2, np.float32))
    code, _, err = cli(capsys, "--kernel", "storage", "transpose", "a.npy", "--kernel", "storage64")
    assert code == 2 and error_of(err) == "--kernel given twice, as storage and storage64; give it once"
    code, _, err = cli(capsys, "--backend", "vulkan", "show", "a.npy", "--backend", "gl")
    assert code == 2 and error_of(err) == "--backend given twice, as vulkan and gl; give it once"


def test_global_options_have_one_definition():
    from onnxop_cli.cli import app as cli_module
    from onnxop_cli.cli.app import GLOBALS, app

    for info in app.registered_commands:
        import inspect

        params = inspect.signature(info.callback).parameters
        for name, (annotation, _) in GLOBALS.items():
            assert params[name].annotation is annotation, (info.name, name)  # the one definition, not a copy
    assert cli_module.KernelOpt is GLOBALS["kernel"][0]


def test_a_kernel_typed_after_the_command_beats_the_environment(cwd, capsys, monkeypatch):
    np.save("a.npy", np.arange(8, dtype=np.float32))
    monkeypatch.setenv("ONNXOP_KERNEL", "storage")
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--kernel", "storage64", "--json")
    assert code == 0, err
    assert json.loads(out)["kernel"]["name"] == "storage64"
    code, out, _ = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "--json")
    assert json.loads(out)["kernel"]["name"] == "storage"

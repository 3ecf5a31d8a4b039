"""Help texts: every command and every option (arguments, --help and typer's
completion options included) has help with an example; ``onnxop --help``
groups the commands and shows one example each; start-up imports nothing
heavy; shell completion answers."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest
import typer
from typer import Context

from onnxop_cli.cli.main import app
from onnxop_cli.cli.help import PANELS, example_of


@functools.cache  # typer builds the click commands anew each call (collection called it 6 times)
def root():
    return typer.main.get_command(app)


@functools.cache
def commands() -> list:
    group = root()
    ctx = Context(group, info_name="onnxop")
    return [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]


def params_of(cmd, name: str) -> list:
    return cmd.get_params(Context(cmd, info_name=name))


@functools.cache
def param_ids() -> list:
    out = [("onnxop", p.name, p) for p in params_of(root(), "onnxop")]
    for name, cmd in commands():
        out += [(name, p.name, p) for p in params_of(cmd, name)]
    return out


@pytest.mark.parametrize("name,cmd", commands(), ids=[n for n, _ in commands()])
def test_every_command_has_help_with_an_example(name, cmd):
    assert cmd.help and cmd.help.strip()
    example = example_of(cmd.help)
    assert example and example.startswith(f"onnxop {name}"), cmd.help
    assert cmd.short_help, f"{name}: a one-line summary for the grouped listing"
    assert getattr(cmd, "rich_help_panel", None) in PANELS, f"{name} is in no panel"


@pytest.mark.parametrize("where", list(dict.fromkeys(w for w, _, _ in param_ids())))
def test_every_option_and_argument_has_help_with_an_example(where):
    """Each option and argument of the command (or of the root): one item per
    command, each parameter checked and named in a failure."""
    params = [param for w, _, param in param_ids() if w == where]
    assert params
    for param in params:
        text = getattr(param, "help", None)
        assert text and "Example:" in text, f"{where} {param.opts}: {text!r}"
        assert example_of(text), (param.opts, text)


def test_the_root_and_its_commands_are_all_checked():
    names = [n for n, _ in commands()]
    assert {"flatten", "unsqueeze", "show", "info", "doc-examples"} <= set(names)
    root_opts = {p.name for p in params_of(root(), "onnxop")}
    assert {"backend", "json_out", "quiet", "debug", "install_completion", "show_completion", "help"} <= root_opts


def run_help(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *args], capture_output=True, text=True, env=env)


def test_root_help_groups_commands_with_one_example_each():
    done = run_help("--help")
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    assert max(len(line) for line in text.splitlines()) <= 80, "the listing fits an 80-column terminal"
    sections = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert [s for s in sections if s in PANELS] == list(PANELS)
    for name, cmd in commands():
        lines = text.splitlines()
        # a command's line is indented two spaces (a wrapped option help may start with "or")
        (i,) = [k for k, line in enumerate(lines) if line[:2] == "  " and line[2:3] != " "
                and line.split()[:1] == [name]]
        assert lines[i + 1].strip() == f"Example: {example_of(cmd.help)}"


def test_each_command_help_shows_its_example(capsys, monkeypatch):
    """In-process (one process per command cost a second each); the real
    process's help is test_root_help_groups_commands_with_one_example_each."""
    from onnxop_cli.cli.main import run

    monkeypatch.setenv("COLUMNS", "80")
    for name, cmd in commands():
        code = run([name, "--help"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"Example: onnxop {name}" in out


def test_help_imports_nothing_heavy():
    """`onnxop --help` must stay fast: numpy, wgpu, onnx and rich load only
    inside the commands that need them (measured, not timed: the module set)."""
    code = (
        "import sys\n"
        "from onnxop_cli.cli.main import run\n"
        "import onnxop_cli\n"
        "run(['--help'])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'wgpu', 'onnx', 'rich', 'ml_dtypes'})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stderr


def completion(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_ONNXOP_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    code = "import sys; from onnxop_cli.cli.main import main; sys.argv = ['onnxop']; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_shell_completion_completes_commands_options_and_backends():
    assert completion("onnxop fl", 1) == ["flatten"]
    assert completion("onnxop unsqueeze --ax", 2) == ["--axes"]
    assert completion("onnxop flatten a.npy --backend ", 4) == ["auto", "vulkan", "metal", "d3d12", "gl"]


def test_bare_onnxop_shows_the_help_on_stderr(capsys):
    from onnxop_cli.cli.main import run

    assert run([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Usage: onnxop [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nOperators:\n  flatten" in err  # the real layout, not one squashed error line


@pytest.mark.parametrize("command,usage", [
    ("flatten", "Usage: onnxop flatten [OPTIONS] FILE..."),
    ("unsqueeze", "Usage: onnxop unsqueeze [OPTIONS] FILE..."),
    ("show", "Usage: onnxop show [OPTIONS] FILE..."),
    ("conformance", "Usage: onnxop conformance [OPTIONS] [DIR]..."),
    ("doc-examples", "Usage: onnxop doc-examples [OPTIONS] [PAGE]..."),
    ("info", "Usage: onnxop info [OPTIONS]"),
])
def test_usage_lines_say_an_argument_takes_several(capsys, command, usage):
    from onnxop_cli.cli.main import run

    assert run([command, "--help"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == usage

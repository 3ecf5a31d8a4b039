"""README's examples, and those of every page in docs/, run as written.

- The quick-start command (after its install step, which test_wheel.py covers).
- Every ``console`` block: each ``$ ...`` line runs in bash, in a temporary
  folder holding a copy of samples/, with ``onnxop`` meaning this checkout's
  onnxop and stderr merged into stdout (what a terminal shows). The printed
  text must match the README exactly, except inside a JSON document, where
  the machine-dependent ``backend``, ``adapter``, ``timings`` and ``kernel`` values are
  masked and the rest compared as data. A block preceded by
  ``<!-- output varies -->`` (``onnxop info``) must only succeed.
- Every ``pycon`` block runs as a doctest, in the same kind of folder.

A ``$`` line is a small shell pipeline: every command in it is ``onnxop`` or
``echo`` (pipes, ``<``, ``;`` and ``&&`` allowed), and it must exit 0 --
an example of a failure shows its exit code with ``; echo "exit code $?"``.
Set ONNXOP_TEST_PYTHON to run the examples with another interpreter (an
installed wheel's); they run on the first backend under test (a CLI test).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from commands import set_environment

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
# Pages whose examples need files of their own: each has its runner, which
# makes them first (test_every_page_of_docs_has_a_runner holds the list true).
OWN_RUNNER = {
    "operators.md": "process/test_docs_operators.py", "indexed-operators.md": "process/test_indexed_docs.py",
    "integer-arithmetic.md": "process/test_docs_operators.py",
    "cli-details.md": "process/test_docs_cli_details.py", "safety-writes.md": "process/test_docs_safety_writes.py",
    "safety-inputs.md": "process/test_docs_safety_inputs.py", "backend.md": "process/test_backend_runner.py", "graphs.md": "process/test_graph_docs.py",
}
# README first, then every other page of docs/ (pages added there are run too)
PAGES = {"README.md": README} | {
    f"docs/{p.name}": p.read_text() for p in sorted((REPO / "docs").glob("*.md")) if p.name not in OWN_RUNNER
}
PYTHON = os.environ.get("ONNXOP_TEST_PYTHON", sys.executable)
VARIES = "<!-- output varies -->"
MASKED = ("backend", "adapter", "timings", "kernel", "schedules")
ALLOWED = {"onnxop", "echo"}


def marked_block(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)\n```", README, re.S)
    assert m, f"README has no block after <!-- {marker} -->"
    return m.group(1).strip()


def console_blocks() -> list[tuple[list[tuple[str, str]], bool]]:
    """Each block's ``$`` lines with the output shown under them, and whether
    the block's output varies by machine. A block's lines run in order, in
    one folder (a later line may read what an earlier one wrote)."""
    blocks = []
    for text in PAGES.values():
        for m in re.finditer(r"```console\n(.*?)```", text, re.S):
            varies = text[: m.start()].rstrip().endswith(VARIES)
            parts = re.split(r"^\$ ", m.group(1), flags=re.M)
            assert parts[0] == "", f"a console block must start with '$ ': {m.group(1)[:60]!r}"
            lines = []
            for part in parts[1:]:
                command, _, output = part.partition("\n")
                lines.append((command.strip(), output))
            blocks.append((lines, varies))
    return blocks


def console_examples() -> list[tuple[str, str, bool]]:
    return [(c, out, varies) for lines, varies in console_blocks() for c, out in lines]


def pycon_blocks() -> list[str]:
    return [b for text in PAGES.values() for b in re.findall(r"```pycon\n(.*?)```", text, re.S)]


ENV_WORD = re.compile(r"ONNXOP_\w+=\S*")  # an onnxop variable set for one command: ONNXOP_POISON=x onnxop ...


def check_grammar(command: str) -> None:
    """Only onnxop and echo, joined by |, ;, && -- no other programs (a
    command may start with ONNXOP_* variables set for it)."""
    words = shlex.split(command)
    while words and ENV_WORD.fullmatch(words[0]):
        words = words[1:]
    assert words[:1] == ["onnxop"], command
    for segment in re.split(r"\|\||&&|[|;]", command):
        words = shlex.split(segment)
        while words and ENV_WORD.fullmatch(words[0]):
            words = words[1:]
        assert words and words[0] in ALLOWED, f"{words[:1]} in {command!r}"
        assert "`" not in segment and "$(" not in segment, command


def run_shell(command: str, cwd: Path, backend: str) -> subprocess.CompletedProcess:
    check_grammar(command)
    script = f'onnxop() {{ "$ONNXOP_TEST_PYTHON" -m onnxop_cli "$@"; }}\n{{ {command}\n}} 2>&1'
    env = {**os.environ, "ONNXOP_BACKEND": backend, "ONNXOP_TEST_PYTHON": PYTHON, "COLUMNS": "80"}
    env.pop("PYTHONPATH", None) if PYTHON != sys.executable else None
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True, env=env
    )


# A line that is only ``onnxop ARGS`` (after ONNXOP_* variables set for it),
# with at most ``; echo "exit code $?"`` after it, and nothing bash would
# expand, is first run in this process (cli.main.run, stdout and stderr into
# one stream in the order written): about 0.4 s of start-up less a line. If
# what it prints is not what the page shows, the line is run again as a real
# process (bash, as above), and that run is the verdict: a page is never passed
# by the in-process run alone disagreeing with a real one, only by one that
# prints the page's text. The README's own lines always run as real
# processes (they are what a newcomer types first); the real-process
# behaviours (start-up, signals, buffering, exit codes at shutdown) have their
# own tests in tests/process/. With ONNXOP_TEST_PYTHON set nothing runs
# in-process.
EXIT_ECHO = '; echo "exit code $?"'
SHELL_CHARACTERS = set("|&;<>()$`*?[]{}~!#\\\n")  # quotes are fine: shlex splits them as bash does
RUNS = {"in-process": 0, "real process": 0}  # how the lines were decided (test_the_in_process_runner_...)


README_LINES = {p.partition("\n")[0].strip() for m in re.finditer(r"```console\n(.*?)```", README, re.S)
                for p in re.split(r"^\$ ", m.group(1), flags=re.M)[1:]}


def in_process_argv(command: str) -> tuple[dict[str, str], list[str], bool] | None:
    """(variables, argv, echoes the exit code) for a line the in-process
    runner can take exactly as bash would, else None."""
    if PYTHON != sys.executable or command in README_LINES:
        return None
    echo = command.endswith(EXIT_ECHO)
    line = command[: -len(EXIT_ECHO)] if echo else command
    if set(line) & SHELL_CHARACTERS:
        return None  # pipes, globs, redirections, expansions: bash's business
    words = shlex.split(line)
    variables = {}
    while words and ENV_WORD.fullmatch(words[0]):
        name, _, value = words.pop(0).partition("=")
        variables[name] = value
    if words[:1] != ["onnxop"]:
        return None
    return variables, words[1:], echo


def run_in_process(variables: dict[str, str], argv: list[str], echo: bool, cwd: Path, backend: str) -> tuple[int, str]:
    """(exit code, stdout and stderr merged) of ``onnxop ARGV`` run in this process."""
    import io

    from onnxop_cli.cli.main import run

    raw = io.BytesIO()
    merged = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)
    saved = sys.stdout, sys.stderr, os.getcwd(), dict(os.environ)
    set_environment({**saved[3], "ONNXOP_BACKEND": backend, "COLUMNS": "80", **variables})
    os.chdir(cwd)
    sys.stdout = sys.stderr = merged
    try:
        code = run(argv)
    except SystemExit as e:  # typer's own exits (--help, --version)
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
        set_environment(saved[3])
    text = raw.getvalue().decode("utf-8", "replace")
    if echo:
        return 0, text + f"exit code {code}\n"
    return code, text


def check_line(command: str, expected: str, cwd: Path, backend: str, varies: bool = False, compare=None) -> None:
    """A ``$`` line exits 0 and prints ``expected`` (``compare(actual, expected)``
    asserts it; by default assert_same_output), or with ``varies`` prints
    something: in this process when that already holds, else as a real process."""
    compare = compare or assert_same_output
    check_grammar(command)

    def holds(code: int, text: str) -> bool:
        if code != 0:
            return False
        if varies:
            return bool(text.strip())
        try:
            compare(text, expected)
        except AssertionError:
            return False
        return True

    found = in_process_argv(command)
    if found is not None and holds(*run_in_process(*found, cwd, backend)):
        RUNS["in-process"] += 1
        return
    RUNS["real process"] += 1
    done = run_shell(command, cwd, backend)
    assert done.returncode == 0, (command, done.stdout)
    if varies:
        assert done.stdout.strip()
    else:
        compare(done.stdout, expected)


def mask(value):
    if isinstance(value, dict):
        return {k: ("<masked>" if k in MASKED else mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value


def split_json(text: str) -> tuple[str, str | None, str]:
    """(text before, the JSON document, text after): a document starts at a
    line that is ``{`` and ends at the next line that is ``}``."""
    lines = text.split("\n")
    if "{" not in lines:
        return text, None, ""
    start = lines.index("{")
    end = lines.index("}", start)
    return "\n".join(lines[:start]), "\n".join(lines[start : end + 1]), "\n".join(lines[end + 1 :])


def assert_same_output(actual: str, expected: str) -> None:
    a_before, a_doc, a_after = split_json(actual)
    e_before, e_doc, e_after = split_json(expected)
    if e_doc is None:
        assert actual == expected
        return
    assert a_doc is not None, actual
    assert (a_before, a_after) == (e_before, e_after)
    assert mask(json.loads(a_doc)) == mask(json.loads(e_doc))
    # and the document is printed as shown (key order, layout), masked values aside
    shape = re.compile(r'^(\s*"(?:adapter|backend|device|copy|total|name|reason)": ).*?(,?)$', re.M)
    assert shape.sub(r"\1…\2", a_doc) == shape.sub(r"\1…\2", e_doc)


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    return tmp_path


def test_quick_start_commands(workdir, backend):
    command = marked_block("main-command")
    install, *steps = [s.strip() for s in command.split("&&")]
    assert install == "pip install ."
    assert steps == ["onnxop doc-examples --check"]
    done = run_shell(steps[0], workdir, backend)
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-1] == "17 passed, 0 failed"
    assert "Traceback" not in done.stdout and "error" not in done.stdout.lower()  # stderr is merged in


def test_test_command_is_what_ci_runs():
    assert marked_block("test-command") == "pip install '.[test]' && lint-imports && python -m pytest -n auto"
    assert "test-command" in (REPO / ".ci" / "run").read_text()


def test_readme_is_short_and_its_links_into_docs_exist():
    """The README is what a newcomer needs on the first screens; the reference is in docs/."""
    assert len(README.splitlines()) <= 160
    linked = set(re.findall(r"\]\((docs/[\w.\-]+\.md)", README))
    assert {"docs/commands.md", "docs/json.md", "docs/formats.md"} <= linked
    assert not [name for name in linked if not (REPO / name).exists()]


def test_readme_has_examples_of_every_command():
    shown = {shlex.split(c)[1] for c, _, _ in console_examples()}
    assert {"flatten", "unsqueeze", "show", "info", "doc-examples", "--help"} <= shown
    assert any(" - " in c and "|" in c for c, _, _ in console_examples()), "a pipe example"
    assert any("--json" in c for c, _, _ in console_examples()), "a JSON example"
    assert pycon_blocks(), "a Python API example"


def uses_gpu(lines: list[tuple[str, str]]) -> bool:
    """Whether a block runs a command that opens the adapter (the others --
    help, show, listing doc examples -- print the same on every backend)."""
    for command, _ in lines:
        for segment in re.split(r"\|\||&&|[|;]", command):
            words = shlex.split(segment)
            if words[:1] != ["onnxop"] or "--help" in words:
                continue
            if {"flatten", "unsqueeze", "info", "--check", "--show"} & set(words):
                return True
    return False


GPU_BLOCKS = [b for b in console_blocks() if uses_gpu(b[0])]
PLAIN_BLOCKS = [b for b in console_blocks() if not uses_gpu(b[0])]


def run_block(lines: list[tuple[str, str]], varies: bool, workdir: Path, backend: str) -> None:
    for command, expected in lines:
        check_line(command, expected, workdir, backend, varies)


@pytest.mark.parametrize("lines,varies", GPU_BLOCKS, ids=[b[0][0][0][:50] for b in GPU_BLOCKS])
def test_console_examples_print_what_the_readme_shows(workdir, backend, lines, varies):
    run_block(lines, varies, workdir, backend)


@pytest.mark.parametrize("lines,varies", PLAIN_BLOCKS, ids=[b[0][0][0][:50] for b in PLAIN_BLOCKS])
def test_console_examples_without_the_gpu(workdir, lines, varies):
    run_block(lines, varies, workdir, "auto")


def test_every_block_is_run():
    assert len(GPU_BLOCKS) + len(PLAIN_BLOCKS) == len(console_blocks()) >= 10
    assert uses_gpu([("onnxop flatten - -o - < a.npy | onnxop show -", "")])
    assert not uses_gpu([("onnxop show a.npy", ""), ("onnxop doc-examples --name x", "")])


@pytest.mark.parametrize("block", pycon_blocks(), ids=lambda b: b.splitlines()[0][:40])
def test_python_examples_run_as_doctests(workdir, backend, block):
    runner = (
        "import doctest, sys\n"
        "text = sys.stdin.read()\n"
        "test = doctest.DocTestParser().get_doctest(text, {}, 'README', 'README.md', 0)\n"
        "r = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)\n"
        "r.run(test)\n"
        "sys.exit(1 if r.failures or not r.tries else 0)\n"
    )
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    done = subprocess.run(
        [PYTHON, "-c", runner], input=block, cwd=workdir, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_masking_compares_everything_else():
    doc = '{\n  "adapter": "x",\n  "runs": [1],\n  "timings": {\n    "total": 1\n  }\n}'
    other = '{\n  "adapter": "y",\n  "runs": [1],\n  "timings": {\n    "total": 2\n  }\n}'
    assert_same_output(doc, other)
    with pytest.raises(AssertionError):
        assert_same_output(doc, other.replace("[1]", "[2]"))
    with pytest.raises(AssertionError):
        assert_same_output("line\n" + doc, doc)
    with pytest.raises(AssertionError):
        check_grammar("onnxop show a.npy | rm -rf x")


def test_every_page_of_docs_has_a_runner():
    """A page left to its own runner is named in that runner; no page is run by nobody."""
    for page, runner in OWN_RUNNER.items():
        assert (REPO / "docs" / page).exists(), page
        assert page in (REPO / "tests" / runner).read_text(), (page, runner)


def test_the_in_process_runner_takes_only_plain_lines(tmp_path, monkeypatch):
    """Plain lines run in-process; pipes, redirections and globs in bash; and a
    line whose in-process output is not the page's is decided by a real process."""
    monkeypatch.setattr(sys.modules[__name__], "PYTHON", sys.executable)
    assert in_process_argv("onnxop show a.npy -m 'w*'") is None
    assert in_process_argv("onnxop flatten - -o b.npy < a.npy") is None
    assert in_process_argv("onnxop flatten a.npy -o - | onnxop show -") is None
    assert in_process_argv("onnxop show $HOME/a.npy") is None
    assert in_process_argv('onnxop show "a b.npy"') == ({}, ["show", "a b.npy"], False)
    assert README_LINES and all(in_process_argv(line) is None for line in README_LINES)
    assert in_process_argv('ONNXOP_POISON=7 onnxop show a.npy; echo "exit code $?"') == (
        {"ONNXOP_POISON": "7"}, ["show", "a.npy"], True)
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    line = "onnxop show samples/a.npy --brief"
    shown = run_shell(line, tmp_path, "auto").stdout
    before = dict(RUNS)
    check_line(line, shown, tmp_path, "auto")
    assert RUNS["in-process"] == before["in-process"] + 1
    monkeypatch.setattr(sys.modules[__name__], "run_in_process", lambda *a: (0, "something else\n"))
    check_line(line, shown, tmp_path, "auto")  # the real process prints the page's text: it passes
    assert RUNS["real process"] == before["real process"] + 1
    with pytest.raises(AssertionError):
        check_line(line, shown + "a line the page does not show\n", tmp_path, "auto")

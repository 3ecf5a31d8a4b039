"""onnxop commands run as a fresh process runs them, without starting one.

A test of what commands print, exit with and write -- not of the process
itself -- runs them through ``run_commands``: each command line goes through
onnxop's entry (``onnxop_cli.cli.main.run``, what ``onnxop`` runs once its
handlers are in place: the same one-line error wrapper and exit code) in the
test's own process (``run_job``), in the given folder, on real files, and
reports each one's exit code, stdout and stderr. A process start (Python,
numpy, onnx, ml_dtypes, the device) is one to several CPU seconds on two
cores, and the worker has paid it already.

A command given bytes for stdin reads them from a real pipe; one given an
environment (a dict) runs with exactly that environment, the process's own
again after it; $TMPDIR, the warning filters and the folder are a fresh
process's too. ``process=True`` runs the commands in one driver process
instead (the same ``run_job``), for what the worker must not share: a module
imported from $PYTHONPATH, a crash that would take the worker with it, a
memory cap, another venv's onnxop (``python=``). What a process is needed for
-- signals, a reader or a writer at the other end of a pipe, the exit status
at interpreter exit, a closed descriptor -- keeps one ``onnxop`` process per
command (subprocess.run).
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path


def run_job(run, cwd, argv: list, stdin, environment: dict) -> list:
    """One command as a fresh ``onnxop`` process meets it: ``run`` (onnxop's entry) called with
    ``argv`` in folder ``cwd``, os.environ exactly ``environment``, stdout and stderr captured as
    a pipe takes them (no terminal; bytes written to .buffer kept), stdin a real pipe that a
    thread fills with ``stdin`` (bytes; None: a pipe at its end), and Python's default warning
    filters, a warning printed to that stderr (pytest's recorder would swallow it), $TMPDIR read
    again (tempfile keeps the folder it found first). The cwd, the environment, the streams,
    the warning state and tempfile's folder are this process's own again after it: [exit code,
    stdout, stderr]. The driver process runs this function's own text too."""
    import io
    import os
    import sys
    import tempfile
    import threading
    import warnings

    def show_warning(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    def feed(fd, data):
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the command stopped reading
            pass

    streams, folder, saved, temp = (sys.stdin, sys.stdout, sys.stderr), os.getcwd(), dict(os.environ), tempfile.tempdir
    r, w = os.pipe()
    feeder = threading.Thread(target=feed, args=(w, stdin or b""))
    feeder.start()
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", newline="")
                for _ in "12")
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()  # Python's own filters at start (no -W, no $PYTHONWARNINGS)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.filterwarnings("ignore", category=category, append=True)
            warnings.showwarning = show_warning  # (pytest records into catch_warnings' list)
            os.chdir(cwd)
            set_environment(environment)
            tempfile.tempdir = None
            sys.stdin = open(r, encoding="utf-8", errors="surrogateescape")
            sys.stdout, sys.stderr = out, err
            code = run(argv)
    finally:
        set_environment(saved)
        tempfile.tempdir = temp
        os.chdir(folder)
        sys.stdin.close() if sys.stdin is not streams[0] else os.close(r)
        sys.stdin, sys.stdout, sys.stderr = streams
        feeder.join()
    out.flush()
    err.flush()
    return [code, *(s.buffer.getvalue().decode("utf-8", "surrogateescape") for s in (out, err))]


# The driver process: reads jobs() on stdin, writes one JSON line per command (run_job).
_DRIVER = r"""
import base64, json, os, sys
from onnxop_cli.cli.main import run

%(set_environment)s
%(run_job)s
real_out = sys.stdout
base = dict(os.environ)
for cwd, argv, stdin, env in json.loads(sys.stdin.read()):
    data = None if stdin is None else base64.b64decode(stdin)
    real_out.write(json.dumps(run_job(run, cwd, argv, data, {**base, **env})) + "\n")
    real_out.flush()
"""


def set_environment(wanted: dict[str, str]) -> None:
    """Makes os.environ ``wanted``, touching only the variables that differ:
    a process that runs commands in-process has native threads (wgpu's poller,
    the driver's) that read the environment, and a setenv racing their getenv
    can crash it (clearing and refilling the whole environment around each
    command once took a worker down with a segmentation fault). The driver
    process runs this function's own text (it may be another venv's Python,
    which cannot import from tests/)."""
    for name in [n for n in os.environ if n not in wanted]:
        del os.environ[name]
    for name, value in wanted.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


_DRIVER = _DRIVER % {"set_environment": inspect.getsource(set_environment), "run_job": inspect.getsource(run_job)}


def run_commands(commands: list[tuple], text: bool = True, env: dict | None = None,
                 timeout: float = 300, python: str | Path | None = None,
                 process: bool = False) -> list[subprocess.CompletedProcess]:
    """Run ``(folder, argv)``, ``(folder, argv, stdin bytes)`` or ``(folder,
    argv, stdin bytes or None, {variable: value})`` commands (argv without
    ``onnxop``) in order: a CompletedProcess (code, stdout and stderr: str, or
    the bytes written when ``text`` is false) each. They run in this process
    (run_job) unless ``process`` is true or ``python`` is given: then in one
    driver process, which ``timeout`` bounds. ``env``: the commands'
    environment (this process's by default); ``python``: the interpreter, and so
    the onnxop it imports (an installed wheel's venv runs its own)."""
    if python is None and not process:
        from onnxop_cli.cli.main import run

        base = dict(os.environ if env is None else env)
        lines = [json.dumps(run_job(run, str(c[0]), [str(a) for a in c[1]], c[2] if len(c) > 2 else None,
                                    {**base, **{str(k): str(v) for k, v in (c[3] if len(c) > 3 else {}).items()}}))
                 for c in commands]
        return results(commands, "\n".join(lines), text)
    done = subprocess.run(driver(python), input=jobs(commands), capture_output=True, text=True,
                          env=env, errors="surrogateescape", timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return results(commands, done.stdout, text)


def driver(python: str | Path | None = None) -> list[str]:
    """The process that runs the commands: it reads ``jobs(commands)`` on stdin and writes what
    ``results`` reads (for a caller that starts it itself: under a memory cap, say)."""
    return [str(python or sys.executable), "-c", _DRIVER]


def jobs(commands: list[tuple]) -> str:
    return json.dumps([[str(c[0]), [str(a) for a in c[1]],
                        base64.b64encode(c[2]).decode() if len(c) > 2 and c[2] is not None else None,
                        {str(k): str(v) for k, v in (c[3] if len(c) > 3 else {}).items()}]
                       for c in commands])


def results(commands: list[tuple], stdout: str, text: bool = True) -> list[subprocess.CompletedProcess]:
    lines = stdout.splitlines()
    assert len(lines) == len(commands), stdout
    found = []
    for (_, argv, *_), (code, out, err) in zip(commands, map(json.loads, lines)):
        if not text:
            out, err = (s.encode("utf-8", "surrogateescape") for s in (out, err))
        found.append(subprocess.CompletedProcess(["onnxop", *argv], code, out, err))
    return found


class Prepared(dict):
    """Several tests' commands in one process. An instance is a decorator: ``@prepared``
    registers a function (by its name) that fills the folder it is given and returns its
    commands: argv lists (without ``onnxop``, run in that folder) or ``(subfolder, argv)``
    commands, or ``(what it made, those commands)``. ``prepared.run(tmp_path_factory,
    *args)`` gives each a fresh folder (and ``args``: a module's rng, say) and runs all their
    commands in one process (``kw`` as for ``run_commands``): name -> (what it made, else
    its folder; its results)."""

    def __call__(self, function):
        self[function.__name__] = function
        return function

    def run(self, tmp_path_factory, *args, **kw) -> dict:
        made = {}
        for name, function in self.items():
            folder = tmp_path_factory.mktemp(name)
            found = function(folder, *args)
            what, argvs = found if isinstance(found, tuple) else (folder, found)
            made[name] = what, [c if isinstance(c, tuple) else (folder, c) for c in argvs]
        done = iter(run_commands([c for _, commands in made.values() for c in commands], **kw))
        return {name: (what, [next(done) for _ in commands]) for name, (what, commands) in made.items()}


def terminal_output(leader: int, proc: subprocess.Popen | None = None, timeout: float = 120) -> str:
    """Everything written to a pseudo-terminal's follower, read from its
    ``leader`` until the child closes it (EIO or end of file), decoded
    (undecodable bytes replaced); the leader is closed. No output for
    ``timeout`` seconds fails the test (killing ``proc`` where given)."""
    import os
    import select

    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            if proc is not None:
                proc.kill()
            raise AssertionError(f"no output for {timeout} s")
        try:
            data = os.read(leader, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def run_script(path: str | Path, *args: str) -> subprocess.CompletedProcess:
    """``python PATH ARGS`` run in this process, as ``__main__`` with that ``sys.argv``, its stdout and
    stderr captured: for a test of what a script of scripts/ finds and prints, not of its process
    (a process start, and the imports of onnx and the device, are seconds). A fresh module each call
    (its own counters); sys.argv and sys.path are this process's again after it."""
    import contextlib
    import io
    import runpy

    saved = sys.argv, list(sys.path)
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [str(path), *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(str(path), run_name="__main__")
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved
    return subprocess.CompletedProcess([str(path), *args], code, out.getvalue(), err.getvalue())

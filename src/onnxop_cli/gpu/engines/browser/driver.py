"""Headless Chromium, driven through Playwright's sync API on a thread of its own.

Playwright's sync objects answer only on the thread that made them, and
onnxop calls the engine from several (copy.py's writer): every call goes to
one driver thread through a queue, and the caller waits for its answer at
most ``call_timeout()`` seconds, so a browser that hangs or dies is one
error line, never a hung command. The page is served on 127.0.0.1 by a tiny
HTTP server on a free port (WebGPU needs a secure context; localhost is one),
with, where asked, one folder's files under ``/files/`` and another page
script: ``Driver(folder, script)``, then ``call(function, arg, what)``
(docs/runtimes/ort_web.py serves onnxruntime-web's scripts and wasm so).
"""

from __future__ import annotations

import concurrent.futures
import http.server
import logging
import os
import queue
import shutil
import signal
import tempfile
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from ....errors import UsageError

ENV_CHROMIUM = "ONNXOP_CHROMIUM"  # the browser to run; else `chromium` (Debian), `chromium-browser` on PATH
ENV_CALL_TIMEOUT = "ONNXOP_BROWSER_TIMEOUT"  # seconds one call to the page may take (default 120)
DEFAULT_CALL_TIMEOUT = 120.0
INSTALL_HINT = "pip install 'onnxop[browser]'"


def missing() -> str:
    """What the browser engine lacks, in one sentence ('' if nothing)."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return f"the browser engine needs Playwright: {INSTALL_HINT}"
    if chromium() is None:
        named = os.environ.get(ENV_CHROMIUM, "").strip()
        where = f"${ENV_CHROMIUM} is {named!r}, not a program" if named else "no 'chromium' on PATH"
        return (f"the browser engine found no Chromium ({where}): install it (Debian/Ubuntu: "
                f"apt-get install chromium) or name it in ${ENV_CHROMIUM}")
    return ""

# --use-webgpu-adapter=swiftshader: Chromium's Dawn on SwiftShader (its own
# Vulkan on the CPU); it refuses Mesa's lavapipe. Timestamps unrounded, as
# the dawn engine asks (`onnxop bench` times sub-millisecond kernels).
FLAGS = (
    "--headless=new", "--enable-unsafe-webgpu", "--enable-webgpu-developer-features",
    "--use-webgpu-adapter=swiftshader", "--disable-dawn-features=timestamp_quantization",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-quic",
)


class BrowserError(RuntimeError):
    """A WebGPU error reported by the page, or a browser that failed."""


class BrowserOutOfMemory(BrowserError, MemoryError):
    pass


def chromium() -> str | None:
    """The Chromium executable, or None."""
    named = os.environ.get(ENV_CHROMIUM, "").strip()
    if named:
        return shutil.which(named)
    return shutil.which("chromium") or shutil.which("chromium-browser")


def call_timeout() -> float:
    """The seconds one call to the page may take ($ONNXOP_BROWSER_TIMEOUT, else 120)."""
    raw = os.environ.get(ENV_CALL_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_CALL_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise UsageError(f"${ENV_CALL_TIMEOUT} must be a positive number of seconds, got {raw!r}")
    return seconds


_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}


class _Quiet(http.server.BaseHTTPRequestHandler):
    """Serves the one page, and the files of ``folder`` under /files/; says nothing on stderr."""

    folder: Path | None = None

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        body, kind = b"", "text/html"
        if self.path == "/":
            body = b"<!doctype html><meta charset=utf-8><title>onnxop</title>"
        elif self.folder is not None and self.path.startswith("/files/"):
            path = (self.folder / self.path[len("/files/"):].split("?")[0]).resolve()
            if path.is_relative_to(self.folder) and path.is_file():
                body, kind = path.read_bytes(), _TYPES.get(path.suffix, "application/octet-stream")
        try:
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went (killed, or closed on a timeout) mid-answer: socketserver printed a traceback

    def log_message(self, *args: Any) -> None:
        pass


class Driver:
    """The browser, its page and the thread that talks to them: the engine's
    page (page.js) by default, else ``script`` with ``folder`` served under /files/."""

    def __init__(self, folder: Path | None = None, script: str | None = None, start_limit: float | None = None) -> None:
        call_timeout()  # a bad $ONNXOP_BROWSER_TIMEOUT is refused before a browser starts
        exe = chromium()
        if exe is None or missing():
            raise BrowserError(missing())
        self.dead = ""
        self.version = ""  # Chromium's, once started
        self.busy = False  # a call is in the page (close then cannot wait for the thread)
        self._playwright_pid = 0  # Playwright's driver (node), the child this thread started; 0 if unknown
        self._jobs: queue.Queue = queue.Queue()
        handler = type("_Served", (_Quiet,), {"folder": folder.resolve() if folder is not None else None})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, name="onnxop-page-server", daemon=True).start()
        script = script if script is not None else resources.files(__package__).joinpath("page.js").read_text()
        self._thread = threading.Thread(target=self._main, args=(exe, script), name="onnxop-browser", daemon=True)
        started: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((None, started))
        self._thread.start()
        try:
            self._wait(started, "starting Chromium", start_limit)
        except BrowserError:
            self.close()  # a start that hung: its Playwright driver would outlive the process, and its browser
            raise

    def _main(self, exe: str, script: str) -> None:
        from playwright.sync_api import sync_playwright

        runtime = tempfile.mkdtemp(prefix="onnxop-chromium-")  # XDG_RUNTIME_DIR, removed at the end
        env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or runtime}
        args = list(FLAGS) + (["--no-sandbox"] if os.geteuid() == 0 else [])
        try:
            with sync_playwright() as p:
                self._playwright_pid = _started_here()
                _, started = self._jobs.get()
                try:
                    # Playwright makes a fresh profile folder itself (it refuses --user-data-dir),
                    # and turns the sandbox off unless asked: on unless root.
                    browser = p.chromium.launch(executable_path=exe, args=args, env=env, headless=True,
                                                chromium_sandbox=os.geteuid() != 0)
                    self.version = browser.version
                    page = browser.new_page()
                    page.goto(f"http://127.0.0.1:{self._server.server_port}/")
                    page.add_script_tag(content=script)
                except Exception as e:  # noqa: BLE001 - any launch failure is one line
                    started.set_exception(BrowserError(f"Chromium did not start ({exe!r}): {_first(e)}"))
                    return
                started.set_result(None)
                while True:
                    job, answer = self._jobs.get()
                    if job is None:
                        break
                    if not answer.set_running_or_notify_cancel():
                        continue
                    self.busy = True
                    try:
                        answer.set_result(page.evaluate(*job))
                    except Exception as e:  # noqa: BLE001 - the browser crashed or closed
                        self.dead = f"the browser failed: {_first(e)}"
                        answer.set_exception(BrowserError(self.dead))
                    self.busy = False
                try:
                    browser.close()
                except Exception:  # noqa: BLE001 - a browser that died is closed already
                    pass
        finally:
            shutil.rmtree(runtime, ignore_errors=True)
            self._server.shutdown()

    def run(self, ops: list[list[Any]], what: str) -> dict[str, Any]:
        """Run ``ops`` in the engine's page; its answer (out, error, oom, lost)."""
        return self.call("ops => window.onnxopRun(ops)", ops, what)

    def call(self, function: str, arg: Any, what: str, limit: float | None = None) -> Any:
        """``function(arg)`` evaluated in the page (awaited if it returns a promise): its answer,
        within ``limit`` seconds (default: ``call_timeout()``)."""
        answer: concurrent.futures.Future = concurrent.futures.Future()
        self.post(function, arg, answer)
        return self._wait(answer, what, limit)

    def submit(self, ops: list[list[Any]], answer: concurrent.futures.Future) -> None:
        self.post("ops => window.onnxopRun(ops)", ops, answer)

    def post(self, function: str, arg: Any, answer: concurrent.futures.Future) -> None:
        if self.dead:
            raise BrowserError(self.dead)
        self._jobs.put(((function, arg), answer))

    def _wait(self, answer: concurrent.futures.Future, what: str, limit: float | None = None) -> Any:
        given = limit is not None and limit != call_timeout()  # a caller's own limit (a page's start)
        limit = limit or call_timeout()
        try:
            return answer.result(timeout=limit)
        except concurrent.futures.TimeoutError:
            why = "the caller's limit for this step" if given else f"${ENV_CALL_TIMEOUT} sets the limit"
            self.dead = f"the browser did not answer within {limit:g} s while {what} ({why})"
            raise BrowserError(self.dead) from None

    def close(self, grace: float = 0.0) -> None:
        """Close the browser. A call still in the page (a hung kernel, a step
        the caller gave up on, a signal that came mid-call) is ended by ending
        Playwright's driver, which ends its Chromium: the call then fails at
        once and the thread closes up. The thread must end before the
        interpreter does: one that wakes as Python finalizes is ended inside
        greenlet, whose thread-state destructor then crashes the process
        (SIGSEGV, exit 139 where a SIGTERM asked for 143). ``grace`` seconds
        (at least 5) are given it; a thread that outlives them is left, as
        Playwright's driver, its pipe closed at exit, ends Chromium."""
        if not self._thread.is_alive():
            return
        self._jobs.put((None, None))
        if not (self.dead or self.busy):
            self._thread.join(10)
        if self._thread.is_alive() and self._playwright_pid:
            logging.getLogger("asyncio").addFilter(_driver_gone)
            try:  # SIGKILL: on SIGTERM it waits for the busy browser to close
                os.kill(self._playwright_pid, signal.SIGKILL)
            except OSError:  # gone already
                pass
            self._thread.join(max(grace, 5.0))


def _driver_gone(record: logging.LogRecord) -> bool:
    """False for asyncio's 'Future exception was never retrieved' of the
    driver that close ended (Playwright leaves that future unread)."""
    error = record.exc_info[1] if record.exc_info else None
    return not (str(record.msg).startswith("Future exception was never retrieved")
                and "Connection closed" in str(error))


def _started_here() -> int:
    """The process this thread started (Playwright's driver), from Linux's
    /proc/PID/task/TID/children; 0 where that cannot be read."""
    try:
        with open(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/children") as f:
            children = f.read().split()
    except OSError:
        return 0
    return int(children[0]) if len(children) == 1 else 0


def _first(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__

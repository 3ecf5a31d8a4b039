"""onnx's C++ shape inference, asked where a crash of it cannot take onnxop down.

onnx 1.23's inference functions dereference what a malformed model leaves
empty, and the process dies of SIGSEGV (exit 139, no message, no Python
exception to catch). Found so far (docs/safety-inputs.md): an EyeLike with a
dtype, or a RegexFullMatch, reading a value inference cannot type (the output
of a com.microsoft node, or of a Split-18 given neither split nor
num_outputs); a RegexFullMatch with its input left out; a GatherND whose
indices declare a negative last dimension. Any other trigger ends the same way
here: ``types_of`` asks inference in a child process and, if the child dies,
answers with the model's own graph, as for a model inference refuses.

The child is a fork of this process while no GPU engine has been loaded in it
(``onnxop run``: inference decides which nodes are onnxop's before the adapter
opens): onnx is imported already and a fork costs milliseconds. A fork of a
process holding wgpu's, Dawn's or Chromium's threads is unsafe (a lock one of
them held stays held in the child), so after an engine was loaded (the API,
tests in one process) the child is one fresh interpreter, started once and
kept for later calls.
"""

from __future__ import annotations

import atexit
import faulthandler
import os
import struct
import subprocess
import sys
import threading
from typing import Any, Optional

try:
    import resource
except ImportError:  # (Windows)
    resource = None  # type: ignore[assignment]

# a module whose import means native threads may run in this process
_THREADED = ("wgpu", "pydawn", "playwright", "onnxruntime")

# the worker: this module alone (importing onnxop_cli.ops would take a second), not the current folder's files
_WORKER = ("import sys\nif sys.path and sys.path[0] in ('', '.'):\n    del sys.path[0]\n"
           "from onnxop_cli.core.inference import serve\nserve()")

_worker: Optional[subprocess.Popen] = None
_worker_lock = threading.Lock()


class Crashed(Exception):
    """onnx's inference ended its process (``.signal``: the signal's number, 0 if it exited)."""

    def __init__(self, signal: int) -> None:
        self.signal = signal
        super().__init__(f"onnx's shape inference crashed ({_signal_name(signal)})")


def types_of(model) -> Any:
    """The graph of ``model`` as onnx's shape inference types it (its inputs,
    outputs and value_info), or the model's own graph where inference refuses
    the model or crashes."""
    try:
        return inferred_graph(model)
    except Exception:  # noqa: BLE001 - refused or crashed: what the model declares
        return model.graph


def inferred_graph(model) -> Any:
    """``onnx.shape_inference.infer_shapes(model, strict_mode=False).graph``, in a child
    process; raises ``Crashed`` if inference ended it, ValueError if it refused the model."""
    if hasattr(os, "fork") and not any(name in sys.modules for name in _THREADED):
        reply = _forked(model)
    else:
        reply = _asked(model.SerializeToString())
    return _graph(reply)


def _graph(reply: bytes) -> Any:
    from onnx import GraphProto

    if reply[:1] != b"1":
        raise ValueError("onnx's shape inference refused the model")
    graph = GraphProto()
    graph.ParseFromString(reply[1:])
    return graph


def _forked(model) -> bytes:
    import warnings

    # imported here, the child imports nothing (what _reply and onnx_lazy.infer_shapes use)
    import onnx.onnx_cpp2py_export.shape_inference  # noqa: F401
    from onnx import GraphProto, ModelProto, serialization  # noqa: F401

    read, write = os.pipe()
    with warnings.catch_warnings():  # (3.12's DeprecationWarning for numpy's BLAS threads, idle in the child)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: inference, its graph down the pipe, and out without Python's exit
        code = 1
        try:
            os.close(read)
            _quiet_child()
            view = memoryview(_reply(model))
            while view:
                view = view[os.write(write, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    try:
        while chunk := os.read(read, 1 << 20):
            chunks.append(chunk)
    except BaseException:  # (Ctrl-C, a signal onnxop raises as Interrupted: the child's work is not waited for)
        os.kill(pid, 9)
        raise
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or os.WEXITSTATUS(status):
        raise Crashed(os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0)
    return b"".join(chunks)


def _reply(model) -> bytes:
    """What a child sends back: b"1" and the inferred graph's typed values (not its nodes and
    initializers: the parent has them), or b"0" where inference refused the model."""
    from onnx import GraphProto

    from .onnx_lazy import infer_shapes

    try:
        inferred = infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - refused: the parent answers with the model's graph
        return b"0"
    typed = GraphProto()
    for field in ("input", "output", "value_info"):
        getattr(typed, field).extend(getattr(inferred, field))
    return b"1" + typed.SerializeToString()


def serve() -> None:
    """The worker's loop: a model's bytes in (their length first, 8 bytes), ``_reply`` out, until
    its input ends."""
    from .onnx_lazy import install

    install()  # onnx without its helpers (and ml_dtypes), as the CLI has it
    from onnx import ModelProto

    _quiet_child()
    read, write = sys.stdin.buffer, sys.stdout.buffer
    while len(head := read.read(8)) == 8:
        model = ModelProto()
        try:
            model.ParseFromString(read.read(struct.unpack("<Q", head)[0]))
            reply = _reply(model)
        except Exception:  # noqa: BLE001 - bytes protobuf refuses
            reply = b"0"
        write.write(struct.pack("<Q", len(reply)) + reply)
        write.flush()


def _quiet_child() -> None:
    """A crash of the child prints nothing (faulthandler's dump, which pytest
    turns on) and writes no core file."""
    faulthandler.disable()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (AttributeError, ValueError, OSError):  # (no resource module: Windows, which has no fork either)
        pass


def _asked(data: bytes) -> bytes:
    """The worker's reply for a model's bytes; a worker that died is replaced at the next call."""
    global _worker
    with _worker_lock:
        if _worker is None or _worker.poll() is not None:
            _worker = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
            atexit.register(_stop, _worker)
        worker = _worker
        try:
            worker.stdin.write(struct.pack("<Q", len(data)) + data)
            worker.stdin.flush()
            head = worker.stdout.read(8)
            reply = worker.stdout.read(struct.unpack("<Q", head)[0]) if len(head) == 8 else b""
        except OSError:  # (a broken pipe: it died reading)
            reply = b""
        except BaseException:  # (interrupted: its reply would answer the next call's question)
            worker.kill()
            _worker = None
            raise
        if reply:
            return reply
        code = worker.wait()
        _worker = None
        raise Crashed(-code if code < 0 else 0)


def _stop(worker: subprocess.Popen) -> None:
    """At exit: the worker reads the end of its input and leaves."""
    try:
        worker.stdin.close()
        worker.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        worker.kill()


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name if number else "it exited"
    except ValueError:
        return f"signal {number}"

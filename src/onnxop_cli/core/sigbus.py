"""A mapped input truncated in place while it is read: one line, not a silent death.

Large inputs are mapped (``InputFile.map``) so that printing a summary reads
only the pages it shows. If another process truncates the file meanwhile
(``truncate -s 100M big.npy``), touching a page past the new end raises
SIGBUS, whose default action kills the process with no message, and Python
cannot raise an exception for it (its handlers run between bytecodes; the
faulting load would only fault again).

So ``install()`` puts a C-level SIGBUS handler in place (ctypes
``sigaction`` with ``SA_SIGINFO``). Each mapping is registered with its
address range and file; the handler looks the faulting address up, removes
onnxop's temporary files, writes ``onnxop: error: FILE: file was truncated
while onnxop read it: ...`` naming the file and the missing bytes, and exits
2, as a file found truncated or changed by a read is (an input error). A fault outside
every registered mapping is not ours: the default action is restored
(``SA_RESETHAND``) and the signal raised again, as before.

Linux on x86-64 and aarch64 (the struct layouts below); elsewhere
``install()`` does nothing and the default action stays.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import weakref
from typing import Any

_SA_SIGINFO = 0x4
_SA_NODEFER = 0x40000000
_SA_RESETHAND = 0x80000000


class _SigInfo(ctypes.Structure):
    # si_signo, si_errno, si_code, (padding), then the union; for SIGBUS the
    # union starts with si_addr (offset 16 on 64-bit Linux)
    _fields_ = [("si_signo", ctypes.c_int), ("si_errno", ctypes.c_int), ("si_code", ctypes.c_int),
                ("_pad", ctypes.c_int), ("si_addr", ctypes.c_void_p)]


_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(_SigInfo), ctypes.c_void_p)


class _SigAction(ctypes.Structure):
    _fields_ = [("sa_sigaction", _HANDLER), ("sa_mask", ctypes.c_ulong * 16), ("sa_flags", ctypes.c_int),
                ("sa_restorer", ctypes.c_void_p)]


# start address -> (end address, label, path, bytes the mapping expects the file to hold)
_maps: dict[int, tuple[int, str, str, int]] = {}
_lock = threading.Lock()
_installed: Any = None  # the ctypes callback, kept alive


def register(array: Any, label: str, path: str, file_end: int) -> None:
    """``array`` (a view of a mapping) reads ``path`` up to byte ``file_end``;
    forgotten when the array is."""
    start = array.__array_interface__["data"][0]
    end = start + array.nbytes
    with _lock:
        _maps[start] = (end, label, path, file_end)
    weakref.finalize(array, _forget, start)


def _forget(start: int) -> None:
    with _lock:
        _maps.pop(start, None)


def _on_sigbus(signum: int, info: Any, context: Any) -> None:
    addr = info.contents.si_addr or 0
    for start, (end, label, path, file_end) in list(_maps.items()):
        if start <= addr < end:
            break
    else:
        # not one of our mappings: SA_RESETHAND restored the default action; raised
        # again (SA_NODEFER: at once) it ends the process as it would have
        signal.raise_signal(signal.SIGBUS)
        return
    try:
        now = os.stat(path).st_size
        missing = f"it now has {now} bytes, {max(file_end - now, 0)} of the {file_end} needed are missing"
    except OSError as e:
        missing = f"it cannot be read any more ({e.strerror})"
    # control characters of the name escaped as error lines escape them (core sits below render/)
    name = "".join(c if c.isprintable() else repr(c)[1:-1] for c in label)
    line = f"{name}: file was truncated while onnxop read it: {missing}; not used"
    try:
        atomic = sys.modules.get("onnxop_cli.io.atomic")
        if atomic is not None:
            atomic.remove_leftovers()
    finally:
        os.write(2, f"onnxop: error: {line}\n".encode("utf-8", "backslashreplace"))
        os._exit(2)  # ExitCode.USAGE: what FileBytes says of a truncated file


def install() -> None:
    """Install the handler (once; the console entry point calls it)."""
    global _installed
    if _installed is not None or not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        handler = _HANDLER(_on_sigbus)
        action = _SigAction()
        action.sa_sigaction = handler
        action.sa_flags = _SA_SIGINFO | _SA_RESETHAND | _SA_NODEFER
        if libc.sigaction(int(signal.SIGBUS), ctypes.byref(action), None) == 0:
            _installed = handler
    except (OSError, AttributeError):
        pass

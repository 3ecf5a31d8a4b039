"""The tools of the hostile-input tests (test_hostile_*.py): onnxop run in a
thread with a timeout, the files a folder holds, messages matched,
hand-made .npy bytes, and a tensor that streams in many chunks."""

from __future__ import annotations

import io
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.cli.main import run

TIMEOUT = 60  # seconds: a run that takes longer is a hang


def cli(capsys, *argv, timeout: float = TIMEOUT):
    """Run onnxop in-process, in a thread, so that a hang fails the test
    instead of stalling the suite."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(run([str(x) for x in argv])), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"onnxop {' '.join(map(str, argv))} hung for {timeout} s"
    out, err = capsys.readouterr()
    return result[0], out, err


def files(folder: Path) -> list[str]:
    """Every file under ``folder`` (temporary files included), relative."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir())


def matches(message: str, expected: str) -> bool:
    """Exact, or a prefix when ``expected`` ends with '...' (the rest quotes
    a library's own words)."""
    return message.startswith(expected[:-3]) if expected.endswith("...") else message == expected


def npy(header: str, body: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    """An .npy file with any header text (no padding, no checks)."""
    h = header.encode("utf8" if version == (3, 0) else "latin1")
    length = struct.pack("<H", len(h)) if version == (1, 0) else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + length + h + body


def header(descr: str = "'<f4'", fortran: str = "False", shape: str = "(2,)") -> str:
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }\n" % (descr, fortran, shape)


def good_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    return buf.getvalue()


@pytest.fixture
def streamed(cwd, rng, monkeypatch):
    """A 64 KiB tensor that streams in 16 chunks of 4 KiB, so the writer
    thread and the reader overlap as they do on large files."""
    import onnxop_cli.gpu.copy as copy_mod

    monkeypatch.setattr(copy_mod, "DEFAULT_CHUNK", 4096)
    x = random_array(rng, (16, 1024), "float32")
    np.save(cwd / "x.npy", x)
    (cwd / "y.npy").write_bytes(b"precious")
    return x

"""Output promises for what the output path is: the longest name numpy can
save, symlinks (written through, dangling, looping), devices, FIFOs and
sockets (refused before any work), modes without setuid bits, the umask,
owners, files you may not write, hard links.

The promise each test holds is output_processes.py's.
"""

from __future__ import annotations

import ctypes
import os
import socket
import stat
from pathlib import Path

from commands import run_commands
from conftest import error_of, random_array
import numpy as np
from output_processes import OLD, onnxop, saved, temps
import pytest

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


@pytest.fixture
def a(tmp_path, rng) -> tuple[Path, bytes]:
    x = random_array(rng, (2, 3, 4), np.float32)
    np.save(tmp_path / "a.npy", x)
    return tmp_path / "a.npy", saved(x.reshape(2, -1))


def test_the_longest_name_numpy_can_save_works(backend, a, tmp_path):
    name = "n" * 251 + ".npy"  # 255 bytes: NAME_MAX
    np.save(tmp_path / name, np.zeros(1))  # numpy can
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", name, "-b", backend)
    assert code == 0, err
    assert (tmp_path / name).read_bytes() == a[1] and temps(tmp_path) == []


def test_a_symlink_is_written_through_and_stays_a_link(backend, a, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "t.npy").write_bytes(OLD)
    os.chmod(tmp_path / "real" / "t.npy", 0o640)
    os.symlink("real/t.npy", tmp_path / "hop.npy")
    os.symlink("hop.npy", tmp_path / "link.npy")  # a chain of two
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "link.npy", "-b", backend)
    assert code == 0, err
    assert os.readlink(tmp_path / "link.npy") == "hop.npy" and os.readlink(tmp_path / "hop.npy") == "real/t.npy"
    assert (tmp_path / "real" / "t.npy").read_bytes() == a[1]
    assert stat.S_IMODE(os.stat(tmp_path / "real" / "t.npy").st_mode) == 0o640
    assert temps(tmp_path) == [] and temps(tmp_path / "real") == []


def test_a_dangling_symlink_creates_its_target_as_numpy_does(backend, a, tmp_path):
    os.symlink("made.npy", tmp_path / "np.npy")
    np.save(tmp_path / "np.npy", np.zeros(1))
    assert (tmp_path / "made.npy").is_file()  # numpy.save writes through it
    os.symlink("ours.npy", tmp_path / "link.npy")
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "link.npy", "-b", backend)
    assert code == 0, err
    assert (tmp_path / "link.npy").is_symlink() and (tmp_path / "ours.npy").read_bytes() == a[1]


def refused(tmp_path: Path, output: str, backend: str) -> str:
    code, out, err = onnxop(tmp_path, "flatten", "a.npy", "-o", output, "-b", backend, "--json")
    assert code == 2, err
    assert temps(tmp_path) == []
    return error_of(err)


def test_a_symlink_loop_is_refused(backend, a, tmp_path):
    os.symlink("loop2.npy", tmp_path / "loop.npy")
    os.symlink("loop.npy", tmp_path / "loop2.npy")
    assert refused(tmp_path, "loop.npy", backend) == "loop.npy: the symlink leads into a loop"


def test_devices_fifos_and_sockets_are_refused_before_any_work(backend, a, tmp_path):
    """The three refusals in one onnxop process (tests/commands.py): the file types are tested."""
    os.symlink("/dev/null", tmp_path / "null.npy")
    os.mkfifo(tmp_path / "fifo.npy")  # opening it would block: it is refused from its mode
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.npy"))
    try:
        done = run_commands([(tmp_path, ["flatten", "a.npy", "-o", name, "-b", backend, "--json"])
                             for name in ("null.npy", "fifo.npy", "sock.npy")])
    finally:
        server.close()
    for result in done:
        assert result.returncode == 2, result.stderr
    null, fifo, sock = (error_of(result.stderr) for result in done)
    assert null == (
        "null.npy: is a character device (the symlink leads to /dev/null), not a regular file; "
        "onnxop writes regular files only"
    )
    assert (tmp_path / "null.npy").is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert "fifo.npy: is a FIFO, not a regular file" in fifo
    assert "sock.npy: is a socket, not a regular file" in sock
    assert temps(tmp_path) == []


def test_modes_are_carried_without_setuid_setgid_sticky(backend, a, tmp_path):
    """Four modes, a folder each, in one onnxop process (tests/commands.py)."""
    modes = ((0o4755, 0o755), (0o2640, 0o640), (0o1604, 0o604), (0o600, 0o600))
    for before, _ in modes:
        folder = tmp_path / oct(before)
        folder.mkdir()
        (folder / "y.npy").write_bytes(OLD)
        os.chmod(folder / "y.npy", before)
    done = run_commands([(tmp_path / oct(before), ["flatten", a[0], "-o", "y.npy", "-b", backend])
                         for before, _ in modes])
    for (before, after), result in zip(modes, done):
        assert result.returncode == 0, result.stderr
        assert stat.S_IMODE(os.stat(tmp_path / oct(before) / "y.npy").st_mode) == after, oct(before)


def test_a_new_file_gets_0666_minus_the_umask(backend, a, tmp_path):
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "y.npy", "-b", backend,
                          preexec_fn=lambda: os.umask(0o027))
    assert code == 0, err
    assert stat.S_IMODE(os.stat(tmp_path / "y.npy").st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file to another user")
def test_an_existing_files_owner_is_kept(backend, a, tmp_path):
    (tmp_path / "y.npy").write_bytes(OLD)
    os.chown(tmp_path / "y.npy", 65534, 65534)
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    st = os.stat(tmp_path / "y.npy")
    assert (st.st_uid, st.st_gid) == (65534, 65534)


def _without_dac_override() -> None:
    """In the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the
    bounding set, so root is held to file modes as any user is."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_file_you_may_not_write_is_refused(backend, a, tmp_path):
    """numpy.save fails with EACCES on a read-only file; so does onnxop, up front."""
    (tmp_path / "y.npy").write_bytes(OLD)
    os.chmod(tmp_path / "y.npy", 0o444)
    as_user = {"preexec_fn": _without_dac_override} if os.geteuid() == 0 else {}
    code, out, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "y.npy", "-b", backend, **as_user)
    assert code == 2, err
    assert error_of(err) == "y.npy: permission denied: the file is not writable for you"
    assert (tmp_path / "y.npy").read_bytes() == OLD and temps(tmp_path) == []


def test_hard_links_part(backend, a, tmp_path):
    """The rename gives the name a new file; another hard link keeps the old (README)."""
    (tmp_path / "y.npy").write_bytes(OLD)
    os.link(tmp_path / "y.npy", tmp_path / "alias.npy")
    code, _, err = onnxop(tmp_path, "flatten", "a.npy", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert (tmp_path / "y.npy").read_bytes() == a[1] and (tmp_path / "alias.npy").read_bytes() == OLD

"""Output promises, tested the way failures happen: separate onnxop
processes, real signals, real symlinks, modes, devices and a full filesystem.

Every test checks the outcome and the absence of leftovers: after any run,
either the new output is in place (exit 0) or the old one is byte for byte as
it was (non-zero exit), and no temporary file is left. Where the file or the
filesystem is tested, not the process (the .pb bytes, a full disk, modes,
devices), a test's commands run in one process (tests/commands.py).
"""

from __future__ import annotations

import ctypes
import io
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from commands import run_commands
from conftest import error_of, random_array, seeded_rng

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

TIMEOUT = 120  # seconds: a run that takes longer is a hang
OLD = b"precious: the output before this run"
TMP_NAME = re.compile(r"^\.onnxop-(\d+)-[a-z0-9]{4}\.tmp$")
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
MESSAGE = {signal.SIGINT: "interrupted", signal.SIGTERM: "interrupted by SIGTERM", signal.SIGHUP: "interrupted by SIGHUP"}


def start(folder: Path, *argv, **kw) -> subprocess.Popen:
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **kw}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "onnxop_cli", *map(str, argv)], cwd=folder, env=env, **kw)


def onnxop(folder: Path, *argv, **kw) -> tuple[int, str, str]:
    proc = start(folder, *argv, **kw)
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


def temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".onnxop-")]


def saved(array: np.ndarray) -> bytes:
    """What numpy.save writes for ``array``: the reference for a .npy output."""
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, bytes]:
    """A 256 MiB input (64 chunks of 4 MiB) and the bytes its flatten gives."""
    folder = tmp_path_factory.mktemp("big")
    x = random_array(np.random.default_rng(11), (64, 2**20), np.float32)
    np.save(folder / "x.npy", x)
    return folder / "x.npy", saved(x.reshape(64, -1))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, bytes]:
    """A 16 MiB input: long enough to aim at, short enough to run many times."""
    folder = tmp_path_factory.mktemp("small")
    x = random_array(np.random.default_rng(12), (4, 2**20), np.float32)
    np.save(folder / "x.npy", x)
    return folder / "x.npy", saved(x.reshape(4, -1))


def wait_for_temp(proc: subprocess.Popen, folder: Path, at_least: int = 0) -> float:
    """Wait until the output's temporary file holds ``at_least`` bytes; the time then."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = temps(folder)
        if found:
            try:
                if found[0].stat().st_size >= at_least:
                    return time.monotonic()
            except FileNotFoundError:
                pass
        assert proc.poll() is None, "onnxop finished before it could be interrupted"
        assert time.monotonic() < deadline, "onnxop never started writing"
        time.sleep(0.001)


def check_outcome(proc, out, err, sig, target: Path, new: bytes) -> str:
    """Exit 0 and the new output, or 128+n, one line and the old output; never a temporary file."""
    assert temps(target.parent) == [], (proc.returncode, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == 0:
        assert target.read_bytes() == new, "exit code 0 but the output is not the new one"
        return "done"
    assert proc.returncode == 128 + sig, err
    assert out == "" and error_of(err) == MESSAGE[sig]
    assert target.read_bytes() == OLD, f"exit code {proc.returncode} but the old output is gone"
    return "interrupted"


# ------------------------------------------------------------------ signals


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_mid_stream_leaves_the_old_output(backend, big, tmp_path, sig):
    """Two 4 MiB chunks into a 256 MiB write: 128+n, one line, the old output."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert out == "" and error_of(err) == MESSAGE[sig]
    assert (tmp_path / "y.npy").read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.npy"]


@pytest.mark.parametrize("suffix", [".npz", ".pb"])
def test_sigterm_mid_stream_into_an_archive_or_a_tensorproto(backend, big, tmp_path, suffix):
    x, _ = big
    target = tmp_path / f"y{suffix}"
    target.write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", target.name, "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert out == "" and error_of(err) == "interrupted by SIGTERM"
    assert target.read_bytes() == OLD and temps(tmp_path) == []


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_early_stops_before_anything_is_written(backend, small, tmp_path, sig):
    """While Python starts, while modules load, while the device opens: the
    old output stays and nothing is left. Once onnxop's handlers are in
    place (they are installed before anything else loads) the end is one
    line and 128+n; before that the signal's default action ends Python."""
    x, new = small
    target = tmp_path / "y.npy"
    for delay in (0.0, 0.05, 0.15, 0.3, 0.5):
        target.write_bytes(OLD)
        proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
        try:
            time.sleep(delay)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        if proc.returncode not in (0, 128 + sig):
            # Python was still starting, before onnxop's handlers: the
            # default action (killed by the signal; SIGINT's KeyboardInterrupt)
            assert proc.returncode in (-sig, 1), err
            assert err == "" or err.rstrip().endswith("KeyboardInterrupt"), err
            assert target.read_bytes() == OLD and temps(tmp_path) == []
            continue
        check_outcome(proc, out, err, sig, target, new)


def test_signals_around_the_final_rename_never_lie(backend, small, tmp_path, request):
    """Many runs, each sent a signal at a random moment near the end of its
    write: just before, during or just after the rename, or as the process
    exits. Each ends either done (exit 0, new output) or interrupted (128+n,
    the old output), never a mix, never a temporary file; both outcomes must
    have been seen, so the window was hit."""
    x, new = small
    target = tmp_path / "y.npy"
    # one run to learn how long the write takes here (temporary file seen -> gone)
    target.write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    began = wait_for_temp(proc, tmp_path)
    while temps(tmp_path) and proc.poll() is None:
        time.sleep(0.001)
    span = max(time.monotonic() - began, 0.005)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and target.read_bytes() == new, err

    seen = {"done": 0, "interrupted": 0}
    rng = seeded_rng(request)
    tries = 0
    # 12 runs (each signal four times), more until each outcome was seen twice: a run is a
    # process start (about 0.45 CPU s), and the outcomes, not the count, are what is checked
    while tries < 12 or (min(seen.values()) < 2 and tries < 60):
        sig = SIGNALS[tries % 3]
        tries += 1
        target.write_bytes(OLD)
        proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
        try:
            began = wait_for_temp(proc, tmp_path)
            time.sleep(rng.uniform(0.3, 1.6) * span)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        seen[check_outcome(proc, out, err, sig, target, new)] += 1
    assert min(seen.values()) >= 1, f"the signals missed the end of the write: {seen} in {tries} runs"


def test_a_second_signal_does_not_cut_the_cleanup_short(backend, big, tmp_path):
    """SIGTERM, then Ctrl-C while onnxop unwinds: still one line, the code
    of the signal handled first (Python runs handlers of signals that came
    together in number order), the old output and no temporary file."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    first = signal.Signals(proc.returncode - 128)
    assert first in (signal.SIGTERM, signal.SIGINT), err
    assert out == "" and error_of(err) == MESSAGE[first]
    assert (tmp_path / "y.npy").read_bytes() == OLD and temps(tmp_path) == []


def test_a_signal_with_a_progress_bar_on_a_terminal(backend, big, tmp_path):
    """The bar (a rich thread drawing on stderr) ends with the run: one error line after it."""
    import pty

    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    leader, follower = pty.openpty()
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend, stderr=follower)
    os.close(follower)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    chunks = []
    while True:
        try:
            data = os.read(leader, 1 << 16)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    err = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 143, err
    assert "Traceback" not in err and err.rstrip().endswith("onnxop: error: interrupted by SIGTERM"), err
    assert (tmp_path / "y.npy").read_bytes() == OLD and temps(tmp_path) == []


def test_sigkill_leaves_one_recognisable_temporary_file(backend, big, tmp_path):
    """What the README says a SIGKILL can leave: one .onnxop-<pid>-XXXX.tmp."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.kill()
        proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    left = temps(tmp_path)
    assert len(left) == 1 and len(left[0].name) <= 24
    assert TMP_NAME.match(left[0].name).group(1) == str(proc.pid)
    assert (tmp_path / "y.npy").read_bytes() == OLD


# ------------------------------------------------------------------ names, links, modes


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


# ------------------------------------------------------------------ a full disk


@pytest.fixture
def tiny_fs(tmp_path):
    """An 8 MiB tmpfs (root only; skipped, with the reason, where mount is not allowed)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_one_line_and_leaves_the_old_output(backend, small, tiny_fs):
    """Each format's writer on the full tmpfs, one after the other in one onnxop process
    (tests/commands.py): the filesystem is what is tested, not the process."""
    x, _ = small
    suffixes = (".npy", ".npz", ".pb")
    for suffix in suffixes:
        (tiny_fs / f"y{suffix}").write_bytes(OLD)
    done = run_commands([(tiny_fs, ["flatten", x, "-o", f"y{suffix}", "-b", backend]) for suffix in suffixes])
    for suffix, result in zip(suffixes, done):
        assert result.returncode == 1, (suffix, result.stderr)
        assert error_of(result.stderr) == f"y{suffix}: cannot write: No space left on device"
        assert (tiny_fs / f"y{suffix}").read_bytes() == OLD
    assert temps(tiny_fs) == []


# ------------------------------------------------------------------ .npz in place, .pb streamed


def raw_entries(path: Path) -> dict[str, bytes]:
    """Each member's local header and stored bytes, as they sit in the archive."""
    data = path.read_bytes()
    out = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            start = info.header_offset
            n, m = int.from_bytes(data[start + 26 : start + 28], "little"), int.from_bytes(data[start + 28 : start + 30], "little")
            out[info.filename] = data[start : start + 30 + n + m + info.compress_size]
    return out


def test_an_npz_written_in_place_keeps_its_other_members(backend, tmp_path, rng):
    members = {k: random_array(rng, s, np.float32) for k, s in (("w", (2, 3, 4)), ("bias", (6,)), ("z", (3, 3)))}
    np.savez_compressed(tmp_path / "m.npz", **members)
    before = raw_entries(tmp_path / "m.npz")
    code, _, err = onnxop(tmp_path, "unsqueeze", "m.npz", "-m", "bias", "--axes", "0", "-o", "m.npz", "-b", backend)
    assert code == 0, err
    after = raw_entries(tmp_path / "m.npz")
    assert list(after) == ["w.npy", "bias.npy", "z.npy"]  # in their places
    assert after["w.npy"] == before["w.npy"] and after["z.npy"] == before["z.npy"]  # byte for byte, deflated
    with np.load(tmp_path / "m.npz") as got:
        assert got["bias"].tobytes() == members["bias"].tobytes() and got["bias"].shape == (1, 6)
        assert got["w"].tobytes() == members["w"].tobytes()
    assert temps(tmp_path) == []
    # -o another archive holds just the member
    code, _, err = onnxop(tmp_path, "unsqueeze", "m.npz", "-m", "z", "--axes", "0", "-o", "other.npz", "-b", backend)
    assert code == 0, err
    assert list(raw_entries(tmp_path / "other.npz")) == ["z.npy"]


def test_a_damaged_member_kept_in_place_is_refused(backend, tmp_path, rng):
    """A member that is only copied is not inflated, but its entry must be
    where the directory says: else exit 2 and the archive as it was."""
    np.savez(tmp_path / "m.npz", b=random_array(rng, (2, 2), np.float32), a=random_array(rng, (4,), np.float32))
    data = bytearray((tmp_path / "m.npz").read_bytes())
    with zipfile.ZipFile(tmp_path / "m.npz") as archive:
        data[archive.getinfo("a.npy").header_offset] = 0  # its local header's signature
    (tmp_path / "m.npz").write_bytes(bytes(data))
    code, _, err = onnxop(tmp_path, "flatten", "m.npz", "-m", "b", "--axis", "0", "-o", "m.npz", "-b", backend)
    assert code == 2, err
    assert error_of(err) == "m.npz[a]: no local header where the archive's directory says"
    assert (tmp_path / "m.npz").read_bytes() == bytes(data) and temps(tmp_path) == []


def test_an_npz_with_data_descriptors_is_updated_in_place(backend, tmp_path, rng):
    """Entries written to a stream carry a data descriptor after their data; it is copied too."""

    class Stream(io.RawIOBase):
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += b
            return len(b)

    keep, change = random_array(rng, (5, 7), np.float64), random_array(rng, (2, 3), np.int32)
    stream = Stream()
    with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in (("change", change), ("keep", keep)):
            with archive.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, array)
    (tmp_path / "d.npz").write_bytes(bytes(stream.data))
    code, _, err = onnxop(tmp_path, "flatten", "d.npz", "-m", "change", "--axis", "0", "-o", "d.npz", "-b", backend)
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / "d.npz") as archive:
        assert archive.testzip() is None
    with np.load(tmp_path / "d.npz") as got:
        assert got.files == ["change", "keep"]
        assert got["keep"].tobytes() == keep.tobytes() and got["change"].shape == (1, 6)


def test_a_pb_output_is_onnxs_own_serialisation(backend, tmp_path, rng):
    """float32, int8 and float64 written as .pb, in one onnxop process (tests/commands.py)."""
    import onnx
    from onnx import numpy_helper

    inputs = {}
    for dtype in (np.float32, np.int8, np.float64):
        name = np.dtype(dtype).name
        inputs[name] = random_array(rng, (3, 5, 7), dtype)
        (tmp_path / name).mkdir()
        np.save(tmp_path / name / "t.npy", inputs[name])
    done = run_commands([(tmp_path / name, ["flatten", "t.npy", "-o", "t.pb", "-b", backend]) for name in inputs])
    for (name, x), result in zip(inputs.items(), done):
        assert result.returncode == 0, (name, result.stderr)
        expected = numpy_helper.from_array(x.reshape(3, -1), "t").SerializeToString()
        assert (tmp_path / name / "t.pb").read_bytes() == expected, name
        assert onnx.load_tensor(str(tmp_path / name / "t.pb")).raw_data == x.tobytes(), name


def test_a_signal_wrapped_by_python_is_still_an_interruption():
    """Python 3.11 wraps an exception raised in __set_name__ (a dataclass
    being defined while a module loads) in a RuntimeError: a signal that
    lands there must still end the run as that signal, in one line."""
    import signal as signals_module

    from onnxop_cli.cli.main import _describe
    from onnxop_cli.errors import Interrupted, interruption

    class Trap:
        def __set_name__(self, owner, name):
            raise Interrupted.by(signals_module.SIGTERM)

    with pytest.raises(BaseException) as caught:
        type("Defined", (), {"field": Trap()})
    found = interruption(caught.value)
    assert found is not None and found.exit_code == 143
    assert _describe(caught.value, ["flatten"]) == ("interrupted by SIGTERM", 143)
    assert interruption(RuntimeError("no signal here")) is None

"""Output promises on a full filesystem: one line, and the old output left as
it was.

The promise each test holds is output_processes.py's.
"""

from __future__ import annotations

import re
import subprocess

from commands import run_commands
from conftest import error_of
from output_processes import OLD, temps
from output_processes import small  # noqa: F401 (a fixture)
import numpy as np
import pytest

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


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
        # 16 MiB into 8 MiB: refused before the first byte (io/npy.check_room)
        assert re.fullmatch(rf"y\{suffix}: the output needs \d+ bytes \(16\.0 MiB\) and its filesystem has \d+ free "
                            rf"\([\d.]+ (bytes|KiB|MiB)\); not written", error_of(result.stderr)), result.stderr
        assert (tiny_fs / f"y{suffix}").read_bytes() == OLD
    assert temps(tiny_fs) == []


def test_an_output_larger_than_the_free_space_is_refused_before_a_byte(backend, tmp_path):
    """A Tile of 426 PiB with -o is refused at once, naming both sizes (it wrote until the disk
    was full: minutes, and a full disk for every other program, before the same exit 1); each
    format, nothing left, an old output kept. The free space is the filesystem's, as it is now."""
    a = tmp_path / "a.npy"
    np.save(a, np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
    suffixes = (".npy", ".npz")  # (a .pb holds at most 2 GiB: refused as such first)
    for suffix in suffixes:
        (tmp_path / f"y{suffix}").write_bytes(OLD)
    done = run_commands([(tmp_path, ["tile", a, "--repeats", "100000,100000,100000,1", "-o", f"y{suffix}",
                                     "-b", backend]) for suffix in suffixes], timeout=60)
    for suffix, result in zip(suffixes, done):
        assert result.returncode == 1, (suffix, result.stderr)
        assert re.fullmatch(rf"y\{suffix}: the output needs 480000000000000000 bytes \(426\.3 PiB\) and its "
                            r"filesystem has \d+ free \([\d.]+ \w+\); not written", error_of(result.stderr))
        assert (tmp_path / f"y{suffix}").read_bytes() == OLD
    assert temps(tmp_path) == []

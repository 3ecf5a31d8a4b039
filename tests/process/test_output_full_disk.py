"""Output promises on a full filesystem: one line, and the old output left as
it was.

The promise each test holds is output_processes.py's.
"""

from __future__ import annotations

import subprocess

from commands import run_commands
from conftest import error_of
from output_processes import OLD, temps
from output_processes import small  # noqa: F401 (a fixture)
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
        assert error_of(result.stderr) == f"y{suffix}: cannot write: No space left on device"
        assert (tiny_fs / f"y{suffix}").read_bytes() == OLD
    assert temps(tiny_fs) == []

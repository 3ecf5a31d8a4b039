"""Each input is opened once and read from that descriptor, on real files and
real processes: a file renamed over the input while a large flatten runs
cannot mix in (an .npy, an .npz, a .pb's external data); one truncated or
rewritten in place is refused in one line with the right figures; a batch
releases each input once it is done and does not run out of descriptors;
show maps a large input from its descriptor.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of, random_array
from input_runs import ONNXOP, names
from onnxop_cli.errors import ExitCode
from onnxop_cli.io.atomic import TMP_PREFIX, TMP_SUFFIX

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


# A run long enough to act on while it reads: the action comes once 8 MiB of output are written, 56 MiB
# before the end (each test asserts it came before half), and show maps an input of this size
# (core/sources.py's MAP_THRESHOLD, 64 MiB: the smallest mapped). 256 MiB proved no more, at 4x the
# CPU seconds (the files drawn, written, streamed and compared).
BIG = 64 << 20


def start(argv: list, cwd: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [*ONNXOP, *map(str, argv)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw
    )


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out, err


@pytest.fixture
def big_dir(tmp_path_factory):
    """A folder in /tmp for the large files, removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="onnxop-trust-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def random_bytes(rng, n: int = BIG) -> np.ndarray:
    """``n`` random bytes as a (256, -1) uint8 array: drawn 8 at a time (0.3 CPU s for 256 MiB;
    rng.bytes takes 1.4)."""
    return rng.integers(0, 1 << 64, n // 8, dtype=np.uint64).view(np.uint8).reshape(256, -1)


def big_pair(folder: Path, rng) -> tuple[np.ndarray, np.ndarray]:
    """x.npy and other.npy: the same header, random bytes, every one of them different
    (other is x inverted: a byte of it mixed in can never pass for x's)."""
    x = random_bytes(rng)
    other = ~x
    np.save(folder / "x.npy", x)
    np.save(folder / "other.npy", other)
    return x, other


def act_mid_run(proc: subprocess.Popen, folder: Path, action, total: int) -> int:
    """Wait until the output's temporary file holds some data (the input is
    being read), run ``action``, and return how much the output held then.
    The caller checks it was well before the end."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        for p in folder.iterdir():
            if p.name.startswith(TMP_PREFIX) and p.name.endswith(TMP_SUFFIX):  # the output's temporary file
                try:
                    size = p.stat().st_size
                except FileNotFoundError:
                    continue
                if size >= 8 << 20:
                    action()
                    return size
        time.sleep(0.005)  # a look (a listing and a stat) each 5 ms: 8 MiB of 256 take longer to write
    pytest.fail(f"the run ended before it could be acted on: {finish(proc)}")


def test_an_input_renamed_over_mid_run_does_not_mix_in(backend, big_dir):
    """mv other.npy x.npy while x.npy streams through the GPU: the output is
    x.npy's original data (as np.load reads one file), exit 0."""
    rng = np.random.default_rng(11)
    x, _ = big_pair(big_dir, rng)
    proc = start(["flatten", "x.npy", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, lambda: os.rename(big_dir / "other.npy", big_dir / "x.npy"), BIG)
    code, out, err = finish(proc)
    assert at < BIG // 2  # the rename came with most of the data still to read
    assert code == 0, err
    assert err == ""
    y = np.load(big_dir / "y.npy", mmap_mode="r")
    assert y.shape == (1, x.size)
    assert np.array_equal(y.reshape(-1), x.reshape(-1))  # every byte from the original file
    assert names(big_dir) == ["x.npy", "y.npy"]


def test_an_input_truncated_mid_run_is_refused_with_the_right_figures(backend, big_dir):
    rng = np.random.default_rng(12)
    big_pair(big_dir, rng)
    (big_dir / "y.npy").write_bytes(b"precious")
    size = (big_dir / "x.npy").stat().st_size
    header = size - BIG
    cut = header + BIG // 2 + 12345

    def action():
        os.truncate(big_dir / "x.npy", cut)

    proc = start(["flatten", "x.npy", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, action, BIG)
    code, out, err = finish(proc)
    assert at < BIG // 2
    assert code == ExitCode.USAGE, err
    assert error_of(err) == (  # the words of a mapped read's SIGBUS (test_input_truncated): one message
        f"x.npy: file was truncated while onnxop read it: it now has {cut} bytes, "
        f"{header + BIG - cut} of the {header + BIG} needed are missing; not used"
    )
    assert out == ""
    assert (big_dir / "y.npy").read_bytes() == b"precious"
    assert names(big_dir) == ["other.npy", "x.npy", "y.npy"]


def test_an_input_rewritten_in_place_mid_run_is_refused(backend, big_dir):
    """Same size, new bytes (an editor saving in place): the modification
    time changes, and what was read may be half old: refused, nothing written."""
    rng = np.random.default_rng(13)
    big_pair(big_dir, rng)

    def action():
        with open(big_dir / "x.npy", "r+b") as f:
            f.seek(-4096, os.SEEK_END)
            f.write(rng.bytes(4096))

    proc = start(["flatten", "x.npy", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, action, BIG)
    code, out, err = finish(proc)
    assert at < BIG // 2
    assert code == ExitCode.USAGE, err
    assert error_of(err) == "x.npy: the file changed while onnxop read it (modified in place); not used"
    assert names(big_dir) == ["other.npy", "x.npy"]


def test_an_npz_archive_renamed_over_mid_run_does_not_mix_in(backend, big_dir):
    """The archive is opened once too: its members come from that descriptor."""
    rng = np.random.default_rng(14)
    x = random_bytes(rng)
    np.savez(big_dir / "x.npz", a=x)
    np.savez(big_dir / "other.npz", a=~x)
    proc = start(["flatten", "x.npz", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, lambda: os.rename(big_dir / "other.npz", big_dir / "x.npz"), BIG)
    code, _, err = finish(proc)
    assert code == 0, err
    assert at < BIG // 2
    assert np.array_equal(np.load(big_dir / "y.npy", mmap_mode="r").reshape(-1), x.reshape(-1))
    assert names(big_dir) == ["x.npz", "y.npy"]


def test_pb_external_data_renamed_over_mid_run_does_not_mix_in(backend, big_dir):
    from onnx import TensorProto

    rng = np.random.default_rng(15)
    data = random_bytes(rng)
    data, other = data.tobytes(), (~data).tobytes()
    (big_dir / "w.bin").write_bytes(data)
    (big_dir / "other.bin").write_bytes(other)
    proto = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[256, BIG // 256])
    proto.data_location = TensorProto.EXTERNAL
    entry = proto.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    (big_dir / "x.pb").write_bytes(proto.SerializeToString())
    proc = start(["flatten", "x.pb", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, lambda: os.rename(big_dir / "other.bin", big_dir / "w.bin"), BIG)
    code, _, err = finish(proc)
    assert code == 0, err
    assert at < BIG // 2
    assert np.load(big_dir / "y.npy", mmap_mode="r").tobytes() == data
    assert names(big_dir) == ["w.bin", "x.pb", "y.npy"]


def test_a_parked_input_that_was_replaced_is_refused(tmp_path, monkeypatch):
    """Past the descriptor budget an input is closed and reopened when it is
    read; it must then be the same, unchanged file."""
    from onnxop_cli.core import files
    from onnxop_cli.errors import InputError

    monkeypatch.setattr(files, "budget", lambda: 1)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(name.encode() * 10)
    a = files.InputFile(tmp_path / "a")
    b = files.InputFile(tmp_path / "b")  # parks a
    buf = memoryview(bytearray(10))
    assert a.pread_into(0, buf) == 10 and bytes(buf) == b"a" * 10  # reopened: same file
    os.rename(tmp_path / "c", tmp_path / "a")
    b.fd  # parks a again
    with pytest.raises(InputError, match="a: the file was replaced or changed after onnxop opened it"):
        a.pread_into(0, buf)
    a.close(), b.close()


def open_inputs(folder: Path) -> list[str]:
    """The files in ``folder`` (not below) this process holds a descriptor on."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if os.path.dirname(target) == str(folder) and not os.path.isdir(target):  # (an output's folder is held too)
            found.append(target)
    return found


def test_a_batch_releases_each_input_once_it_is_done(backend, cwd, rng, capsys, monkeypatch):
    """Descriptors are held while a job runs and closed after it, for every format."""
    from onnxop_cli.core import files

    arrays = {f"t{i}": random_array(rng, (2, i + 1, 3), "float32") for i in range(4)}
    for name, arr in arrays.items():
        np.save(cwd / f"{name}.npy", arr)
    np.savez(cwd / "z.npz", **arrays)
    (cwd / "out").mkdir()
    held = []
    real = files.InputFile.pread_into
    monkeypatch.setattr(files.InputFile, "pread_into", lambda self, *a: held.append(len(open_inputs(cwd))) or real(self, *a))
    code, _, err = cli(capsys, "flatten", *(f"{n}.npy" for n in arrays), "z.npz", "-o", "out", "-b", backend)
    assert code == 0, err
    assert open_inputs(cwd) == []
    assert held and max(held) <= 5  # never more than the inputs read up front
    for name, arr in arrays.items():
        assert np.load(cwd / "out" / f"{name}.npy").tobytes() == arr.tobytes()
    code, _, err = cli(capsys, "show", "z.npz", "t0.npy")
    assert code == 0, err
    assert open_inputs(cwd) == []


def test_a_batch_of_more_inputs_than_descriptors(backend, tmp_path, rng):
    """300 inputs under a limit of 128 descriptors (soft and hard): inputs
    past the budget are parked and reopened; every output is right."""
    import resource

    arrays = [random_array(rng, (2, 3), "int16") for _ in range(300)]
    for i, arr in enumerate(arrays):
        np.save(tmp_path / f"x{i}.npy", arr)
    (tmp_path / "out").mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    proc = start(["flatten", *(f"x{i}.npy" for i in range(300)), "-o", "out", "-q", "-b", backend],
                 tmp_path, preexec_fn=limit)
    code, out, err = finish(proc)
    assert code == 0, err
    for i, arr in enumerate(arrays):
        assert np.load(tmp_path / "out" / f"x{i}.npy").tobytes() == arr.tobytes()
    assert len(names(tmp_path / "out")) == 300


def test_an_npz_archive_truncated_mid_run_is_refused(backend, big_dir):
    """The archive's size is checked (fstat) around each chunk: a truncation
    in place is one line, nothing written, the existing output kept."""
    rng = np.random.default_rng(16)
    np.savez(big_dir / "x.npz", a=random_bytes(rng))
    size = (big_dir / "x.npz").stat().st_size
    (big_dir / "y.npy").write_bytes(b"precious")
    proc = start(["flatten", "x.npz", "--axis", "0", "-o", "y.npy", "-b", backend], big_dir)
    at = act_mid_run(proc, big_dir, lambda: os.truncate(big_dir / "x.npz", size // 2), BIG)
    code, out, err = finish(proc)
    assert at < BIG // 2
    assert code == ExitCode.USAGE, err
    assert error_of(err) == (
        f"x.npz: the file changed while onnxop read it (modified in place: {size} -> {size // 2} bytes); not used"
    )
    assert out == ""
    assert (big_dir / "y.npy").read_bytes() == b"precious"
    assert names(big_dir) == ["x.npz", "y.npy"]


def test_show_maps_a_large_input_from_its_descriptor(big_dir, monkeypatch):
    """show of a large .npy maps it from the descriptor it opened: renamed
    over before the values are read, the original's values are shown."""
    from onnxop_cli.core import files
    from onnxop_cli.io import read_tensor

    rng = np.random.default_rng(17)
    x, other = big_pair(big_dir, rng)
    mapped = []
    real = files.InputFile.map
    monkeypatch.setattr(files.InputFile, "map", lambda *a: mapped.append(a[1:]) or real(*a))
    tensor = read_tensor(big_dir / "x.npy")
    os.rename(big_dir / "other.npy", big_dir / "x.npy")
    values = tensor.to_numpy()
    assert mapped == [(128, BIG)]  # mapped (not read into memory), from the descriptor
    assert np.array_equal(values[::37, ::4099], x[::37, ::4099])
    assert not np.array_equal(values[:, :64], other[:, :64])
    tensor.close()
    assert files._OPEN == {} or all(ref() is None or ref()._fd < 0 for ref in files._OPEN.values())

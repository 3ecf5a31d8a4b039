"""On real files and real processes.

3. Each input is opened once and read from that descriptor: a file renamed
   over the input while a large flatten runs cannot mix in; one truncated or
   rewritten in place is refused in one line with the right figures; a batch
   of many inputs does not run out of descriptors.
7. String tensors never blow up memory, and keep their numpy kind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from onnxop_cli.io.atomic import TMP_PREFIX, TMP_SUFFIX

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

ONNXOP = [sys.executable, "-m", "onnxop_cli"]
BIG = 256 << 20  # a run long enough to act on while it reads


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


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


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


# ------------------------------------------------------- 3. opened once


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


# ------------------------------------------------------- 7. strings


def string_pb(path: Path, long: int, empty: int) -> None:
    """A .pb of one ``long``-byte string and ``empty`` empty ones."""
    from onnx import TensorProto

    proto = TensorProto(name="s", data_type=TensorProto.STRING, dims=[empty + 1])
    proto.string_data.extend([b"a" * long] + [b""] * empty)
    path.write_bytes(proto.SerializeToString())


def peak_rss(argv: list, cwd: Path) -> tuple[int, str, str, int]:
    """Run onnxop under /usr/bin/time; returns (code, stdout, stderr, peak RSS in bytes)."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "peak %M", *ONNXOP, *map(str, argv)],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )
    lines = [line for line in done.stderr.rstrip("\n").split("\n") if not line.startswith("Command exited")]
    *err, last = lines  # (GNU time adds "Command exited with non-zero status N")
    assert last.startswith("peak "), done.stderr
    return done.returncode, done.stdout, "\n".join(err) + ("\n" if err else ""), int(last.split()[1]) * 1024


MIB = 1 << 20


def test_show_of_one_huge_string_stays_small(tmp_path):
    """One 1 MiB string and 499 empty ones: show printed a 2.1 GB fixed-width
    copy's worth of memory; now the string is cut short with its length."""
    string_pb(tmp_path / "s.pb", MIB, 499)
    code, out, err, peak = peak_rss(["show", "s.pb"], tmp_path)
    assert code == 0, err
    assert err == ""
    assert out.splitlines()[:3] == [
        "s.pb:",
        "  s: shape=(500,), dtype=object",
        "    ['" + "a" * 40 + "...' (1048576 chars), '', '',",
    ]
    assert peak < 200 * MIB, peak  # the interpreter, numpy and onnx take ~50 MiB; the string 1 MiB
    assert names(tmp_path) == ["s.pb"]


def test_print_mode_cuts_long_strings_short(backend, tmp_path):
    string_pb(tmp_path / "s.pb", 10 * MIB, 2000)
    code, out, err, peak = peak_rss(["flatten", "s.pb", "--axis", "0", "-b", backend], tmp_path)
    assert code == 0, err
    assert "    ['" + "a" * 40 + "...' (10485760 chars), '', ''," in out.splitlines()
    assert "    [['" + "a" * 40 + "...' (10485760 chars), '', ''," in out.splitlines()
    assert peak < 300 * MIB, peak


@pytest.mark.parametrize("output", ["x.npy", "x.npz"])
@pytest.mark.parametrize("long, empty", [(MIB, 499), (10 * MIB, 2000)])
def test_strings_that_need_a_huge_fixed_width_array_are_refused(tmp_path, output, long, empty):
    """flatten -o x.npy wrote 2 GB (1 MiB case) or died with MemoryError
    (10 MiB case): now one line, exit 2, the size in bytes, and nothing
    written; an existing output is kept byte for byte."""
    string_pb(tmp_path / "s.pb", long, empty)
    (tmp_path / output).write_bytes(b"precious")
    code, out, err, peak = peak_rss(["flatten", "s.pb", "--axis", "0", "-o", output], tmp_path)
    count = empty + 1
    need = count * long * 4
    where = f"{output}[s]" if output.endswith(".npz") else output
    assert code == ExitCode.USAGE, err
    assert error_of(err) == (
        f"{where}: as a .npy array (<U{long}) these {count} strings need {need} bytes, "
        f"{need // long}x the {long} bytes they hold; write a .pb (ONNX TensorProto) file instead"
    )
    assert out == ""
    assert peak < 300 * MIB, peak
    assert (tmp_path / output).read_bytes() == b"precious"
    assert names(tmp_path) == sorted(["s.pb", output])


@pytest.mark.parametrize("source", ["s.pb", "s.npz"])
def test_huge_strings_to_pb_need_no_fixed_width_array(tmp_path, source):
    """.pb and .npz (object-free) inputs to .pb: the bytes list is written as it is."""
    from onnx import load_tensor

    string_pb(tmp_path / "s.pb", 10 * MIB, 2000)
    if source == "s.npz":  # an .npz can only hold it fixed-width: a smaller one
        np.savez(tmp_path / "s.npz", s=np.array([b"a" * MIB] + [b""] * 20, dtype="S"))
    code, out, err, peak = peak_rss(["flatten", source, "--axis", "0", "-o", "x.pb"], tmp_path)
    assert code == 0, err
    proto = load_tensor(str(tmp_path / "x.pb"))  # (onnx's to_array would make the 78 GiB array itself)
    n, long = (2001, 10 * MIB) if source == "s.pb" else (21, MIB)
    assert list(proto.dims) == [1, n]
    assert list(proto.string_data) == [b"a" * long] + [b""] * (n - 1)
    assert peak < 300 * MIB, peak


@pytest.mark.parametrize("dtype", ["|S2", "|S5", "<U3", ">U3"])
@pytest.mark.parametrize("output", ["y.npy", "y.npz"])
def test_the_numpy_text_dtype_is_kept(backend, cwd, capsys, dtype, output):
    """|S2 of ASCII bytes came back as <U2; the output's dtype is the input's
    (little-endian, as every .npy onnxop writes)."""
    x = np.array([["ab", "c"], ["", "de"]], dtype=dtype.replace("S", "U"))
    x = x.astype(dtype) if "S" in dtype else x
    np.save(cwd / "x.npy", x)
    code, _, err = cli(capsys, "flatten", "x.npy", "--axis", "0", "-o", output, "-b", backend)
    assert code == 0, err
    if output.endswith(".npy"):
        y = np.load(cwd / output, allow_pickle=False)
    else:
        with np.load(cwd / output, allow_pickle=False) as archive:
            y = archive["y"]
    want = x.reshape(1, 4).astype(np.dtype(dtype).newbyteorder("<"))
    assert y.dtype == want.dtype
    assert y.tobytes() == want.tobytes()


def test_text_dtype_kept_for_non_ascii_bytes_and_through_the_api(cwd, capsys):
    import onnxop_cli

    x = np.array([b"\xff\x00a", b"\xc3\xa9"], dtype="S3")
    np.save(cwd / "x.npy", x)
    code, _, err = cli(capsys, "unsqueeze", "x.npy", "--axes", "0", "-o", "y.npy")
    assert code == 0, err
    y = np.load(cwd / "y.npy")
    assert y.dtype == np.dtype("S3") and y.tobytes() == x.tobytes()
    assert onnxop_cli.flatten(np.array([["ab"]], dtype="S2"), axis=0).dtype == np.dtype("S2")
    assert onnxop_cli.flatten(np.array([["ab"]], dtype="<U7"), axis=0).dtype == np.dtype("<U7")


def test_strings_that_would_not_fit_memory_are_refused_before_they_are_made(cwd, capsys, monkeypatch):
    from onnxop_cli.core import strings

    string_pb(cwd / "s.pb", 1000, 99)
    monkeypatch.setattr(strings, "available_memory", lambda: 5000)
    code, out, err = cli(capsys, "show", "s.pb")
    assert code == ExitCode.USAGE
    assert error_of(err).startswith("s.pb: 100 strings of ") and error_of(err).endswith(
        " bytes of memory; 5000 bytes are available"
    )


def test_running_out_of_memory_is_named(cwd, capsys, monkeypatch):
    import onnxop_cli.render.show as show

    np.save(cwd / "x.npy", np.arange(6, dtype=np.float32))

    def no_memory(*a, **kw):
        raise MemoryError("Unable to allocate 78.2 GiB for an array with shape (2001,)")

    monkeypatch.setattr(show, "stats", no_memory)
    code, out, err = cli(capsys, "show", "x.npy")
    assert code == ExitCode.ERROR
    assert error_of(err) == "out of memory: Unable to allocate 78.2 GiB for an array with shape (2001,)"


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

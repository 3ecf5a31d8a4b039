"""Outputs written in place: an .npz updated in place keeps its other members
(data descriptors too) and refuses a damaged one; a .pb output is onnx's own
serialisation.

The promise each test holds is output_processes.py's.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from commands import run_commands
from conftest import error_of, random_array
import numpy as np
from output_processes import onnxop, temps

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


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

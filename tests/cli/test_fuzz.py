"""Fuzzing the readers: valid .npy, .npz and .pb files, mutated
(bit flips, byte edits, truncations, insertions, header and structure
edits), run through the CLI in-process.

What must hold, for every mutated file and every command drawn:

- onnxop exits 0, 2, or (never) anything else; no traceback anywhere, and
  no 'internal error';
- exit 2: exactly one stderr line starting ``onnxop: error: ``, nothing on
  stdout, and the folder holds exactly the input files (no output, no
  temporary file), an output that existed before byte for byte as it was;
- exit 0: an independent reader accepts the same mutated input -- numpy
  (``np.load(allow_pickle=False)``) for .npy/.npz, onnx
  (``numpy_helper.to_array`` with the file's folder for external data) for
  .pb -- and onnxop's result is that reader's array reshaped by the ONNX
  rule, bit for bit (read back by numpy or onnx, never by onnxop); the
  folder holds the inputs and the one output file;
- never: the bytes of a file outside the folder (``../secret.bin``, reachable
  through ``..``, an absolute path or a symlink) in any output.

A quarter of the .npy cases pipe the file in as ``-`` (stdin has its own
reader); half of all cases find the output file already there. One case in
PROCESS_SHARE runs as a real ``python -m onnxop_cli`` process (a new session,
SIGKILLed with its children if it outlives TIMEOUT) under the same rules:
what a thread in this process cannot show -- the exit status the shell
sees, output written at interpreter exit, a hang that ignores Python --
is then checked too.

Where the two readers may legitimately disagree, onnxop may refuse what the
reference accepts (a dtype with no ONNX type, a string ending in NUL that no
.npy can hold, a type the output format cannot describe...), never the other
way round: every file onnxop accepts, the reference reads the same way.
(Both ignore bytes after an .npy's data; the reference is only consulted
when onnxop succeeded, so a header claiming a terabyte never reaches
numpy's allocator.)

The default run is bounded and derandomized (the same cases every time).
A longer, random run: ONNXOP_FUZZ_EXAMPLES=20000 python -m pytest tests/cli/test_fuzz.py
(examples per format and backend).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_runs
from fuzz_files import mutated_npy, mutated_npz, mutated_pb, npy_seeds, npz_seeds, pb_seeds, zip_bytes
from fuzz_runs import COMMANDS, PRECIOUS, SECRET, Place, check, onnx_array, run_process

LONG_RUN = os.environ.get("ONNXOP_FUZZ_EXAMPLES")
EXAMPLES = int(LONG_RUN or 50)  # (50, not 60: the processes take the time of the ten)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG_RUN,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


@pytest.fixture
def fuzz_dir(backend, tmp_path):
    """Each example runs in a fresh folder inside ``tmp_path``; ``secret.bin``
    sits outside it (reachable only by escaping the folder)."""
    (tmp_path / "secret.bin").write_bytes(SECRET)
    made: list[Path] = []

    def new_place() -> Place:
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        made.append(folder)
        return Place(folder, backend)

    yield new_place
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def _write(place: Place, files: dict[str, bytes]) -> list[str]:
    for name, data in files.items():
        (place.folder / name).write_bytes(data)
    return list(files)


NPY_SEEDS = npy_seeds()
NPZ_SEEDS = npz_seeds()
PB_SEEDS = pb_seeds()


def test_every_seed_is_read_correctly(fuzz_dir):
    """The unmutated seeds succeed (so the fuzz tests start from files onnxop
    reads, and their success branch is exercised)."""
    for seed in NPY_SEEDS:
        place = fuzz_dir()
        inputs = _write(place, {"x.npy": seed})
        check(place, inputs, *COMMANDS[0], lambda: {"": np.load(place.folder / "x.npy", allow_pickle=False)})
        assert (place.folder / "y.npy").exists()
    for members, compression in NPZ_SEEDS:
        place = fuzz_dir()
        inputs = _write(place, {"z.npz": zip_bytes(members, compression)})
        check(place, inputs, *COMMANDS[2], lambda: _npz_reference(place.folder / "z.npz"))
        assert (place.folder / "y.npz").exists()
    for proto, ext in PB_SEEDS:
        place = fuzz_dir()
        inputs = _write(place, {"x.pb": proto.SerializeToString(), **({"w.bin": ext} if ext else {})})
        check(place, inputs, *COMMANDS[1], lambda: _pb_reference(place.folder / "x.pb"))
        assert (place.folder / "y.pb").exists()


@FUZZ
@given(data=st.data())
def test_mutated_npy(fuzz_dir, data):
    seed = data.draw(st.sampled_from(NPY_SEEDS), label="seed")
    content = data.draw(mutated_npy(seed), label="file")
    command, output = data.draw(st.sampled_from(COMMANDS), label="command")
    stdin = data.draw(st.integers(0, 3), label="stdin") == 0  # a quarter of the cases read a pipe
    place = fuzz_dir()
    inputs = _write(place, {"x.npy": content})
    check(place, inputs, command, output, lambda: {"": np.load(place.folder / "x.npy", allow_pickle=False)},
          stdin=stdin, existing=data.draw(st.booleans(), label="existing output"))


def _npz_reference(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@FUZZ
@given(data=st.data())
def test_mutated_npz(fuzz_dir, data):
    seed = data.draw(st.sampled_from(NPZ_SEEDS), label="seed")
    content = data.draw(mutated_npz(seed), label="file")
    command, output = data.draw(st.sampled_from(COMMANDS), label="command")
    place = fuzz_dir()
    inputs = _write(place, {"z.npz": content})
    check(place, inputs, command, output, lambda: _npz_reference(place.folder / "z.npz"),
          existing=data.draw(st.booleans(), label="existing output"))


def _pb_reference(path: Path) -> dict[str, np.ndarray]:
    """onnx's reading. One documented difference: ONNX strings are bytes, and
    onnx's to_array insists on UTF-8; for other bytes the reference is the
    string_data as it is (onnxop keeps such strings as bytes)."""
    proto = onnx.load_tensor(str(path))
    return {proto.name: onnx_array(proto, path.parent)}


@FUZZ
@given(data=st.data())
def test_mutated_pb(fuzz_dir, data):
    seed = data.draw(st.sampled_from(PB_SEEDS), label="seed")
    content, ext = data.draw(mutated_pb(seed), label="file")
    command, output = data.draw(st.sampled_from(COMMANDS), label="command")
    place = fuzz_dir()
    (place.folder / "sub").mkdir()
    os.symlink(place.folder.parent / "secret.bin", place.folder / "secret_link.bin")
    inputs = _write(place, {"x.pb": content, **({"w.bin": ext} if ext is not None else {})})
    check(place, [*inputs, "secret_link.bin", "sub"], command, output, lambda: _pb_reference(place.folder / "x.pb"),
          existing=data.draw(st.booleans(), label="existing output"))


def test_a_share_of_the_cases_runs_as_real_processes(fuzz_dir, monkeypatch):
    """The process runner is used, and holds to the same rules: a clean
    refusal and a success, each checked as the fuzz cases are."""
    calls = []
    monkeypatch.setattr(fuzz_runs, "run_cli", lambda *a: calls.append(a) or pytest.fail("in-process"))
    place = fuzz_dir()
    inputs = _write(place, {"x.npy": NPY_SEEDS[0]})
    check(place, inputs, *COMMANDS[0], lambda: {"": np.load(place.folder / "x.npy", allow_pickle=False)},
          existing=True, process=True)
    assert (place.folder / "y.npy").read_bytes() != PRECIOUS
    place = fuzz_dir()
    inputs = _write(place, {"x.npy": NPY_SEEDS[0][:-1]})  # one byte short: refused
    check(place, inputs, *COMMANDS[1], lambda: pytest.fail("onnxop must refuse it"), existing=True, process=True)
    assert calls == []


def test_a_hung_process_is_killed(tmp_path, monkeypatch):
    """A run that outlives TIMEOUT is SIGKILLed (and fails the case), however it ignores signals."""
    import time

    monkeypatch.setattr(fuzz_runs, "TIMEOUT", 1)
    script = tmp_path / "onnxop_cli"
    script.mkdir()
    (script / "__init__.py").write_text("")  # a regular package: a namespace one loses to an installed onnxop_cli
    (script / "__main__.py").write_text(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    started = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match="hung for 1 s"):
        run_process(["show"], tmp_path)
    assert time.monotonic() - started < 30

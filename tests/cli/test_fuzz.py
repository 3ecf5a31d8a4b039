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

import io
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, numpy_helper

from onnxop_cli.cli.main import run
from references import same_bits

LONG_RUN = os.environ.get("ONNXOP_FUZZ_EXAMPLES")
EXAMPLES = int(LONG_RUN or 50)  # (50, not 60: the processes take the time of the ten)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG_RUN,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
TIMEOUT = 60  # seconds for one run: longer is a hang
PROCESS_SHARE = 30  # one case in this many runs as a separate process (a few per test in the default run)
SECRET = b"SECRET!!" * 4  # the file outside the folder; must never show up in an output


# ----------------------------------------------------------------- seeds


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _rng() -> np.random.Generator:
    return np.random.default_rng(20251129)


def _random(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    return raw.view(dtype).reshape(shape)


def npy_seeds() -> list[bytes]:
    rng = _rng()
    return [
        npy_bytes(_random(rng, (3, 4, 5), "<f4")),
        npy_bytes(np.asfortranarray(_random(rng, (4, 3), "<f8"))),
        npy_bytes(_random(rng, (6,), ">i4")),
        npy_bytes(_random(rng, (2, 3, 2), "|i1")),
        npy_bytes(_random(rng, (), "<f2")),
        npy_bytes(np.zeros((0, 3), "<u2")),
        npy_bytes(_random(rng, (5,), "|b1")),
        npy_bytes(np.asfortranarray(_random(rng, (2, 3), ">c8"))),
        npy_bytes(np.array([["ab", "c"], ["", "def"]])),
    ]


def zip_bytes(members: dict[str, bytes], compression: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def npz_members() -> list[dict[str, bytes]]:
    rng = _rng()
    return [
        {"a.npy": npy_bytes(_random(rng, (4, 5), "<f4"))},
        {"w.npy": npy_bytes(_random(rng, (2, 3), "<i8")), "b.npy": npy_bytes(_random(rng, (3,), ">f8"))},
        {
            "x.npy": npy_bytes(_random(rng, (2, 2, 2), "|u1")),
            "y.npy": npy_bytes(np.asfortranarray(_random(rng, (3, 2), "<i2"))),
            "z.npy": npy_bytes(_random(rng, (7,), "<f2")),
        },
    ]


def npz_seeds() -> list[tuple[dict[str, bytes], int]]:
    members = npz_members()
    return [(members[0], zipfile.ZIP_STORED), (members[1], zipfile.ZIP_DEFLATED), (members[2], zipfile.ZIP_DEFLATED),
            (members[2], zipfile.ZIP_STORED)]


def pb_seeds() -> list[tuple[TensorProto, bytes | None]]:
    """(proto, external data file or None)."""
    rng = _rng()
    raw = numpy_helper.from_array(_random(rng, (2, 3), "<f4"), "raw")
    typed_f32 = TensorProto(name="typed", data_type=TensorProto.FLOAT, dims=[3, 2],
                            float_data=[float(v) for v in rng.standard_normal(6).astype(np.float32)])
    typed_f16 = TensorProto(name="half", data_type=TensorProto.FLOAT16, dims=[4],
                            int32_data=[int(v) for v in rng.integers(0, 1 << 16, 4)])
    typed_i64 = TensorProto(name="long", data_type=TensorProto.INT64, dims=[2, 2],
                            int64_data=[int(v) for v in rng.integers(-(2**62), 2**62, 4)])
    strings = TensorProto(name="s", data_type=TensorProto.STRING, dims=[3], string_data=[b"ab", b"\xc3\xa9", b""])
    bf16 = TensorProto(name="bf", data_type=TensorProto.BFLOAT16, dims=[2, 2],
                       raw_data=_random(rng, (4,), "<u2").tobytes())
    ext_data = _random(rng, (8,), "<f4").tobytes()
    ext = TensorProto(name="ext", data_type=TensorProto.FLOAT, dims=[2, 2], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "16"), ("length", "16")):
        ext.external_data.add(key=k, value=v)
    return [(raw, None), (typed_f32, None), (typed_f16, None), (typed_i64, None), (strings, None), (bf16, None),
            (ext, ext_data)]


# ----------------------------------------------------------------- mutations

INTERESTING = [0x00, 0xFF, 0x7F, 0x80, 0x01, ord("("), ord(")"), ord(","), ord("'"), ord("0"), ord("9"), ord("-")]


@st.composite
def byte_edits(draw, data: bytes, hot: int) -> bytes:
    """1-4 byte-level edits; positions favour the first ``hot`` bytes (the
    header, where a flip changes meaning rather than values)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete", "append"]))
        size = len(out)
        if size == 0 and kind != "append":
            kind = "append"
        if kind != "append":
            limit = min(size, hot) if draw(st.booleans()) else size
            pos = draw(st.integers(0, max(0, limit - 1)))
        if kind == "flip":
            out[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            out[pos] = draw(st.one_of(st.sampled_from(INTERESTING), st.integers(0, 255)))
        elif kind == "truncate":
            del out[pos:]
        elif kind == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del out[pos : pos + draw(st.integers(1, 8))]
        else:
            out += draw(st.binary(min_size=1, max_size=32))
    return bytes(out)


DESCRS = ["'<f4'", "'>f8'", "'|u1'", "'<i8'", "'|b1'", "'<c8'", "'<U3'", "'|S2'", "'|O'", "'<M8[s]'", "'|V4'",
          "[('a', '<i4')]", "('<i4', (2,))", "'<f16'", "'x'", "'<f2'", "'<U0'", "3", "None"]
DIMS = st.one_of(st.integers(0, 6), st.sampled_from([-1, 2**31, 2**32, 2**62, 2**63, 2**64, 10**30]))


@st.composite
def npy_header_edit(draw, data: bytes) -> bytes:
    """The same data under a header written from drawn fields: dtype, order
    and shape (odd ones included), the length field right or not."""
    import ast

    version = data[6:8]
    start = 10 if version == b"\x01\x00" else 12
    (length,) = struct.unpack("<H" if start == 10 else "<I", data[8:start])
    old = ast.literal_eval(data[start : start + length].decode("latin1"))
    body = data[start + length :]
    descr = repr(old["descr"]) if draw(st.booleans()) else draw(st.sampled_from(DESCRS))
    fortran = draw(st.sampled_from(["True", "False", "False", "1", "'x'"]))
    if draw(st.booleans()):
        shape = repr(tuple(old["shape"]))
    else:
        dims = draw(st.lists(DIMS, max_size=5)) if draw(st.integers(0, 9)) else [1] * draw(st.integers(63, 70))
        shape = repr(tuple(dims))
    text = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    text += " " * draw(st.integers(0, 20)) + "\n"
    raw = text.encode("latin1")
    declared = len(raw) + draw(st.sampled_from([0, 0, 0, -1, 1, 1000]))
    prefix = b"\x93NUMPY" + version + struct.pack("<H" if start == 10 else "<I", max(0, declared) & 0xFFFF)
    return prefix + raw + body


@st.composite
def mutated_npy(draw, seed: bytes) -> bytes:
    data = draw(npy_header_edit(seed)) if draw(st.booleans()) else seed
    if draw(st.integers(0, 3)):
        data = draw(byte_edits(data, hot=140))
    return data


@st.composite
def mutated_npz(draw, seed: tuple[dict[str, bytes], int]) -> bytes:
    members, compression = dict(seed[0]), seed[1]
    how = draw(st.sampled_from(["member", "member", "directory", "bytes", "extra"]))
    if how == "member":
        name = draw(st.sampled_from(sorted(members)))
        members[name] = draw(mutated_npy(members[name]))
        return zip_bytes(members, compression)
    if how == "extra":
        extra = draw(st.sampled_from(["dup", "suffixless", "text", "path"]))
        first = sorted(members)[0]
        buf = io.BytesIO()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zipfile.ZipFile(buf, "w", compression=compression) as z:
                for name, data in members.items():
                    z.writestr(name, data)
                if extra == "dup":
                    z.writestr(first, members[first][:-1])
                elif extra == "suffixless":
                    z.writestr(first.removesuffix(".npy"), members[first])
                elif extra == "text":
                    z.writestr("notes.txt", b"hello")
                else:
                    z.writestr("../../up.npy", members[first])
        return buf.getvalue()
    raw = bytearray(zip_bytes(members, compression))
    if how == "directory":
        entries = [i for i in range(len(raw)) if raw[i : i + 4] == b"PK\x01\x02"]
        cd = draw(st.sampled_from(entries))
        field, fmt = draw(st.sampled_from([(8, "<H"), (10, "<H"), (16, "<I"), (20, "<I"), (24, "<I"), (42, "<I")]))
        value = draw(st.one_of(st.integers(0, 0xFFFF if fmt == "<H" else 0xFFFFFFFF),
                               st.sampled_from([0, 1, 8, 12, 99, 0x800, 0xFFFFFFFF])))
        struct.pack_into(fmt, raw, cd + field, value & (0xFFFF if fmt == "<H" else 0xFFFFFFFF))
        return bytes(raw)
    return draw(byte_edits(bytes(raw), hot=len(raw)))


@st.composite
def mutated_pb(draw, seed: tuple[TensorProto, bytes | None]) -> tuple[bytes, bytes | None]:
    proto, ext = TensorProto(), seed[1]
    proto.CopyFrom(seed[0])
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(st.sampled_from(["dims", "type", "raw", "field", "external", "location", "name", "ext-file"]))
        if edit == "dims":
            del proto.dims[:]
            dims = draw(st.lists(DIMS.filter(lambda d: -(2**63) <= d < 2**63), max_size=5))
            proto.dims.extend(dims if draw(st.integers(0, 9)) else [1] * 66)
        elif edit == "type":
            proto.data_type = draw(st.integers(0, 30))
        elif edit == "raw":
            data = proto.raw_data or b"\x01\x02\x03\x04"
            proto.raw_data = draw(st.sampled_from([data[:-1], data + b"\x00", data * 2, b""]))
        elif edit == "field":
            values = draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8))
            field = draw(st.sampled_from(["int32_data", "int64_data", "float_data", "double_data", "uint64_data"]))
            getattr(proto, field).extend([float(v) if "float" in field or "double" in field else abs(v) if
                                          field == "uint64_data" else v for v in values])
        elif edit == "external":
            proto.data_location = draw(st.sampled_from([TensorProto.EXTERNAL, TensorProto.DEFAULT]))
        elif edit == "location":
            del proto.external_data[:]
            proto.data_location = TensorProto.EXTERNAL
            location = draw(st.sampled_from(["w.bin", "../secret.bin", "secret_link.bin", "missing.bin", "sub",
                                             "/etc/hostname", "w.bin\x00x", "", "sub/../w.bin", "./w.bin"]))
            proto.external_data.add(key="location", value=location)
            for key in draw(st.lists(st.sampled_from(["offset", "length", "checksum", "__class__"]), max_size=3)):
                proto.external_data.add(key=key, value=draw(st.sampled_from(["0", "4", "16", "-1", "x", "99999"])))
        elif edit == "name":
            proto.name = draw(st.sampled_from(["", "a\nb", "\x1b[2J", "../n", "é"]))
        elif ext is not None:
            ext = ext[: draw(st.integers(0, len(ext)))]
    data = proto.SerializeToString()
    if draw(st.integers(0, 2)) == 0:
        data = draw(byte_edits(data, hot=len(data)))
    return data, ext


# ----------------------------------------------------------------- running


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], cwd: Path, stdin: bytes | None = None) -> Outcome:
    """onnxop in-process, in a thread (a hang fails instead of stalling),
    with stdout/stderr captured by hand (capsys is per test, not per example)."""
    import contextlib
    import sys

    from test_pipes import FakeStdin

    result: list = []
    out, err = io.StringIO(), io.StringIO()
    previous, previous_stdin = os.getcwd(), sys.stdin

    def target() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result.append(run(argv))

    os.chdir(cwd)
    sys.stdin = FakeStdin(stdin or b"")
    try:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(TIMEOUT)
    finally:
        os.chdir(previous)
        sys.stdin = previous_stdin
    assert not thread.is_alive(), f"onnxop {argv} hung for {TIMEOUT} s"
    return Outcome(result[0] if result else -1, out.getvalue(), err.getvalue())


def run_process(argv: list[str], cwd: Path, stdin: bytes | None = None) -> Outcome:
    """onnxop as a real process, in its own session; killed (SIGKILL, the
    whole group) when it outlives TIMEOUT, which fails the case."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxop_cli", *argv], cwd=cwd, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"onnxop {argv} hung for {TIMEOUT} s (killed)")
    return Outcome(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


COMMANDS = [
    (["flatten", "--axis", "0"], "y.npy"),
    (["flatten", "--axis", "0"], "y.pb"),
    (["unsqueeze", "--axes", "0"], "y.npz"),
    (["unsqueeze", "--axes", "0"], None),
    (["show"], None),
]


def expected_shape(command: list[str], shape: tuple[int, ...]) -> tuple[int, ...]:
    if command[0] == "flatten":
        return (1, int(np.prod(shape)))
    if command[0] == "unsqueeze":
        return (1, *shape)
    return shape


def read_output(path: Path) -> dict[str, np.ndarray]:
    """The output, read by numpy or onnx (never onnxop)."""
    if path.suffix == ".npy":
        return {"": np.load(path, allow_pickle=False)}
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    proto = onnx.load_tensor(str(path))
    return {"": onnx_array(proto, path.parent)}


PRECIOUS = b"an existing output, to be replaced only by a complete one"


def check(
    place: Place, inputs: list[str], command: list[str], output: str | None, reference,
    *, stdin: bool = False, existing: bool = False, process: bool | None = None,
) -> None:
    """Run one case and assert the rules in the module docstring.
    ``reference()`` returns {name: array} or raises if the reference refuses.
    ``stdin``: the input file is piped in as ``-`` instead of named;
    ``existing``: the output file exists before the run (a failure must
    leave it byte for byte); ``process``: run onnxop as its own process
    (None: as ``in_a_process`` chooses)."""
    folder = place.folder
    source = "-" if stdin else inputs[0]
    argv = [command[0], source, *command[1:], *(["-o", output] if output else []), "-b", place.backend]
    if existing and output:
        (folder / output).write_bytes(PRECIOUS)
        inputs = [*inputs, output]
    if process is None:
        process = in_a_process(folder, inputs, argv)
    runner = run_process if process else run_cli
    got = runner(argv, folder, (folder / inputs[0]).read_bytes() if stdin else None)
    if currently_in_test_context():
        event(f"exit {got.code}" + (" (process)" if process else ""))  # --hypothesis-show-statistics: both outcomes must be common
    for text in (got.out, got.err):
        assert "Traceback" not in text and "internal error" not in text, (argv, got)
    names = sorted(p.name for p in folder.iterdir())
    if got.code != 0:
        lines = got.err.splitlines()
        assert got.code == 2, (argv, got)
        assert len(lines) == 1 and lines[0].startswith("onnxop: error: "), (argv, got)
        assert got.out == "", (argv, got)
        assert names == sorted(inputs), (argv, names)
        if existing and output:
            assert (folder / output).read_bytes() == PRECIOUS, argv
        return
    assert got.err == "", (argv, got)
    expected = reference()  # must not raise: onnxop accepted it, so must the reference
    assert SECRET not in got.out.encode("utf-8", "replace"), argv
    if output is None:
        for array in expected.values():
            assert f"shape={expected_shape(command, array.shape)}" in got.out, (argv, got.out)
        return
    assert names == sorted({*inputs, output}), (argv, names)
    assert SECRET not in (folder / output).read_bytes(), argv
    result = read_output(folder / output)
    if inputs[0].endswith(".npz") and output.endswith(".npz"):  # member names are kept
        assert list(result) == list(expected), (argv, list(result), list(expected))
        pairs = [(result[k], expected[k]) for k in expected]
    else:
        assert len(expected) == 1 and len(result) == 1, (argv, list(result), list(expected))
        pairs = [(next(iter(result.values())), next(iter(expected.values())))]
    for got_array, ref in pairs:
        want = np.ascontiguousarray(ref).reshape(expected_shape(command, ref.shape))
        if want.dtype.kind in "OUS":  # ONNX strings are bytes: '<U' and 'S' of the same bytes are equal
            got_array, want = _onnx_strings(got_array), _onnx_strings(want)
        assert same_bits(got_array, want), (argv, got_array, want)


def _onnx_strings(array: np.ndarray) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in array.reshape(-1).tolist()]
    return out


@dataclass
class Place:
    folder: Path
    backend: str


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


def in_a_process(folder: Path, inputs: list[str], argv: list[str]) -> bool:
    """One case in PROCESS_SHARE, chosen by a hash of the input and the
    command: the same case always runs the same way (also when hypothesis
    replays it), and the share does not lean on hypothesis' liking for small
    numbers."""
    import zlib

    return zlib.crc32((folder / inputs[0]).read_bytes() + " ".join(argv).encode()) % PROCESS_SHARE == 0


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


def onnx_array(proto: TensorProto, folder: Path) -> np.ndarray:
    try:
        return numpy_helper.to_array(proto, base_dir=str(folder))
    except UnicodeDecodeError:
        assert proto.data_type == TensorProto.STRING
        return np.array(list(proto.string_data), dtype=object).reshape(tuple(proto.dims))


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
    monkeypatch.setattr(sys.modules[__name__], "run_cli", lambda *a: calls.append(a) or pytest.fail("in-process"))
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

    monkeypatch.setattr(sys.modules[__name__], "TIMEOUT", 1)
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

"""String tensors never blow up memory, and keep their numpy kind: show and
print mode cut huge strings short, a fixed-width array too large is refused
(a .pb output needs none), strings that would not fit memory are refused
before they are made, and running out of memory is named.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of
from input_runs import ONNXOP, names
from made_once import made_once
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


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


REFUSED = [(output, long, empty) for long, empty in [(MIB, 499), (10 * MIB, 2000)] for output in ["x.npy", "x.npz"]]
TO_PB = ["s.pb", "s.npz"]


@pytest.fixture(scope="module")
def huge(tmp_path_factory, backend) -> dict:
    """The print, refusal and .pb cases below, a folder each, run one after the other in one process
    under test_print_memory.py's 1 GiB address cap (a process start is a CPU second apiece): its peak
    RSS is the highest of theirs, so each stayed under it. Case -> (its folder, its result, the peak).
    Made once in a run."""
    from test_print_memory import run_capped_commands

    def make() -> dict:
        top = tmp_path_factory.mktemp("strings")
        commands, cases = [], []
        folder = top / "print"
        folder.mkdir()
        string_pb(folder / "s.pb", 10 * MIB, 2000)
        commands.append((folder, ["flatten", "s.pb", "--axis", "0", "-b", backend]))
        cases.append("print")
        for output, long, empty in REFUSED:
            folder = top / f"refused-{output}-{long}"
            folder.mkdir()
            string_pb(folder / "s.pb", long, empty)
            (folder / output).write_bytes(b"precious")
            commands.append((folder, ["flatten", "s.pb", "--axis", "0", "-o", output]))
            cases.append((output, long, empty))
        for source in TO_PB:
            folder = top / f"pb-{source}"
            folder.mkdir()
            string_pb(folder / "s.pb", 10 * MIB, 2000)
            if source == "s.npz":  # an .npz can only hold it fixed-width: a smaller one
                np.savez(folder / "s.npz", s=np.array([b"a" * MIB] + [b""] * 20, dtype="S"))
            commands.append((folder, ["flatten", source, "--axis", "0", "-o", "x.pb"]))
            cases.append(source)
        done, peak = run_capped_commands(commands, top, backend)
        return {case: (c[0], d, peak) for case, c, d in zip(cases, commands, done, strict=True)}

    return made_once(tmp_path_factory, f"input-strings-huge-{backend}", make)


def test_print_mode_cuts_long_strings_short(huge):
    _, done, peak = huge["print"]
    assert done.returncode == 0, done.stderr
    assert "    ['" + "a" * 40 + "...' (10485760 chars), '', ''," in done.stdout.splitlines()
    assert "    [['" + "a" * 40 + "...' (10485760 chars), '', ''," in done.stdout.splitlines()
    assert peak < 300 * MIB, peak


@pytest.mark.parametrize("output, long, empty", REFUSED)
def test_strings_that_need_a_huge_fixed_width_array_are_refused(huge, output, long, empty):
    """flatten -o x.npy wrote 2 GB (1 MiB case) or died with MemoryError
    (10 MiB case): now one line, exit 2, the size in bytes, and nothing
    written; an existing output is kept byte for byte."""
    folder, done, peak = huge[output, long, empty]
    count = empty + 1
    need = count * long * 4
    where = f"{output}[s]" if output.endswith(".npz") else output
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert error_of(done.stderr) == (
        f"{where}: as a .npy array (<U{long}) these {count} strings need {need} bytes, "
        f"{need // long}x the {long} bytes they hold; write a .pb (ONNX TensorProto) file instead"
    )
    assert done.stdout == ""
    assert peak < 300 * MIB, peak
    assert (folder / output).read_bytes() == b"precious"
    assert names(folder) == sorted(["s.pb", output])


@pytest.mark.parametrize("source", TO_PB)
def test_huge_strings_to_pb_need_no_fixed_width_array(huge, source):
    """.pb and .npz (object-free) inputs to .pb: the bytes list is written as it is."""
    from onnx import load_tensor

    folder, done, peak = huge[source]
    assert done.returncode == 0, done.stderr
    proto = load_tensor(str(folder / "x.pb"))  # (onnx's to_array would make the 78 GiB array itself)
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

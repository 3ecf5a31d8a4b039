"""The CLI in-process: every error path's exit code and one-line message,
and the success paths against numpy."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of, random_array
from onnxop_cli.cli.main import run
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


@pytest.fixture
def a(cwd, rng) -> np.ndarray:
    arr = random_array(rng, (2, 3, 4, 5), "float32")
    np.save(cwd / "a.npy", arr)
    return arr


def test_flatten_writes_exact_bytes(backend, a, cwd, capsys):
    code, out, err = cli(capsys, "flatten", "a.npy", "--axis", "-2", "-o", "b.npy", "--backend", backend)
    assert code == ExitCode.SUCCESS, err
    b = np.load(cwd / "b.npy")
    assert b.shape == (6, 20) and b.tobytes() == a.reshape(6, 20).tobytes()
    assert out.strip() == "Flatten: a (2, 3, 4, 5) float32 -> b (6, 20) float32, wrote b.npy"


def test_unsqueeze_writes_exact_bytes(backend, cwd, rng, capsys):
    x = random_array(rng, (3, 4, 5), "int16")
    np.save(cwd / "x.npy", x)
    code, out, err = cli(capsys, "unsqueeze", "x.npy", "--axes", "2,4,5", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    y = np.load(cwd / "y.npy")
    assert y.tobytes() == np.expand_dims(x, (2, 4, 5)).tobytes() and y.shape == (3, 4, 1, 5, 1, 1)


def test_global_backend_option_and_env(backend, a, cwd, capsys, monkeypatch):
    code, _, err = cli(capsys, "--backend", backend, "flatten", "a.npy", "-o", "b.npy")
    assert code == 0, err
    monkeypatch.setenv("ONNXOP_BACKEND", backend)
    code, _, err = cli(capsys, "flatten", "a.npy", "-o", "c.npy")
    assert code == 0, err
    assert (cwd / "b.npy").read_bytes() == (cwd / "c.npy").read_bytes()


def test_print_without_output_uses_doc_layout(backend, cwd, capsys):
    np.save(cwd / "data.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    code, out, err = cli(capsys, "unsqueeze", "data.npy", "--axes", "0,2", "-b", backend)
    assert code == 0, err
    assert out == (
        "Node:\n  Unsqueeze(data, axes) -> (expanded)\n\n"
        "Inputs:\n  data: shape=(2, 3), dtype=float32\n    [[0., 1., 2.],\n     [3., 4., 5.]]\n"
        "  axes: shape=(2,), dtype=int64\n    [0, 2]\n\n"
        "Outputs:\n  expanded: shape=(1, 2, 1, 3), dtype=float32\n"
        "    [[[[0., 1., 2.]],\n\n      [[3., 4., 5.]]]]\n"
    )


@pytest.mark.parametrize("layout", ["C", "F", "big-endian"])
def test_printing_a_large_tensor_maps_it_and_keeps_no_file(backend, cwd, rng, capsys, monkeypatch, tmp_path_factory, layout):
    """Above MAP_THRESHOLD, print mode maps the input and sends the kernel's
    output to an unlinked temporary file: the same text as printing from
    memory, nothing left in TMPDIR."""
    import onnxop_cli.core.apply as core
    import onnxop_cli.core.sources as sources

    x = random_array(rng, (4, 5, 6), "float32")
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "big-endian":
        x = x.astype(">f4")
    np.save(cwd / "x.npy", x)
    argv = ("flatten", "x.npy", "--axis", "2", "-b", backend, "--full")
    code, in_memory, err = cli(capsys, *argv)
    assert code == 0, err

    scratch = tmp_path_factory.mktemp("scratch")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    from onnxop_cli.core.files import InputFile

    seen = []
    real_memmap, real_map = np.memmap, InputFile.map
    monkeypatch.setattr(np, "memmap", lambda *a, **kw: seen.append(kw["mode"]) or real_memmap(*a, **kw))
    monkeypatch.setattr(InputFile, "map", lambda *a: seen.append("input") or real_map(*a))
    monkeypatch.setattr(core, "MAP_THRESHOLD", 64)
    monkeypatch.setattr(sources, "MAP_THRESHOLD", 64)
    code, mapped, err = cli(capsys, *argv)
    assert code == 0, err
    assert sorted(seen) == ["input", "r"]  # the input file (from its descriptor) and the result's temporary file
    assert mapped == in_memory
    want = np.array2string(x.reshape(20, 6), separator=", ", threshold=10**6)
    assert " ".join(want.split()) in " ".join(mapped.split())
    assert list(scratch.iterdir()) == []


def test_a_mapped_input_that_is_truncated_is_refused(cwd, monkeypatch):
    import onnxop_cli.core.sources as sources
    from onnxop_cli.errors import InputError

    np.save(cwd / "x.npy", np.arange(100, dtype=np.float32))
    data = (cwd / "x.npy").read_bytes()
    (cwd / "x.npy").write_bytes(data[:-8])
    monkeypatch.setattr(sources, "MAP_THRESHOLD", 64)
    source = sources.FileBytes(cwd / "x.npy", len(data) - 400, 400)
    with pytest.raises(InputError, match=r"x.npy: file is truncated: expected 400 data bytes from offset \d+, it ends 8 bytes early"):
        source.to_array()


def test_many_inputs_into_a_folder(backend, cwd, rng, capsys):
    arrays = {f"t{i}.npy": random_array(rng, (2, i + 1, 3), "uint8") for i in range(3)}
    for name, arr in arrays.items():
        np.save(cwd / name, arr)
    (cwd / "out").mkdir()
    code, out, err = cli(capsys, "flatten", *arrays, "--axis", "2", "-o", "out", "-b", backend)
    assert code == 0, err
    for name, arr in arrays.items():
        assert np.load(cwd / "out" / name).tobytes() == arr.tobytes()
    assert len(out.strip().splitlines()) == 3


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "argv,message",
    [
        (["flatten", "a.npy", "--axis", "5"], "a.npy: Flatten: axis 5 is out of range [-4, 4] for an input of rank 4"),
        (["flatten", "a.npy", "--axis", "-5"], "a.npy: Flatten: axis -5 is out of range [-4, 4] for an input of rank 4"),
        (["flatten", "a.npy", "--axis", "x"], "Flatten: --axis must be an integer, got 'x' (example: --axis -2)"),
        (["unsqueeze", "a.npy", "--axes", "1,-5"], "a.npy: Unsqueeze: axes 1 and -5 both name output axis 1 (output rank 6); axes must be unique"),
        (["unsqueeze", "a.npy", "--axes", "6"], "a.npy: Unsqueeze: axis 6 is out of range [-5, 4] for an output of rank 5 (input rank 4 + 1 axes)"),
        (["unsqueeze", "a.npy", "--axes", ""], "Unsqueeze: axes must not be empty (example: --axes 0,2)"),
        (["unsqueeze", "a.npy", "--axes", "1,two"], "Unsqueeze: --axes must be comma-separated integers, got '1,two' (example: --axes 0,2)"),
        (["flatten", "missing.npy"], "missing.npy: no such file"),
        (["flatten", "a.txt"], "a.txt: unknown format (.txt); onnxop reads and writes .npy, .npz, .pb and reads .onnx"),
        (["flatten", "a.npy", "-o", "b.csv"], "b.csv: unknown format (.csv); onnxop reads and writes .npy, .npz, .pb and reads .onnx"),
        (["flatten", "a.npy", "-o", "nowhere/b.npy"], "nowhere/b.npy: output folder nowhere does not exist"),
        (["flatten", "a.npy", "--backend", "cuda"], "unknown backend 'cuda'; choose one of auto, vulkan, metal, d3d12, gl"),
        (["flatten", "a.npy", "a.npy", "-o", "b.npy"], "b.npy: with 2 inputs, -o must be an existing folder, or an .npz to pack them into"),
        (["flatten", "a.npy", "--opset", "99"], "opset 99 is out of range [1, 28]"),
        (["unsqueeze", "a.npy"], "Missing option '--axes'. (see 'onnxop unsqueeze --help')"),
        (["flatten", "a.npy", "--bogus"], "No such option: --bogus (see 'onnxop flatten --help')"),
        (["frobnicate"], "No such command 'frobnicate'. Did you mean 'concat'? (see 'onnxop --help')"),
    ],
)
def test_usage_errors_are_one_line_exit_2(a, capsys, argv, message):
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE
    assert error_of(err) == message
    assert out == ""


def test_fortran_order_is_re_laid_out_on_the_gpu(backend, cwd, rng, capsys):
    f = np.asfortranarray(random_array(rng, (3, 5, 7), "float64"))
    np.save(cwd / "f.npy", f)
    code, _, err = cli(capsys, "flatten", "f.npy", "-o", "g.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "g.npy").tobytes() == np.ascontiguousarray(f).reshape(3, 35).tobytes()


def test_pickled_npy_is_refused_without_unpickling(cwd, capsys):
    np.save(cwd / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    code, _, err = cli(capsys, "flatten", "o.npy", "--axis", "0")
    assert code == ExitCode.USAGE
    assert error_of(err) == "o.npy: dtype object holds Python objects; onnxop never unpickles"


def test_truncated_npy_is_refused(a, cwd, capsys):
    raw = (cwd / "a.npy").read_bytes()
    (cwd / "t.npy").write_bytes(raw[:-10])
    code, _, err = cli(capsys, "flatten", "t.npy", "-o", "u.npy")
    assert code == ExitCode.USAGE
    assert "t.npy: file is truncated: shape (2, 3, 4, 5) of float32 needs 480 data bytes, the file has 470" == error_of(err)
    assert not (cwd / "u.npy").exists()


def test_debug_shows_the_traceback(a, capsys):
    with pytest.raises(Exception, match="axis 5 is out of range"):
        run(["flatten", "a.npy", "--axis", "5", "--debug"], debug=True)


# ----------------------------------------------------------------- atomic output


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".onnxop-"))


def test_failure_after_the_gpu_step_leaves_existing_output_untouched(backend, a, cwd, capsys, monkeypatch):
    (cwd / "b.npy").write_bytes(b"precious")
    import onnxop_cli.gpu as gpu_pkg

    real = gpu_pkg.copy_through_kernel

    def copy_then_fail(*args, **kw):
        real(*args, **kw)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", copy_then_fail)
    code, _, err = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "-b", backend)
    assert code == ExitCode.ERROR
    assert error_of(err) == "b.npy: cannot write: No space left on device"
    assert (cwd / "b.npy").read_bytes() == b"precious"
    assert leftovers(cwd) == []


def test_interrupt_leaves_no_file(backend, a, cwd, capsys, monkeypatch):
    import onnxop_cli.gpu as gpu_pkg

    def interrupted(gpu, source, sink, **kw):
        sink(memoryview(b"partial"))
        raise KeyboardInterrupt

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", interrupted)
    code, _, err = cli(capsys, "flatten", "a.npy", "-o", "new.npy", "-b", backend)
    assert code == ExitCode.INTERRUPTED
    assert error_of(err) == "interrupted"
    assert not (cwd / "new.npy").exists()
    assert leftovers(cwd) == []


def test_output_may_replace_its_own_input(backend, a, cwd, capsys):
    code, _, err = cli(capsys, "flatten", "a.npy", "--axis", "0", "-o", "a.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "a.npy").tobytes() == a.tobytes()
    assert np.load(cwd / "a.npy").shape == (1, 120)


def test_new_output_gets_the_usual_file_mode(backend, a, cwd, capsys):
    code, _, err = cli(capsys, "flatten", "a.npy", "-o", "b.npy", "-b", backend)
    assert code == 0, err
    umask = os.umask(0)
    os.umask(umask)
    assert (cwd / "b.npy").stat().st_mode & 0o777 == 0o666 & ~umask


def test_several_inputs_printed_each_under_its_file_title(cwd, capsys):
    """Without -o, each file's blocks follow `# FILE`; one
    input keeps the docs' layout with no title."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -np.arange(4, dtype=np.int16).reshape(2, 2)
    np.save("a.npy", a)
    np.save("b.npy", b)
    code, out, _ = cli(capsys, "flatten", "a.npy", "b.npy", "--axis", "0")
    assert code == 0
    first, second = out.split("\n\n# b.npy\n")
    assert first.startswith("# a.npy\nNode:\n  Flatten(a) -> (output)")
    assert second.startswith("Node:\n  Flatten(b) -> (output)")
    code, out, _ = cli(capsys, "flatten", "a.npy", "--axis", "0")
    assert code == 0 and out.startswith("Node:\n") and "# a.npy" not in out
    code, out, _ = cli(capsys, "flatten", "a.npy", "b.npy", "--axis", "0", "--full")
    assert code == 0 and out.startswith("# a.npy\nNode:\n") and "\n\n# b.npy\nNode:\n" in out


@pytest.mark.parametrize("extra", [["-o", "out.npy"], ["--json"]])
def test_full_with_nothing_printed_is_refused(cwd, capsys, extra):
    """--full with -o (or --json) would be silently ignored."""
    np.save("a.npy", np.arange(6, dtype=np.float32))
    code, out, err = cli(capsys, "flatten", "a.npy", "--full", *extra)
    given = extra[0]
    assert code == 2
    assert error_of(err) == (
        f"--full prints every value of the printed node, and with {given} no node is printed; drop --full or {given}"
    )
    assert sorted(p.name for p in cwd.iterdir()) == ["a.npy"]

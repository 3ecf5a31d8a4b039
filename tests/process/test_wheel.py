"""Build the wheel, install it into a fresh virtual environment and run it from
another folder, as a user would: the shaders must ship inside the wheel and be
found there, on each engine. The installed ``onnxop`` script itself runs
where it is what a test meets (doc-examples, --version, a pipe, a terminal,
stdin); the other commands of a test run through the installed package's
entry in one of the venv's processes (tests/commands.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest

from commands import run_commands
from conftest import random_array
from wgsl_text import part_names, shader_names

REPO = Path(__file__).resolve().parents[2]
# The package is under test, not a kernel: each engine's first backend
# (conftest's ENGINE_BACKENDS; the kernels fan out over every backend in tests/gpu/).
PER_ENGINE = True


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """The wheel and a new venv holding it: made once per run. Under xdist the workers share one
    (a folder of the run's, under a lock): the second finds what the first made instead of building
    and installing it again (about 4 CPU s); the tests only read it."""
    import fcntl

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return _build(tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("venv"))
    shared = tmp_path_factory.getbasetemp().parent / "wheel-and-venv"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "made").exists():
            _build(shared / "dist", shared / "venv")
            (shared / "made").touch()
    (found,) = (shared / "dist").glob("onnxop-*.whl")
    return found, shared / "venv"


def _build(dist: Path, root: Path) -> tuple[Path, Path]:
    """The wheel built into ``dist``; a new venv at ``root`` holding only the wheel, its dependencies
    coming from this environment through a .pth file (so the test needs no network)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, REPO],
        check=True,
    )
    (wheel,) = Path(dist).glob("onnxop-*.whl")
    # No pip of its own (ensurepip: about 2.5 CPU s): this environment's pip installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    py = root / "bin" / "python"
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", wheel],
                   check=True)
    # Only after the install: pip must not see an onnxop already installed here.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "zz_onnxop_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return wheel, root


@pytest.fixture(scope="session")
def wheel(built) -> Path:
    return built[0]


@pytest.fixture(scope="session")
def venv(built) -> Path:
    """A new venv holding only the wheel; its dependencies come from this
    environment through a .pth file (so the test needs no network)."""
    return built[1]


def shipped_files() -> dict[str, Path]:
    """What the wheel must hold, by its name there: every module and script of
    the package and every shader (kernels and the parts they #include)."""
    src = REPO / "src" / "onnxop_cli"
    files = {f"onnxop_cli/{p.relative_to(src)}": p for ext in ("py", "js") for p in src.rglob(f"*.{ext}")}
    files |= {f"onnxop_cli/shaders/{p.relative_to(REPO / 'shaders')}": p for ext in ("py", "wgsl")
              for p in (REPO / "shaders").rglob(f"*.{ext}")}
    # every sample, the docs' models and node tests in samples/graph and samples/node included
    files |= {f"onnxop_cli/samples/{p.relative_to(REPO / 'samples')}": p for p in (REPO / "samples").rglob("*")
              if p.is_file()}
    return {name: path for name, path in files.items() if "__pycache__" not in name}


def missing_from(wheel: Path) -> list[str]:
    """The shipped files the wheel lacks or holds with other bytes, and any test file it holds."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        wrong = [name for name, path in shipped_files().items()
                 if name not in names or archive.read(name) != path.read_bytes()]
    return sorted(wrong + [name for name in names if name.startswith("tests/") or "/tests/" in name])


def test_wheel_ships_every_module_shader_and_sample_byte_identical(wheel):
    files = shipped_files()
    kernels = {f"onnxop_cli/shaders/{name}" for name in (*shader_names(), *part_names())}  # as the loader lists them
    assert {name for name in files if name.endswith(".wgsl")} == kernels and "onnxop_cli/shaders/lib/float_convert.wgsl" in files
    assert missing_from(wheel) == []
    names = zipfile.ZipFile(wheel).namelist()
    assert "onnxop_cli/samples/a.npy" in names
    assert "onnxop_cli/samples/graph/test_data_set_0/input_0.pb" in names  # (the docs' `onnxop run samples/graph/...`)
    assert "onnxop_cli/samples/node/test_relu/model.onnx" in names
    for page in ("Flatten-25.txt", "Unsqueeze-13.rst"):  # the doc pages doc-examples reads
        assert f"onnxop_cli/samples/{page}" in names


def test_a_wheel_without_one_shader_is_caught(wheel, tmp_path):
    """The check above can fail: the same wheel less one shader part."""
    broken = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            if item.filename != "onnxop_cli/shaders/lib/bswap.wgsl":
                dst.writestr(item, src.read(item))
    assert missing_from(broken) == ["onnxop_cli/shaders/lib/bswap.wgsl"]


def run_installed(venv: Path, cwd: Path, *args: str, backend: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["ONNXOP_BACKEND"] = backend
    return subprocess.run(
        [str(venv / "bin" / "onnxop"), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def run_installed_commands(venv: Path, cwd: Path, *argvs: list[str], backend: str) -> list:
    """Each argv run by the installed package (the venv's python), all in one process."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["ONNXOP_BACKEND"] = backend
    done = run_commands([(cwd, argv) for argv in argvs], env=env, python=venv / "bin" / "python")
    assert len(done) == len(argvs)
    return done


def test_installed_wheel_runs_both_examples_from_another_folder(venv, tmp_path, backend):
    rng = np.random.default_rng(11)
    a = random_array(rng, (2, 3, 4, 5), "float32")
    x = random_array(rng, (3, 4, 5), "int32")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "x.npy", x)

    flat, done = run_installed_commands(venv, tmp_path, ["flatten", "a.npy", "--axis", "-2", "-o", "b.npy"],
                                        ["unsqueeze", "x.npy", "--axes", "2,4,5", "-o", "y.npy"], backend=backend)
    assert flat.returncode == 0, flat.stderr
    assert np.load(tmp_path / "b.npy").tobytes() == a.reshape(6, 20).tobytes()

    assert done.returncode == 0, done.stderr
    y = np.load(tmp_path / "y.npy")
    assert y.shape == (3, 4, 1, 5, 1, 1) and y.tobytes() == x.tobytes()


def test_installed_wheel_checks_the_doc_examples_from_another_folder(venv, tmp_path, backend):
    done = run_installed(venv, tmp_path, "doc-examples", "--check", backend=backend)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "17 passed, 0 failed"


def test_installed_wheel_runs_the_docs_graph_from_its_copied_samples(venv, tmp_path, backend):
    """The docs' examples read samples/graph and samples/node, which the wheel did not hold: README's
    command copies the package's samples into the current folder, and the docs' graph runs from there."""
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import onnxop_cli.samples as s; print(s.__path__[0])"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(venv)
    subprocess.run(["cp", "-r", where, "samples"], cwd=tmp_path, check=True)
    done = run_installed(venv, tmp_path, "run", "samples/graph/model.onnx", "samples/graph/test_data_set_0",
                         "--check", "samples/graph/test_data_set_0", backend=backend)
    assert done.returncode == 0 and "2 output(s) equal samples/graph/test_data_set_0's output_*.pb" in done.stderr + \
        done.stdout, done.stdout + done.stderr
    assert (tmp_path / "samples" / "node" / "test_relu" / "test_data_set_0" / "output_0.pb").is_file()


def test_installed_package_is_the_wheel_not_the_source(venv, tmp_path):
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import onnxop_cli.gpu.shaders as s, onnxop_cli; print(onnxop_cli.__file__); "
         "print(s.shader_source('lib/bswap.wgsl').splitlines()[0])"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    path, first = done.stdout.splitlines()
    assert Path(path).is_relative_to(venv)
    assert first.startswith("// Part")  # the wheel's loader finds its parts
    module = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "onnxop_cli", "--help"], cwd=tmp_path, capture_output=True, text=True
    )
    assert module.returncode == 0 and "flatten" in module.stdout


def one_case_per_operator(cases: list) -> list:
    """Of onnx's node tests, one per operator (a graph's: per set of
    operators), one with no float or string input where there is one (the
    arithmetic operators' float and string cases are out of scope)."""
    from onnx import TensorProto

    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16, TensorProto.STRING}
    picked: dict[tuple, object] = {}
    for case in cases:
        ops = tuple(sorted({node.op_type for node in case.model.graph.node}))
        types = {i.type.tensor_type.elem_type if i.type.HasField("tensor_type") else TensorProto.STRING
                 for i in case.model.graph.input}
        if ops not in picked or (types.isdisjoint(floats) and not picked[ops][1]):
            picked[ops] = (case, types.isdisjoint(floats))
    return [case for case, _ in picked.values()]


def test_installed_wheel_runs_every_format_and_the_official_node_tests(venv, tmp_path, backend):
    """From another folder: an official node test of every operator passes
    through `conformance` (each operator's code path and shaders run from the
    wheel; tests/cli/test_conformance.py runs all of them from the tree),
    and a bfloat16 .pb, an odd-count int4 .pb and a Fortran-ordered
    big-endian .npz member come out bit-exact."""
    import ml_dtypes
    from onnx import numpy_helper

    from references import node_tests_module

    node_tests = node_tests_module()
    all_cases = node_tests.node_testcases()
    cases = one_case_per_operator(all_cases)
    operators = {node.op_type for case in all_cases for node in case.model.graph.node}
    assert {node.op_type for case in cases for node in case.model.graph.node} == operators
    for case in cases:
        node_tests.write_case(case, tmp_path / "node")
    rng = np.random.default_rng(5)
    h = rng.integers(0, 1 << 16, (3, 5), dtype=np.uint16).view(ml_dtypes.bfloat16)
    (tmp_path / "h.pb").write_bytes(numpy_helper.from_array(h, "h").SerializeToString())
    q = np.array([-8, 7, 3, -1, 0, 5, -3], dtype=ml_dtypes.int4)
    (tmp_path / "q.pb").write_bytes(numpy_helper.from_array(q, "q").SerializeToString())
    f = np.asfortranarray(random_array(rng, (3, 4, 5), "float64").astype(">f8"))
    np.savez(tmp_path / "m.npz", f=f, g=random_array(rng, (7,), "uint8"))
    formats = (["flatten", "h.pb", "--axis", "0", "-o", "h2.pb"], ["unsqueeze", "q.pb", "--axes", "0", "-o", "q2.pb"],
               ["flatten", "m.npz", "--axis", "1", "-o", "m2.npz"])
    done, written, edge, *by_format = run_installed_commands(
        venv, tmp_path, ["conformance", "node"], ["cases", "write", "edge"],
        ["conformance", "edge/gather_int64_index_2pow32_plus_1", "--runtime", "onnxruntime"], *formats,
        backend=backend)
    assert done.returncode == 0, done.stdout + done.stderr
    # every operator ran; skipped only where all its cases are out of scope (Abs and Neg: floats only)
    summary = dict(re.findall(r"^(\w+): (1 passed, 0 failed, 0 skipped|0 passed, 0 failed, 1 skipped \(skipped: "
                              r".*out of scope.*\))$", done.stdout, re.MULTILINE))
    assert summary.keys() == operators, done.stdout
    skipped = [op for op, line in summary.items() if line.startswith("0 passed")]
    assert len(skipped) <= 2, skipped
    assert done.stdout.splitlines()[-1] == f"{len(cases) - len(skipped)} passed, 0 failed, {len(skipped)} skipped"
    # the edge-case corpus and the runtimes ship too (docs/cases, docs/runtimes)
    assert written.returncode == 0, written.stderr
    assert edge.returncode == 0 and edge.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 skipped", edge.stdout

    for argv, done in zip(formats, by_format):
        assert done.returncode == 0, (argv, done.stderr)
    h2 = numpy_helper.to_array(onnx_load(tmp_path / "h2.pb"))
    assert h2.shape == (1, 15) and h2.tobytes() == h.tobytes()
    q2 = onnx_load(tmp_path / "q2.pb")
    assert list(q2.dims) == [1, 7] and q2.raw_data == numpy_helper.from_array(q, "q").raw_data
    with np.load(tmp_path / "m2.npz") as m2:
        assert m2["f"].tobytes() == np.ascontiguousarray(f).astype("<f8").reshape(3, 20).tobytes()
        assert m2["g"].shape == (7, 1)


def onnx_load(path):
    import onnx

    return onnx.load_tensor(str(path))


def test_installed_wheel_pipes_shows_json_and_api(venv, tmp_path, backend):
    """The features as a user meets them: from the installed wheel, in
    another folder -- a pipe between two processes, show, --json, the API."""
    rng = np.random.default_rng(6)
    a = random_array(rng, (2, 3, 4, 5), "float32")
    np.save(tmp_path / "a.npy", a)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"ONNXOP_BACKEND": backend}
    onnxop = venv / "bin" / "onnxop"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{onnxop} flatten - --axis 1 -o - < a.npy | {onnxop} unsqueeze - --axes 0 -o b.npy"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert np.load(tmp_path / "b.npy").tobytes() == a.tobytes()
    assert done.stdout == "Unsqueeze: stdin (2, 60) float32 -> b (1, 2, 60) float32, wrote b.npy\n"

    shown, done = run_installed_commands(venv, tmp_path, ["show", "b.npy"],
                                         ["--json", "flatten", "a.npy", "--axis", "9"], backend=backend)
    assert shown.returncode == 0 and shown.stdout.startswith("b.npy:\n  b: shape=(1, 2, 60), dtype=float32  (min=")
    assert done.returncode == 2 and json.loads(done.stdout)["status"] == "error"

    code = "import numpy as np, onnxop_cli as o; print(o.unsqueeze(np.load('a.npy'), [0, 5]).shape)"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.stdout == "(1, 2, 3, 4, 5, 1)\n", done.stderr


def test_installed_wheel_versions_tables_streams_and_stdin(venv, tmp_path, backend):
    """From the wheel, in another folder: --version, tables under a
    terminal, conformance --json types, show --full | head streaming, --hist,
    .onnx initializers with -m, and an .npz piped into stdin."""
    import onnx
    from onnx import helper, numpy_helper

    from test_tables import run_in_pty

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"ONNXOP_BACKEND": backend}
    onnxop = str(venv / "bin" / "onnxop")

    done = run_installed(venv, tmp_path, "--version", "--json", backend=backend)
    assert done.returncode == 0 and set(json.loads(done.stdout)["versions"]) >= {"onnxop", "wgpu-native", "numpy"}

    # a terminal of 80 columns: every example name in full
    screen = run_in_pty(["doc-examples"], 80, tmp_path, command=[onnxop], env=env)
    assert "test_cc_flatten_negative_axis4" in screen and "…" not in screen and "┃" in screen

    rng = np.random.default_rng(15)
    big = rng.standard_normal((256, 1024), dtype=np.float32)  # 1 MiB
    np.save(tmp_path / "big.npy", big)
    w = random_array(rng, (3, 4), "float32")
    graph = helper.make_graph([], "g", [], [], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w[0], "v")])
    onnx.save_model(helper.make_model(graph), str(tmp_path / "m.onnx"))
    done, hist, initializer = run_installed_commands(
        venv, tmp_path, ["conformance", str(REPO / "samples" / "node"), "--json"], ["show", "big.npy", "--hist"],
        ["flatten", "m.onnx", "-m", "w", "--axis", "0", "-o", "w.npy"], backend=backend)
    cases = {c["name"]: c for c in json.loads(done.stdout)["cases"]}
    assert cases["test_flatten_axis1"]["opset"] == 25 and cases["test_relu"]["opset"] is None

    done = subprocess.run(["bash", "-c", f"{onnxop} show big.npy --full | head -4"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    from onnxop_cli.render.values import format_values

    numpy_lines = format_values(big, full=True).split("\n")[:2]
    assert done.stdout.splitlines()[2:] == ["    " + line for line in numpy_lines]

    assert hist.returncode == 0 and "    histogram of big (262144 finite values):" in hist.stdout

    assert initializer.returncode == 0, initializer.stderr
    assert np.load(tmp_path / "w.npy").tobytes() == w.tobytes()

    np.savez(tmp_path / "z.npz", a=w)
    done = subprocess.run(["bash", "-c", f"{onnxop} show - --json < z.npz"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert json.loads(done.stdout)["files"][0]["tensors"][0]["shape"] == [3, 4]

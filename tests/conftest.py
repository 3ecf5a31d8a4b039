"""Shared fixtures. GPU tests run once per engine and software adapter
(lavapipe's Vulkan and llvmpipe's GL, on wgpu and on Dawn) in one process:
the WebGPU instances are created with both backends. The ``backend`` fixture's
values name the engine when it is not wgpu (``dawn-gl``); onnxop takes that
form wherever it takes a backend.

A missing adapter skips its tests on a developer machine but FAILS them when
``CI`` is set: GPU tests never silently skip in CI.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

if not os.environ.get("XDG_RUNTIME_DIR"):  # made only when unset (setdefault's argument made one every time)
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")
    atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], ignore_errors=True)
# The kernel choice is cached under $XDG_CACHE_HOME (gpu/choose.py): the
# tests, and the processes they start, use a fresh one, never the user's.
_USER_CACHE = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
_CACHE_HOME = tempfile.mkdtemp(prefix="onnxop-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, ignore_errors=True)
# Mesa keeps the shaders lavapipe and llvmpipe compiled (about 65 CPU ms each) under
# $XDG_CACHE_HOME too: one folder for the whole run, so that a kernel compiled in one
# process (a worker, an onnxop the tests start) is not compiled again in another. The
# first conftest of the run (pytest's, before xdist starts the workers, which inherit
# it) makes it, fresh as the rest; one the user set is kept.
os.environ.setdefault("MESA_SHADER_CACHE_DIR", os.path.join(_CACHE_HOME, "mesa"))
# Python's bytecode: under $PYTHONDONTWRITEBYTECODE every process the tests start (a worker, each
# of several hundred onnxops) compiled every module the tree has no cached bytecode of from source
# again, about 0.09 of an onnxop's 0.45 CPU s, and each worker rewrote every test module's asserts
# again (pytest caches that as bytecode too): 10 of a worker's 16 CPU s of collection, in every
# pytest run (CI runs four). The processes write it to one folder in the user's cache instead,
# kept between runs (bytecode carries its source's mtime and size: an edited file is compiled
# again); the source tree stays as the variable keeps it. Nothing onnxop does depends on it.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(_USER_CACHE, "onnxop-tests", "bytecode")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
# numpy's OpenBLAS starts a thread per core when numpy is imported, and they spin: about 0.04 of
# an onnxop's 0.40 CPU s on two loaded cores (0.134 -> 0.093 CPU s for `import numpy`, 20 runs
# each). Nothing onnxop runs or a test checks multiplies matrices, so the workers and every
# process the tests start (they inherit it) use one; one the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The tests send real signals to onnxop processes they start, and onnxop keeps
# a signal ignored that it was started with ignored (as nohup asks). A suite
# started with SIGINT, SIGHUP or SIGQUIT ignored (nohup, a background job of a
# script without job control) would hand that on to every child: those tests
# need the default dispositions, whatever started pytest.
for _name in ("SIGINT", "SIGHUP", "SIGQUIT", "SIGTERM"):
    _sig = getattr(signal, _name)
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)

if os.environ.get("ONNXOP_TEST_KERNEL_LOG"):  # every kernel dispatched, by backend and test (tests/kernel_log/)
    _spec = importlib.util.spec_from_file_location("kernel_log", Path(__file__).parent / "kernel_log" / "sitecustomize.py")
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))

from onnxop_cli.errors import NoAdapterError  # noqa: E402
from onnxop_cli.gpu import get_gpu, init_instance  # noqa: E402
from onnxop_cli.gpu.engines import ENGINES, installed  # noqa: E402

# The README's test command runs every test once, the GPU ones on lavapipe's
# Vulkan through wgpu. CI's matrix passes (.ci/run) set ONNXOP_TEST_BACKENDS to
# the other engines and backends (gl, dawn-vulkan, dawn-gl; Mesa 25's vulkan and
# dawn-vulkan) with ONNXOP_TEST_MATRIX=1: then only the tests that fan out over
# backends run (a kernel's, an engine's), not those of the CLI, the formats or
# pure code, which the first pass ran.
BACKENDS = [b for b in os.environ.get("ONNXOP_TEST_BACKENDS", "vulkan").split(",") if b]
MATRIX = os.environ.get("ONNXOP_TEST_MATRIX", "") not in ("", "0")
# Backends a matrix pass opens (the engines' instances as in the first pass: wgpu's with Vulkan
# and GL together) but whose tests the first pass ran: deselected (ONNXOP_TEST_RAN=vulkan).
RAN = [b for b in os.environ.get("ONNXOP_TEST_RAN", "").split(",") if b]
_NOT_IN_MATRIX = "not-in-this-matrix-pass"


def engine_of(backend: str) -> str:
    """The engine a backend name names: ``dawn`` for ``dawn-gl``, ``wgpu`` for ``gl``."""
    prefix, _, rest = backend.partition("-")
    return prefix if rest and prefix in ENGINES else "wgpu"


# dawn-*: dawn-python; browser-*: Playwright and a Chromium (not started until used)
NO_ENGINE = [b for b in BACKENDS if not installed(engine_of(b))]
# ONNXOP_TEST_BACKENDS="" (a pytest child that tests the suite's own machinery, not a GPU:
# test_replayable_seeds) opens no WebGPU instance: about 0.4 CPU s less each
if BACKENDS:
    init_instance([b for b in BACKENDS if b not in NO_ENGINE and engine_of(b) != "browser"])


def _gpu_or_skip(backend: str):
    if backend in NO_ENGINE:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and the engine of {backend} is not installed (pip install 'onnxop[{engine_of(backend)}]')")
        pytest.skip(f"{backend}: the {engine_of(backend)} engine is not installed")
    try:
        gpu = get_gpu(backend)
    except NoAdapterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and there is no {backend} adapter: {e}")
        pytest.skip(f"no {backend} adapter: {e}")
    # .ci/run's second pass selects Mesa 25 by VK_ICD_FILENAMES: make sure
    # that is the driver the tests ran on, not a silent fallback.
    wanted = os.environ.get("ONNXOP_TEST_DRIVER", "")
    if wanted and wanted not in gpu.info.driver:
        pytest.fail(f"$ONNXOP_TEST_DRIVER is {wanted!r} but the {backend} driver is {gpu.info.driver!r}")
    return gpu


@pytest.fixture(scope="session")
def backend(request) -> str:
    """A backend name whose adapter exists (fails in CI if it does not).
    Parametrised by pytest_generate_tests below."""
    _gpu_or_skip(request.param)
    return request.param


# The first backend of each engine (vulkan and dawn-vulkan by default): for
# tests of an engine or of the package rather than of a kernel.
ENGINE_BACKENDS = [b for i, b in enumerate(BACKENDS) if engine_of(b) not in {engine_of(x) for x in BACKENDS[:i]}]

# The tests are in folders by kind (tests/unit, gpu, cli, process). Those in
# tests/cli/ test the commands and formats, not a kernel: one backend each.
ONE_BACKEND_FOLDERS = {"cli"}


def one_backend(metafunc) -> bool:
    """Whether a test runs on the first backend only: its ``one_backend``
    marker (or ``every_backend``: not), else its module's ``ONE_BACKEND``,
    else its folder's kind."""
    if metafunc.definition.get_closest_marker("one_backend") is not None:
        return True
    if metafunc.definition.get_closest_marker("every_backend") is not None:
        return False
    flag = getattr(metafunc.module, "ONE_BACKEND", None)
    if flag is not None:
        return bool(flag)
    return Path(str(metafunc.module.__file__)).parent.name in ONE_BACKEND_FOLDERS


def pytest_generate_tests(metafunc):
    """A test that needs a GPU runs once per backend where a kernel, an
    engine or the streaming is what it tests. A test of something else
    through the GPU (the CLI, the formats, rendering, the API, a second
    reference for a kernel path already fanned out) runs on the first backend
    only -- the same cases, without the fourfold fan-out: a module says
    ``ONE_BACKEND = True`` (every module of tests/cli/ is so unless it says
    ``ONE_BACKEND = False``), a test says ``@pytest.mark.one_backend`` (and an
    engine's or the streaming's test in such a module says
    ``@pytest.mark.every_backend``); a
    module that tests an engine or the package, not a kernel, says
    ``PER_ENGINE = True`` and runs on ENGINE_BACKENDS (one test says
    ``@pytest.mark.per_engine``: a costly real-size twin of a case that runs
    on every backend at a forced small size). A
    module may take over the parametrisation of ``backend`` (test_gpu_copy.py
    pairs it with the kernel paths each adapter supports) by defining
    ``backend_params``."""
    if "backend" not in metafunc.fixturenames:
        return
    custom = getattr(metafunc.module, "backend_params", None)
    if custom is not None and custom(metafunc):
        return
    if one_backend(metafunc):
        backends = [_NOT_IN_MATRIX] if MATRIX else BACKENDS[:1]
    elif metafunc.definition.get_closest_marker("per_engine") is not None or (
        getattr(metafunc.module, "PER_ENGINE", False) and not metafunc.definition.get_closest_marker("every_backend")
    ):
        backends = ENGINE_BACKENDS
    else:
        backends = BACKENDS
    metafunc.parametrize("backend", backends, indirect=True, scope="session")


def pytest_collection_modifyitems(config, items):
    """``gpu``: every test that uses a backend. In a matrix pass
    (``ONNXOP_TEST_MATRIX``) only the tests that fan out over backends are
    kept, without the fan-outs that run one kernel with other data
    (matrix_subset.py); the others are deselected (the first pass ran them)."""
    kept, dropped = [], []
    for item in items:
        uses = "backend" in getattr(item, "fixturenames", ())
        if uses:
            item.add_marker(pytest.mark.gpu)
        param = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if MATRIX and (not uses or param == _NOT_IN_MATRIX or param in RAN):
            dropped.append(item)
        else:
            kept.append(item)
    if MATRIX:
        from matrix_subset import one_per_kernel

        kept, same_kernels = one_per_kernel(kept)
        dropped += same_kernels
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def gpu(backend):
    return get_gpu(backend)


def answer_all(gpu) -> None:
    """Every schedule question answered on ``gpu`` (measured, or read from the run's cache)."""
    from onnxop_cli.gpu import choose

    choose.choice(gpu)
    for name in choose.QUESTIONS:
        choose.answer(gpu, name)


@pytest.fixture(autouse=True)
def answered_before_patches(request):
    """A GPU test that patches (a band, a limit, a kernel function it records)
    meets every schedule question answered before its patches: a question
    first asked under them measures its candidates through them, so the test
    failed run alone on an empty cache (the replay command its report prints)
    and passed where another test had asked first. Autouse fixtures set up
    before the test's own, ``monkeypatch``'s included. A test that names only
    ``backend`` (and runs its GPU through the API) meets them answered too:
    test_concat_small_bands_and_windows[dawn-vulkan] alone measured
    pieces_min_row under its band of 96 and failed ("none took the work")."""
    if "monkeypatch" not in request.fixturenames:
        return
    if "gpu" in request.fixturenames:
        answer_all(request.getfixturevalue("gpu"))
    elif "backend" in request.fixturenames:
        answer_all(get_gpu(request.getfixturevalue("backend")))


@pytest.fixture
def shrink_binding(gpu, monkeypatch):
    """``shrink_binding(size)``: ``gpu``'s storage binding is ``size`` bytes for
    this test, on the adapter's own limits for the schedule questions (answered
    before, as for every test that patches). The calibration cases
    (gpu/schedule_cases.py) are sized for a real adapter (128 MiB a binding at
    the least)."""

    def shrink(size: int) -> None:
        monkeypatch.setitem(gpu.limits, "max-storage-buffer-binding-size", size)
    return shrink


# ------------------------------------------------------------ replayable randomness
#
# Every random test draws from the ``rng`` fixture, seeded from the test's node
# id by a stable hash (zlib.crc32: Python's own ``hash`` of a str is salted per
# process, so a failing seed could never be run again), mixed with
# $ONNXOP_TEST_SEED when it is set (another run of new cases, itself
# replayable). A failing test's report says the seed and the command that
# replays it (tests/README.md).

SEED_VARIABLE = "ONNXOP_TEST_SEED"


def seed_of(nodeid: str, extra: Optional[str] = None) -> list[int]:
    """The entropy of a test's rng: crc32 of its node id, then $ONNXOP_TEST_SEED's."""
    import zlib

    extra = os.environ.get(SEED_VARIABLE, "") if extra is None else extra
    seed = [zlib.crc32(nodeid.encode())]
    if extra:
        try:
            seed.append(int(extra))
        except ValueError:
            pytest.fail(f"${SEED_VARIABLE} must be an integer, got {extra!r}")
    return seed


def seeded_rng(request, *salt: int) -> np.random.Generator:
    """A Generator from the test's seed (and ``salt``, for a test that needs
    several streams), recorded for the failure report."""
    seed = seed_of(request.node.nodeid)
    request.node.stash[_SEED_KEY] = seed
    return np.random.default_rng(seed + list(salt))


_SEED_KEY = pytest.StashKey[list]()

# hypothesis draws its cases from a hash of the test function (derandomize):
# every run tries the same cases, and a failure prints its example and the
# @reproduce_failure blob. ``--hypothesis-profile=explore --hypothesis-seed=N``
# draws others, replayable by the same N.
from hypothesis import settings as _hypothesis  # noqa: E402

# No deadline: speed lives in the benchmarks, and a loaded machine made a
# 200 ms deadline fail tests that check only results.
_hypothesis.register_profile("replayable", derandomize=True, print_blob=True, deadline=None)
_hypothesis.register_profile("explore", derandomize=False, print_blob=True, deadline=None)
_hypothesis.load_profile("replayable")


@pytest.fixture
def rng(request) -> np.random.Generator:
    return seeded_rng(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that drew random values says how to draw them again (its own
    ``rng``'s, or a module fixture's that drew them for several tests)."""
    report = yield
    drew = next((n for n in reversed(item.listchain()) if _SEED_KEY in n.stash), None)
    seed = None if drew is None else drew.stash[_SEED_KEY]
    if report.failed and seed is not None:
        import shlex

        extra = os.environ.get(SEED_VARIABLE, "")
        env = f"{SEED_VARIABLE}={shlex.quote(extra)} " if extra else ""
        report.sections.append((
            "random seed",
            (f"rng seed {seed} (crc32 of the node id {drew.nodeid!r}{', then $' + SEED_VARIABLE if extra else ''}); "
             f"replay with:\n  {env}python -m pytest -p no:cacheprovider {shlex.quote(item.nodeid)}"),
        ))
    return report


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random bit patterns (NaN payloads, -0.0, subnormals included), never zeros."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    if dtype == np.bool_:
        raw = raw & 1  # numpy bools are 0 or 1
    arr = raw.view(dtype).reshape(shape)
    if dtype.kind == "f" and n >= 2:
        # Always include -0.0 and a signalling NaN with a payload; the random
        # bits add more NaNs, infinities and subnormals on their own.
        bits = arr.reshape(-1).view(f"u{dtype.itemsize}")
        bits[0] = 1 << (8 * dtype.itemsize - 1)
        bits[-1] = _SNAN[dtype.itemsize]
    return arr


_SNAN = {2: 0x7C01, 4: 0x7F800123, 8: 0x7FF0000000000ABC}


# ------------------------------------------------------------ the CLI in-process


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """The test's own empty folder, as the current directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def unraisable(monkeypatch) -> list:
    """What Python would print as 'Exception ignored in ...' (a destructor
    failing), collected after a garbage collection at the end of the test."""
    import gc

    seen: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    yield seen
    gc.collect()
    assert seen == [], seen


def cli(capsys, *argv):
    """Run onnxop in-process: (exit code, stdout, stderr)."""
    from onnxop_cli.cli.main import run

    code = run([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


_ONCE: dict[tuple, tuple[int, str, str]] = {}


def cli_once(capsys, *argv):
    """cli() for a command that reads only what ships and writes only its own temporary folder
    (``conformance`` with no folder: about 3 CPU s): run once per process, its (exit code,
    stdout, stderr) handed to each test that asks again -- one command on the same inputs is
    one case, however many tests check what it printed."""
    key = tuple(str(a) for a in argv)
    if key not in _ONCE:
        _ONCE[key] = cli(capsys, *argv)
    return _ONCE[key]


def error_of(err: str) -> str:
    """The message of stderr's one error line (and it must be one line)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("onnxop: error: "), err
    return lines[0].removeprefix("onnxop: error: ")


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (the folder is not a package)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does: a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module

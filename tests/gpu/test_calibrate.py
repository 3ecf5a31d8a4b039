"""The kernel choice: measured on first use, cached per adapter and driver,
forced by --kernel / $ONNXOP_KERNEL, shown in info and --json.

Each test gets its own cache folder ($XDG_CACHE_HOME) and forgets the
choice the session's Gpu holds, so it starts from "never measured"."""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import version

import numpy as np
import pytest

from conftest import cli, error_of
from onnxop_cli.gpu import choose as calibrate
from onnxop_cli.gpu.kernels import KERNELS, available


@pytest.fixture
def fresh(gpu, tmp_path, monkeypatch):
    """An empty cache folder and a Gpu that has not chosen yet."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(calibrate.ENV_KERNEL, raising=False)
    monkeypatch.setitem(gpu.schedule_choices, "kernel", None)  # the session's choice, back after the test
    calibrate.force(None)
    yield gpu
    calibrate.force(None)


def entries() -> dict:
    return json.loads(calibrate.cache_path().read_text())["entries"]


def test_measured_once_then_cached(fresh):
    gpu = fresh
    first = calibrate.choice(gpu)
    assert first.reason == "measured" and first.kernel in KERNELS
    assert set(first.gbps) == {k.name for k in available(gpu)} and all(v > 0 for v in first.gbps.values())
    assert first.kernel == max(first.gbps, key=first.gbps.get)
    entry = entries()[calibrate.COPY.key(gpu)]
    assert entry["kernel"] == first.kernel and entry["gbps"] == first.gbps
    key = json.loads(calibrate.COPY.key(gpu))
    digest = hashlib.sha256(b"".join(f"{k.name}\0{k.wgsl}\0".encode() for k in KERNELS.values())).hexdigest()[:12]
    assert key == [gpu.info.our_backend, gpu.info.name, gpu.info.driver, version("onnxop"), digest]

    assert calibrate.choice(gpu) is first  # the same process asks once
    gpu.schedule_choices["kernel"] = None  # a new process on the same adapter
    again = calibrate.choice(gpu)
    assert again.reason == "cached" and again.kernel == first.kernel and again.gbps == first.gbps


def figures(gpu) -> dict[str, float]:
    """A figure for every kernel ``gpu`` runs, the portable storage's the best."""
    return {k.name: 9.0 if k.name == "storage" else 1.0 for k in available(gpu)}


def test_a_cache_written_before_is_read(fresh, monkeypatch):
    """A file as onnxop wrote it before choose.py took the cache in (gpu/choice_cache.py): the copy kernel's
    entry under a key without a name, a question's under its name, each digesting its candidates' WGSL."""
    from onnxop_cli.gpu import schedule_cases

    gpu, info = fresh, fresh.info

    def key(name: tuple[str, ...], texts) -> str:
        digest = hashlib.sha256(b"".join(f"{t}\0".encode() for t in texts)).hexdigest()[:12]
        return json.dumps([info.our_backend, info.name, info.driver, version("onnxop"), *name, digest])

    answers = {c: 2.0 if c == "generic" else 1.0 for c in calibrate.QUESTIONS["transpose"].candidates}
    entries = {key((), [f"{k.name}\0{k.wgsl}" for k in KERNELS.values()]):
               {"kernel": "storage", "gbps": figures(gpu), "measured": "2026-12-01T00:00:00Z"},
               key(("transpose",), schedule_cases.texts("transpose")):
               {"answer": "generic", "gbps": answers, "measured": "2026-12-01T00:00:00Z"}}
    path = calibrate.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "entries": entries}, indent=1))
    monkeypatch.setitem(gpu.schedule_choices, "transpose", None)  # the session's answer, back after the test
    assert calibrate.choice(gpu) == calibrate.Choice("storage", "cached", figures(gpu))
    assert calibrate.ask(gpu, "transpose") == calibrate.Choice("generic", "cached", answers)


def test_an_edited_kernel_is_measured_again(fresh, monkeypatch):
    gpu = fresh
    calibrate._write(gpu, calibrate.COPY, calibrate.Choice("storage", "measured", figures(gpu)))
    assert calibrate.choice(gpu).reason == "cached"
    gpu.schedule_choices["kernel"] = None
    monkeypatch.setattr(KERNELS["storage64"], "wgsl", KERNELS["storage64"].wgsl + "\n// edited\n")
    assert calibrate.choice(gpu).reason == "measured"


def test_the_cache_decides_and_tune_measures_again(fresh):
    gpu = fresh
    # A cached entry is believed, even one that names the slower kernel...
    calibrate._write(gpu, calibrate.COPY, calibrate.Choice("storage", "measured", figures(gpu)))
    assert calibrate.choice(gpu) == calibrate.Choice("storage", "cached", figures(gpu))
    # ...until --tune measures again and rewrites it.
    tuned = calibrate.choice(gpu, tune=True)
    assert tuned.reason == "measured" and entries()[calibrate.COPY.key(gpu)]["gbps"] == tuned.gbps


def test_threads_asking_at_once_measure_once(fresh, monkeypatch):
    """Threads asking one question while another call holds the engine's
    lock (a copy, say) each measured it in turn, once the lock came free: the
    first to get it now measures, and the others take its answer."""
    import threading

    gpu, measured = fresh, []
    monkeypatch.setitem(gpu.schedule_choices, "gather_words", None)  # the session's answer, back after the test
    real = calibrate._measure
    monkeypatch.setattr(calibrate, "_measure", lambda g, q: measured.append(q.name) or real(g, q))
    got = []
    with gpu.lock:
        threads = [threading.Thread(target=lambda: got.append(calibrate.ask(gpu, "gather_words"))) for _ in range(3)]
        for t in threads:
            t.start()
        threading.Event().wait(0.5)  # all three past the cache and at the lock
    for t in threads:
        t.join(timeout=120)
    assert measured == ["gather_words"] and len(got) == 3 and got[0] is got[1] is got[2] and got[0].reason == "measured"
    assert list(entries()) == [calibrate.QUESTIONS["gather_words"].key(gpu)]


@pytest.mark.same_kernel("text")  # each text is the cache reader's (host code); one is measured again per backend
@pytest.mark.parametrize(
    "text",
    ["{not json", "", "[]", '{"version": 1, "entries": []}', '{"version": 99, "entries": {}}', "\xff\xfe",
     "[" * 100_000],  # nested past the parser's recursion: was "allocating gather buffers failed", exit 1
)
def test_a_corrupt_cache_is_ignored_and_rewritten(fresh, text):
    gpu = fresh
    path = calibrate.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="latin-1")
    found = calibrate.choice(gpu)
    assert found.reason == "measured"
    assert entries()[calibrate.COPY.key(gpu)]["kernel"] == found.kernel
    # no temporary left; the lock file stays (empty: removing it would let a waiter lock a file no longer there)
    assert sorted(p.name for p in path.parent.iterdir()) == ["kernels.json", "kernels.json.lock"]


@pytest.mark.same_kernel("entry")  # as above: the reader's cases, one measured again per backend
@pytest.mark.parametrize("entry", [{"kernel": "uniform64", "gbps": {}}, {"kernel": "storage"}, "storage", None])
def test_a_bad_entry_is_measured_again(fresh, entry):
    gpu = fresh
    path = calibrate.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "entries": {calibrate.COPY.key(gpu): entry}}))
    assert calibrate.choice(gpu).reason == "measured"


def test_an_unwritable_cache_still_measures(fresh, monkeypatch, tmp_path):
    gpu = fresh
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    found = calibrate.choice(gpu)
    assert found.reason == "measured"


def test_forced_kernel(fresh, monkeypatch):
    gpu = fresh
    calibrate.force("storage")
    assert calibrate.choice(gpu) == calibrate.Choice("storage", "forced")
    calibrate.force(None)
    monkeypatch.setenv(calibrate.ENV_KERNEL, "storage")
    assert calibrate.choice(gpu) == calibrate.Choice("storage", "forced")
    assert not calibrate.cache_path().exists()  # forcing measures and caches nothing


def test_cli_forced_kernel_runs_and_is_reported(fresh, capsys, cwd, rng):
    gpu = fresh
    x = rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    np.save(cwd / "x.npy", x)
    for name in (k.name for k in available(gpu)):
        code, out, _ = cli(capsys, "--kernel", name, "flatten", "x.npy", "-b", gpu.info.our_backend, "-o", "y.npy", "--json")
        assert code == 0
        assert json.loads(out)["kernel"] == {"name": name, "reason": "forced"}
        assert np.load(cwd / "y.npy").tobytes() == x.tobytes()
    code, out, _ = cli(capsys, "flatten", "x.npy", "-b", gpu.info.our_backend, "-o", "y.npy", "--json")
    assert code == 0 and json.loads(out)["kernel"]["reason"] in ("measured", "cached")


def test_cli_refuses_unknown_and_unavailable_kernels(fresh, capsys, cwd, monkeypatch):
    gpu = fresh
    np.save(cwd / "x.npy", np.arange(6, dtype=np.float32))
    code, _, err = cli(capsys, "--kernel", "uniform64", "flatten", "x.npy", "-b", gpu.info.our_backend, "-o", "y.npy")
    every = "storage, storage64"
    assert code == 2 and error_of(err) == f"unknown kernel 'uniform64'; choose one of {every}"
    monkeypatch.setenv(calibrate.ENV_KERNEL, "fast")
    code, _, err = cli(capsys, "flatten", "x.npy", "-b", gpu.info.our_backend, "-o", "y.npy")
    assert code == 2 and error_of(err) == f"unknown kernel 'fast'; choose one of {every}"
    monkeypatch.delenv(calibrate.ENV_KERNEL)
    if "shader-int64" not in gpu.features:
        code, _, err = cli(capsys, "--kernel", "storage64", "flatten", "x.npy", "-b", gpu.info.our_backend, "-o", "y.npy")
        assert code == 2
        assert error_of(err) == (
            f"kernel 'storage64' needs shader-int64, which {gpu.name} lacks; available: storage")
    assert not (cwd / "y.npy").exists()


def test_info_names_the_kernel_and_why(fresh, capsys):
    gpu = fresh
    code, out, _ = cli(capsys, "info", "-b", gpu.info.our_backend, "--json")
    assert code == 0
    kernel = json.loads(out)["kernel"]
    assert kernel["name"] in KERNELS and kernel["reason"] == "measured"
    code, out, _ = cli(capsys, "info", "-b", gpu.info.our_backend)
    assert f"Copy kernel: {kernel['name']} (" in out

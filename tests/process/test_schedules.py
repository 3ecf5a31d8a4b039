"""Schedule questions (gpu/choose.py): answered once per adapter by
measurement and cached, asked only by the kernels that need them, forced by
$ONNXOP_SCHEDULE, a corrupt cache ignored. Real processes, each test on a
cache folder of its own (the question measured from nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from commands import run_commands
from conftest import random_array
from onnxop_cli.gpu import choose

ONNXOP = [sys.executable, "-m", "onnxop_cli"]
CANDIDATES = choose.QUESTIONS["transpose"].candidates


def forced_but(*asked: str, **answers: str) -> str:
    """$ONNXOP_SCHEDULE for an ``info`` run: ``answers`` forced, and every question neither in
    them nor ``asked`` forced to its first candidate. info asks every question, and one asked
    from nothing is measured (about 0.1 CPU s each on lavapipe) where the test looks only at
    the lines of ``asked`` and ``answers``."""
    rest = {n: q.candidates[0] for n, q in choose.QUESTIONS.items() if n not in asked and n not in answers}
    return ",".join(f"{n}={a}" for n, a in {**answers, **rest}.items())


def environment(cache) -> dict[str, str]:
    """A process's environment with ``cache`` for its cache folder and no kernel, gather or schedule forced."""
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan", "XDG_CACHE_HOME": str(cache)}
    for name in ("ONNXOP_KERNEL", "ONNXOP_GATHER", choose.ENV_SCHEDULE):
        env.pop(name, None)
    return env


def onnxop(*argv, cwd, cache, schedule=None):
    env = environment(cache)
    if schedule is not None:
        env[choose.ENV_SCHEDULE] = schedule
    return subprocess.run([*ONNXOP, *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def one_process(cwd, cache, *commands: tuple[list, str | None]) -> list[subprocess.CompletedProcess]:
    """``(argv, $ONNXOP_SCHEDULE or None)`` commands run in order by one fresh process (tests/commands.py):
    for commands none of which must find the cache file an earlier one of them wrote (a process keeps
    the answers it measured or read, so a "cached" answer needs a process of its own)."""
    return run_commands([(cwd, argv, None, {} if schedule is None else {choose.ENV_SCHEDULE: schedule})
                         for argv, schedule in commands], env=environment(cache), process=True)


@pytest.fixture
def folder(tmp_path, rng):
    a = random_array(rng, (40, 72), "float32")
    np.save(tmp_path / "a.npy", a)
    return tmp_path, a


def transpose(folder, cache, schedule=None) -> dict:
    """The transpose question's answer a `transpose --json` reports (its output checked)."""
    path, a = folder
    (path / "b.npy").unlink(missing_ok=True)
    done = onnxop("transpose", "a.npy", "-o", "b.npy", "--json", cwd=path, cache=cache, schedule=schedule)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert np.load(path / "b.npy").tobytes() == np.ascontiguousarray(a.T).tobytes()
    return json.loads(done.stdout)["schedules"]["transpose"]


def answers(cache) -> dict:
    """The cache file's question entries, by question: {} when there is none."""
    path = cache / "onnxop" / choose.CACHE_FILE
    entries = json.loads(path.read_text())["entries"] if path.exists() else {}
    return {json.loads(key)[4]: entry for key, entry in entries.items() if "answer" in entry}


def test_measured_once_then_read_from_the_cache(folder, tmp_path):
    path, a = folder
    cache = tmp_path / "cache"
    transposed = ["transpose", "a.npy", "-o", "b.npy", "--json"]
    flat, done = one_process(path, cache, (["flatten", "a.npy", "-o", "f.npy", "--json"], None), (transposed, None))
    assert flat.returncode == 0 and json.loads(flat.stdout)["schedules"] == {}  # a Flatten measures no transpose
    assert done.returncode == 0 and done.stderr == "", done.stderr
    first = json.loads(done.stdout)["schedules"]["transpose"]
    assert first["reason"] == "measured" and first["name"] in CANDIDATES
    (entry,) = answers(cache).values()  # the transpose question only: Flatten's and GatherND's never asked
    assert entry["answer"] == first["name"] and set(entry["gbps"]) == set(CANDIDATES)
    assert np.load(path / "b.npy").tobytes() == np.ascontiguousarray(a.T).tobytes()
    text = (cache / "onnxop" / choose.CACHE_FILE).read_text()
    # a second process reads it (and measures nothing); info asks every question: the cached answer with
    # its figures, a forced one as forced
    again, done = one_process(path, cache, (transposed, None),
                              (["info"], forced_but("transpose", gather_source="resident")))
    assert again.returncode == 0 and json.loads(again.stdout)["schedules"]["transpose"] == {
        "name": first["name"], "reason": "cached"}, again.stderr
    assert (cache / "onnxop" / choose.CACHE_FILE).read_text() == text
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("Schedules:")
    assert lines[at + 1].startswith(f"  transpose: {first['name']} (cached: blocked ")
    assert lines[at + 2] == "  gather_source: resident (forced)"


def test_a_forced_answer_wins(folder, tmp_path):
    """Forced, then measured, then forced over that answer (the process's and the cache's): one process."""
    path, a = folder
    cache = tmp_path / "cache"
    argv = ["transpose", "a.npy", "-o", "b.npy", "--json"]
    found = iter(one_process(path, cache, (argv, "transpose=generic"), (argv, None),
                             (argv, " transpose = blocked ,"), (argv, " transpose = generic ,")))

    def answer() -> dict:
        done = next(found)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return json.loads(done.stdout)["schedules"]["transpose"]

    assert answer() == {"name": "generic", "reason": "forced"}
    measured = answer()
    assert measured["reason"] == "measured" and measured["name"] in CANDIDATES
    (entry,) = answers(cache).values()  # forcing measured and cached nothing: the second command measured
    assert entry["answer"] == measured["name"]
    forced = [answer(), answer()]  # the measured answer is the process's own and the cache's: forced wins over it
    assert forced == [{"name": name, "reason": "forced"} for name in ("blocked", "generic")]
    assert np.load(path / "b.npy").tobytes() == np.ascontiguousarray(a.T).tobytes()


def damaged(text: str, damage: str) -> str:
    """The cache file's text with its question entry damaged: an unknown
    answer, or another candidate's figure under another name (measured
    among other candidates than today's)."""
    data = json.loads(text)
    (entry,) = [e for e in data["entries"].values() if "answer" in e]
    if damage == "answer":
        entry["answer"] = "fastest"
    else:  # a candidate that is not the answer: the answer itself still has its figure
        other = next(c for c in CANDIDATES if c != entry["answer"])
        entry["gbps"][other + "2"] = entry["gbps"].pop(other)
    return json.dumps(data)


def test_a_corrupt_cache_is_ignored(folder, tmp_path):
    """Each damage in turn (the whole file, then the question's entry) is
    measured again and rewritten; the last rewrite is then read."""
    cache = tmp_path / "cache"
    path = cache / "onnxop" / choose.CACHE_FILE
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    for damage in ("answer", "candidate", None):
        assert transpose(folder, cache)["reason"] == "measured"  # the damaged file or entry was not used
        (entry,) = answers(cache).values()  # rewritten whole
        assert entry["answer"] in CANDIDATES and set(entry["gbps"]) == set(CANDIDATES)
        if damage is not None:
            path.write_text(damaged(path.read_text(), damage))
    assert transpose(folder, cache)["reason"] == "cached"


def test_a_bad_schedule_is_refused_in_one_line(folder, tmp_path):
    """What the refusals print is under test, not the process: one process runs both, each with its
    $ONNXOP_SCHEDULE (tests/commands.py)."""
    path, _ = folder
    refused = [
        ("transpose=fast", "$ONNXOP_SCHEDULE: transpose cannot be 'fast'; choose one of blocked, generic"),
        ("speed\n=1", "$ONNXOP_SCHEDULE: 'speed\\n=1' is not QUESTION=ANSWER with a question among transpose, "
         "gather_source, scatter_lines, pieces_min_row, gather_words"),
        ("transpose=blocked16", "$ONNXOP_SCHEDULE: transpose cannot be 'blocked16'; choose one of blocked, generic"),
    ]
    done = run_commands([(path, ["transpose", "a.npy", "-o", "b.npy"], None, {choose.ENV_SCHEDULE: schedule})
                         for schedule, _ in refused], env=environment(tmp_path / "cache"))
    assert len(done) == len(refused)
    for (schedule, message), r in zip(refused, done):
        assert r.returncode == 2 and r.stderr == f"onnxop: error: {message}\n", (schedule, r.stderr)
        assert not (path / "b.npy").exists()



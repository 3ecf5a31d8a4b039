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
    path, _ = folder
    cache = tmp_path / "cache"
    done = onnxop("flatten", "a.npy", "-o", "f.npy", "--json", cwd=path, cache=cache)
    assert done.returncode == 0 and json.loads(done.stdout)["schedules"] == {}
    assert answers(cache) == {}  # a Flatten measures no transpose
    first = transpose(folder, cache)
    assert first["reason"] == "measured" and first["name"] in CANDIDATES
    (entry,) = answers(cache).values()  # the transpose question only: GatherND's was never asked
    assert entry["answer"] == first["name"] and set(entry["gbps"]) == set(CANDIDATES)
    text = (cache / "onnxop" / choose.CACHE_FILE).read_text()
    assert transpose(folder, cache) == {"name": first["name"], "reason": "cached"}  # the second process reads it
    assert (cache / "onnxop" / choose.CACHE_FILE).read_text() == text  # and measures nothing
    # info asks every question: the cached answer with its figures, a forced one as forced
    done = onnxop("info", cwd=path, cache=cache, schedule=forced_but("transpose", gather_source="resident"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("Schedules:")
    assert lines[at + 1].startswith(f"  transpose: {first['name']} (cached: blocked ")
    assert lines[at + 2] == "  gather_source: resident (forced)"


def test_a_forced_answer_wins(folder, tmp_path):
    cache = tmp_path / "cache"
    assert transpose(folder, cache, "transpose=generic") == {"name": "generic", "reason": "forced"}
    assert answers(cache) == {}  # forcing measures and caches nothing
    measured = transpose(folder, cache)["name"]
    other = next(c for c in CANDIDATES if c != measured)
    assert transpose(folder, cache, f" transpose = {other} ,") == {"name": other, "reason": "forced"}  # over the cache


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



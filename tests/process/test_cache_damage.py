"""A damaged but parseable cache -- one letter changed in
a key of the cffi header cache or of the kernel-calibration cache -- is
ignored and rewritten, never an internal error. Real processes on a real
cache folder: one written from nothing per module (fixture fresh_cache; its next
processes use it), a copy of it damaged per case, and the rewrite is that
cache again."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import random_array
from made_once import made_once
from onnxop_cli.gpu import choose
from onnxop_cli.gpu.engines import cffi_types

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def onnxop(*argv, cwd, cache, schedule: str = ""):
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan", "XDG_CACHE_HOME": str(cache)}
    for name in ("ONNXOP_KERNEL", "ONNXOP_SCHEDULE", "ONNXOP_GATHER"):
        env.pop(name, None)
    if schedule:
        env["ONNXOP_SCHEDULE"] = schedule
    return subprocess.run([*ONNXOP, *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def folder(tmp_path, rng):
    a = random_array(rng, (3, 4, 5), "float32")
    np.save(tmp_path / "a.npy", a)
    return tmp_path, a


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """One cache folder written from nothing by real processes (a transpose,
    then ``info``: the cffi header cache and the calibration cache), shared by
    the module: every case damages its own copy. Made once in a run."""

    def make():
        rng = np.random.default_rng(7)
        path = tmp_path_factory.mktemp("fresh")
        a = random_array(rng, (3, 4, 5), "float32")
        np.save(path / "a.npy", a)
        cache = path / "cache"
        transpose_ok((path, a), cache)
        cffi = cffi_file(cache).stat().st_mtime_ns
        info_kernel((path, a), cache)
        kernel = info_kernel((path, a), cache)
        # what a process writes, the next one uses (each case below checks its rewrite is that file again)
        assert cffi_file(cache).stat().st_mtime_ns == cffi
        assert kernel["reason"] == "cached" or not kernels_file(cache).exists(), kernel
        return cache

    return made_once(tmp_path_factory, "cache-damage-fresh", make)


def copy_of(fresh_cache, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(fresh_cache, cache)
    return cache


def transpose_ok(folder, cache):
    path, a = folder
    done = onnxop("transpose", "a.npy", "-o", "b.npy", cwd=path, cache=cache)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr and done.stderr == ""
    assert np.load(path / "b.npy").tobytes() == np.ascontiguousarray(a.T).tobytes()


def cffi_file(cache):
    (found,) = (cache / "onnxop").glob("cffi-*.json")
    return found


def rehash(text: str) -> str:
    """The state's text with a first line whose digest matches it again:
    only the schema check stands between such a file and cffi."""
    _, _, body = text.partition("\n")
    head = {"format": cffi_types._CACHE_FORMAT, "sha256": hashlib.sha256(body.encode()).hexdigest()}
    return json.dumps(head) + "\n" + body


# Each damage takes its own way out of cffi_types._decode (a process each: the header is parsed
# once a process). Not kept, each the same way as one here: a letter in an attribute's name with
# the digest broken (the digest, as "typedef WGPV"), "c_name_with_marker" misspelt (an attribute
# no type may carry, as "fldnamez").
@pytest.mark.parametrize(
    "damage",
    [
        lambda t: rehash(t.replace('"totype"', '"totypf"', 1)),  # a type's own attribute missing, digest matching
        lambda t: rehash(t.replace('"fldnames"', '"fldnamez"', 1)),  # an attribute no type may carry
        lambda t: rehash(t.replace('"_declarations"', '"_declarationz"', 1)),
        lambda t: t.replace("typedef WGPU", "typedef WGPV", 1),  # a declaration's name: only the digest sees it
        lambda t: t.replace('"format": 2', '"format": 1', 1),
        lambda t: t.partition("\n")[2],  # the first line lost
    ],
)
def test_a_damaged_cffi_cache_is_ignored_and_rewritten(folder, tmp_path, fresh_cache, damage):
    cache = copy_of(fresh_cache, tmp_path)
    path = cffi_file(cache)
    good = path.read_text()
    bad = damage(good)
    assert bad != good
    path.write_text(bad)
    transpose_ok(folder, cache)
    rewritten = cffi_file(cache).read_text()
    assert rewritten != bad
    cffi_types._decode(rewritten)  # a valid cache again
    assert rewritten == good  # the one the fresh cache's next process used (fixture fresh_cache)


def kernels_file(cache):
    return cache / "onnxop" / "kernels.json"


def info_kernel(folder, cache, schedule: str = "") -> str:
    done = onnxop("info", "--json", cwd=folder[0], cache=cache, schedule=schedule)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)["kernel"]


# the schedule questions' answers, forced where a case's process asks the copy kernel's alone: a whole
# file refused ("version", "entries") is the copy entry's case too (choose._load serves every
# question), and measuring the schedules again (most of `info`'s seconds) is no part of it
SCHEDULES = ",".join(f"{name}={q.candidates[0]}" for name, q in choose.QUESTIONS.items())

# Not kept, each the same way as one here (choose._load, choose._valid_entry): "gbps" and "measured"
# misspelt (an entry's keys, as "kernal"), "version" (the file's keys, as "entrief").
KERNEL_DAMAGE = [
    ('"kernel"', '"kernal"'),
    ('"entries"', '"entrief"'),
    ('"storage64":', '"storage65":'),  # a key inside gbps
    ('"storage":', '"storagf":'),
    ('"kernel": "storage', '"kernel": "xtorage'),
]


@pytest.mark.parametrize("old, new", KERNEL_DAMAGE)
def test_a_damaged_calibration_cache_is_ignored_and_rewritten(folder, tmp_path, fresh_cache, old, new):
    cache = copy_of(fresh_cache, tmp_path)
    path = kernels_file(cache)
    if not path.exists():
        pytest.skip("this adapter runs one copy kernel: nothing is measured or cached")
    good = path.read_text()
    assert old in good, good
    # inside the copy kernel's entry where the text is there too (the schedule questions' entries have gbps)
    at = good.rfind('\n  "[', 0, good.index('"kernel"'))
    at = at if old in good[at:] else 0
    path.write_text(good[:at] + good[at:].replace(old, new, 1))
    chosen = info_kernel(folder, cache, SCHEDULES)
    assert chosen["reason"] == "measured"  # the damaged entry was not used
    rewritten = json.loads(path.read_text())
    assert set(rewritten) == {"version", "entries"}
    # the damaged entry is gone, the new one written (beside the schedule questions' entries: test_schedules.py)
    (entry,) = [e for e in rewritten["entries"].values() if "kernel" in e]
    assert set(entry) == {"kernel", "gbps", "measured"}
    assert not re.search(r"kernal|gbpz|measurfd|entrief|versiom|storage65|storagf|xtorage", path.read_text())
    # valid under the key the fresh cache's next process read it by (fixture fresh_cache): used
    (key,) = [k for k, e in json.loads(good)["entries"].items() if "kernel" in e]
    assert choose._load(path) == rewritten["entries"] and rewritten["entries"][key] == entry

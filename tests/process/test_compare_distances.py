"""``onnxop compare``'s largest distances per pair (max |a-b|, max rel, max
ulp, NaN against a number), from real commands, against an independent
computation: the ulp distance of an 8-, 4- or 16-bit type is the distance of
two ranks on the sorted line of every value the type has (every code turned
into float64, NaNs dropped, equal values merged: -0.0 is 0.0), of float32
and float64 a count of np.nextafter steps. No bit tricks in the reference.
What compare prints is under test, not the process: the module's commands
run in one process (tests/commands.py, fixture ``ran``)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from onnx import numpy_helper

from commands import Prepared
from conftest import seeded_rng

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf on purpose, in the reference

SMALL = ["float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
         "float8_e8m0fnu", "float4_e2m1fn"]


def np_type(name: str):
    return np.dtype(getattr(ml_dtypes, name, None) or name)


def every_code(name: str) -> np.ndarray:
    """Every value the type has, one per code."""
    t = np_type(name)
    count = 16 if name == "float4_e2m1fn" else 1 << (8 * t.itemsize)
    return np.arange(count, dtype=f"u{t.itemsize}").view(t)


def ranks(values: np.ndarray, name: str) -> np.ndarray:
    line = every_code(name).astype(np.float64)
    line = np.unique(line[~np.isnan(line)])  # sorted; -0.0 and 0.0 are one entry
    return np.searchsorted(line, values.astype(np.float64))


def save_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def expected(a: np.ndarray, b: np.ndarray, ulps: np.ndarray) -> dict:
    """The distances as the docs define them, from float64 values; ``ulps`` each element's ulp distance."""
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    na, nb = np.isnan(wa), np.isnan(wb)
    finite = np.isfinite(wa) & np.isfinite(wb)
    gap = np.abs(wa - wb)[finite]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(gap == 0, 0.0, gap / np.abs(wb[finite]))
    numbers = ~(na | nb)
    return {"max_abs": float(gap.max()), "max_rel": float(rel.max()) if np.isfinite(rel.max()) else "inf",
            "max_ulp": int(ulps[numbers].max()), "nan_vs_number": int(np.count_nonzero(na ^ nb))}


def compare_json(done) -> tuple[int, dict]:
    """A ``compare ... --json`` command's exit code and document."""
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results); the
    values drawn from the module's seed (replayable: conftest's failure report)."""
    return prepared.run(tmp_path_factory, seeded_rng(request))


@prepared
def every_type(tmp_path, rng):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    want = {}
    for name in SMALL:  # random codes on both sides: NaNs, infinities, zeros of both signs, far and near
        codes = every_code(name)
        ia, ib = rng.integers(0, len(codes), 300), rng.integers(0, len(codes), 300)
        near = np.clip(ia + rng.integers(-3, 4, 300), 0, len(codes) - 1)  # a few codes apart, or equal
        for label, a, b in ((f"{name}_far", codes[ia], codes[ib]), (f"{name}_near", codes[ia], codes[near])):
            save_pb(tmp_path / "a" / f"{label}.pb", a, label)
            save_pb(tmp_path / "b" / f"{label}.pb", b, label)
            want[label] = expected(a, b, np.abs(ranks(a, name) - ranks(b, name)))
    for name in ("float32", "float64"):  # steps of np.nextafter, across zero and into infinity
        t = np.dtype(name)
        a = (rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200)).astype(t)
        a[:20] = rng.choice([0.0, -0.0, np.finfo(t).smallest_subnormal, -np.finfo(t).smallest_subnormal], 20)
        a[20:25] = np.finfo(t).max
        steps = rng.integers(0, 40, 200)
        toward = np.where(rng.random(200) < 0.5, np.inf, -np.inf).astype(t)
        toward[20:25] = np.inf
        b = a.copy()
        for i, k in enumerate(steps):
            for _ in range(k):
                b[i] = np.nextafter(b[i], toward[i])
        b[-1], a[-2] = np.nan, np.nan  # NaN against a number: counted, no distance
        save_pb(tmp_path / "a" / f"{name}.pb", a, name)
        save_pb(tmp_path / "b" / f"{name}.pb", b, name)
        ulps = steps.copy()
        ulps[20:25] = np.where(steps[20:25] > 0, 1, 0)  # max -> inf is one step, then it stays
        want[name] = expected(a, b, ulps)
    return want, [["compare", "a", "b", "--json"]]


def test_ulp_abs_and_rel_of_every_float_type_match_an_independent_count(ran):
    want, [done] = ran["every_type"]
    code, doc = compare_json(done)
    assert code == 1
    got = {p["a"]["name"]: {k: p[k] for k in ("max_abs", "max_rel", "max_ulp", "nan_vs_number")} for p in doc["pairs"]}
    assert got == want, [(k, got[k], want[k]) for k in want if got.get(k) != want[k]]


@prepared
def payloads(tmp_path, rng):
    a = np.array([-0.0, np.nan, 1.0, np.inf], np.float32)
    b = np.array([0.0, np.nan, 1.0, np.inf], np.float32)
    b.view(np.uint32)[1] |= 0x123  # another payload
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return [["compare", "a.npy", "b.npy", "--json"], ["compare", "a.npy", "b.npy", "--first", "0"]]


def test_nan_payloads_and_signed_zeros_are_bit_differences_at_distance_0(ran):
    _, (as_json, done) = ran["payloads"]
    code, doc = compare_json(as_json)
    (pair,) = doc["pairs"]
    assert code == 1 and pair["differing"] == 2
    assert (pair["max_abs"], pair["max_rel"], pair["max_ulp"], pair["nan_vs_number"]) == (0.0, 0.0, 0, 0)
    assert done.stdout.splitlines()[0] == ("a.npy vs b.npy: different: 2 of 4 elements (shape=(4,), "
                                           "dtype=float32, exact, max |a-b|=0.0, max rel=0.0, max ulp=0)")


RULES = [["--rtol", "1e-6"], ["--ulp", "2"]]


@prepared
def tolerances(tmp_path, rng):
    a = np.array([1.0, 2.0, 4.0], np.float32)
    b = a.copy()
    b.view(np.uint32)[1] += 1  # one ulp of 2.0: 2.38e-07, relative 1.19e-07
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return [["compare", "a.npy", "b.npy", *rule] for rule in RULES]


def test_a_pair_within_a_tolerance_says_how_far_apart_it_is(ran):
    for rule, done in zip(RULES, ran["tolerances"][1], strict=True):
        assert done.returncode == 0, (rule, done.stderr)
        assert done.stdout.rstrip().endswith("max |a-b|=2.38419e-07, max rel=1.19209e-07, max ulp=1)"), (
            rule, done.stdout)

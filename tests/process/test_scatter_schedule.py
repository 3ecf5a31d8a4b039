"""ScatterElements with a reduction over FEWEST_LINES to LINES_AT_LEAST
lines asks the ``scatter_lines`` schedule question (gpu/choose.py): the line
kernel or the claim/apply rounds, measured once per adapter and cached, forced
by $ONNXOP_SCHEDULE, shown by `onnxop info`; both answers write the
reference's bytes. Fewer lines take the rounds and more the lines, asking nothing. Real processes on
a cache folder of their own (several commands in one where none must read what another wrote:
tests/commands.py)."""

from __future__ import annotations

import json

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from test_schedules import answers, forced_but, one_process, onnxop


def reference(x, i, u) -> bytes:
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")
    model = helper.make_model(helper.make_graph([node], "g", [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for n, a in (("x", x), ("i", i), ("u", u))], [helper.make_tensor_value_info("y", 1, x.shape)]))
    return ReferenceEvaluator(model).run(None, {"x": x, "i": i, "u": u})[0].tobytes()


def test_scatter_lines_is_asked_between_the_bounds(tmp_path, rng):
    cache = tmp_path / "cache"
    cases = {lines: (rng.standard_normal((lines, 8)).astype(np.float32),
                     rng.integers(-8, 8, (lines, 20)).astype(np.int64),
                     rng.standard_normal((lines, 20)).astype(np.float32)) for lines in (4, 40, 300)}
    for lines, arrays in cases.items():
        for name, a in zip("xiu", arrays):
            np.save(tmp_path / f"{name}{lines}.npy", a)

    runs = iter(range(10))

    def asked(*commands: tuple) -> list[dict]:
        """Each ``(lines, $ONNXOP_SCHEDULE or None)`` run in one process (tests/commands.py), its output
        checked: what each reported. A "cached" answer needs a process after the one that measured."""
        names = [f"o{next(runs)}.npy" for _ in commands]
        done = one_process(tmp_path, cache, *[
            (["scatter-elements", f"x{lines}.npy", "--indices", f"i{lines}.npy", "--updates", f"u{lines}.npy",
              "--axis", "1", "--reduction", "add", "-o", name, "--json"], schedule)
            for (lines, schedule), name in zip(commands, names)])
        for (lines, schedule), name, r in zip(commands, names, done):
            assert r.returncode == 0 and r.stderr == "", r.stderr
            assert np.load(tmp_path / name).tobytes() == reference(*cases[lines]), (lines, schedule)
        return [json.loads(r.stdout)["schedules"] for r in done]

    # outside the bounds no question: the rounds (4 lines) and the lines (300)
    assert asked((4, None), (300, None)) == [{}, {}]
    assert "scatter_lines" not in answers(cache)
    [first] = [found["scatter_lines"] for found in asked((40, None))]
    assert first["reason"] == "measured" and first["name"] in ("lines", "rounds"), first
    assert set(answers(cache)["scatter_lines"]["gbps"]) == {"lines", "rounds"}
    assert [found["scatter_lines"] for found in asked((40, None), (40, "scatter_lines=lines"),
                                                        (40, "scatter_lines=rounds"))] == [
        {"name": first["name"], "reason": "cached"}, {"name": "lines", "reason": "forced"},
        {"name": "rounds", "reason": "forced"}]
    done = onnxop("info", cwd=tmp_path, cache=cache, schedule=forced_but(scatter_lines="rounds"))
    assert done.returncode == 0 and "  scatter_lines: rounds (forced)\n" in done.stdout, done.stderr

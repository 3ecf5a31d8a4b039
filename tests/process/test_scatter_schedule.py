"""ScatterElements with a reduction over FEWEST_LINES to LINES_AT_LEAST
lines asks the ``scatter_lines`` schedule question (gpu/choose.py): the line
kernel or the claim/apply rounds, measured once per adapter and cached, forced
by $ONNXOP_SCHEDULE, shown by `onnxop info`; both answers write the
reference's bytes. Fewer lines take the rounds and more the lines, asking nothing. Real processes on a cache folder of their own."""

from __future__ import annotations

import json

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from test_schedules import answers, forced_but, onnxop


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

    def asked(lines: int, schedule=None) -> dict:
        done = onnxop("scatter-elements", f"x{lines}.npy", "--indices", f"i{lines}.npy", "--updates",
                      f"u{lines}.npy", "--axis", "1", "--reduction", "add", "-o", "o.npy", "--json", cwd=tmp_path,
                      cache=cache, schedule=schedule)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert np.load(tmp_path / "o.npy").tobytes() == reference(*cases[lines]), (lines, schedule)
        (tmp_path / "o.npy").unlink()
        return json.loads(done.stdout)["schedules"]

    # outside the bounds no question: the rounds (4 lines) and the lines (300)
    assert asked(4) == {} and asked(300) == {}
    assert "scatter_lines" not in answers(cache)
    first = asked(40)["scatter_lines"]
    assert first["reason"] == "measured" and first["name"] in ("lines", "rounds"), first
    assert set(answers(cache)["scatter_lines"]["gbps"]) == {"lines", "rounds"}
    assert asked(40)["scatter_lines"] == {"name": first["name"], "reason": "cached"}
    for forced in ("lines", "rounds"):
        assert asked(40, f"scatter_lines={forced}")["scatter_lines"] == {"name": forced, "reason": "forced"}
    done = onnxop("info", cwd=tmp_path, cache=cache, schedule=forced_but(scatter_lines="rounds"))
    assert done.returncode == 0 and "  scatter_lines: rounds (forced)\n" in done.stdout, done.stderr

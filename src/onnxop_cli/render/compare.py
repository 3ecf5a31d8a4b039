"""What ``onnxop compare`` prints: a line per pair and its first
differences, or the --json document. Returns text and dicts; never prints.

    a.npy vs b.npy: different: 2 of 12 elements (shape=(3, 4), dtype=float32, exact,
                    max |a-b|=1.19209e-07, max rel=9.14e-08, max ulp=1)
      [1, 2]: 1.304 (0x3fa6e979) vs 1.3040001 (0x3fa6e97a)
    3 compared, 1 different, 0 only in the first, 435 only in the second

A floating pair's largest distances (core/distance.py) follow its line when
it differs, and when it is the same within a tolerance but not bit for bit.
With --paired-only the names without a partner are counted in the last line,
not listed one by one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.compare import Outcome, Pair
    from ..core.tensor import DType


def _value_text(v: Any, dtype: DType) -> str:
    from .show import value_text

    if isinstance(v, str):
        return repr(v)
    if isinstance(v, list):
        return f"({value_text(v[0], dtype)}{'+' if v[1] >= 0 or v[1] != v[1] else '-'}{value_text(abs(v[1]), dtype)}j)"
    return value_text(v, dtype)


def render(outcome: Outcome) -> str:
    """The text report: a line per pair, the first differences under each.
    Paths and tensor names come from the command line and the files: quoted
    (render.quote), so none can end a line."""
    from .node import quote, quoted

    lines = []
    for p in outcome.pairs:
        head = f"{quote(p.a_label)} vs {quote(p.b_label)}: "
        what = f"shape={p.a.shape}, dtype={p.a.dtype}"
        named = p.a.named and p.b.named and p.a.name != p.b.name  # (a file's stem is no name to report)
        names = f", names {quoted(p.a.name)} and {quoted(p.b.name)}" if named else ""
        if p.problem:
            lines.append(head + f"different: {p.problem}{names}")
            continue
        how = p.mode if p.mode == "exact" else outcome.rule.describe()
        if p.mode == "exact" and outcome.rule.mode != "exact":
            how = f"exact ({p.a.dtype} is not a floating type)"
        if p.same:
            d = p.distance
            gap = _distance(p) if d and (d.max_abs or d.max_ulp or d.max_rel) else ""
            lines.append(head + f"same ({what}, {p.count} elements, {how}{gap}{names})")
            continue
        gap = _distance(p)
        lines.append(head + f"different: {p.differing} of {p.count} elements ({what}, {how}{gap}{names})")
        for d in p.first:
            a = _value_text(d.a, p.a.dtype) + (f" ({d.a_bits})" if d.a_bits else "")
            b = _value_text(d.b, p.a.dtype) + (f" ({d.b_bits})" if d.b_bits else "")
            lines.append(f"  {list(d.index)}: {a} vs {b}")
        if p.differing > len(p.first):
            lines.append(f"  ... {p.differing - len(p.first)} more")
    if not outcome.paired_only:
        for label in outcome.only_a:
            lines.append(f"{quote(label)}: only in the first (no tensor of that name in the second)")
        for label in outcome.only_b:
            lines.append(f"{quote(label)}: only in the second (no tensor of that name in the first)")
    if outcome.left_out:
        lines.append(f"left out (node-test inputs with no partner): {', '.join(map(quote, outcome.left_out))}")
    if len(outcome.pairs) != 1 or outcome.only_a or outcome.only_b:
        lines.append(summary(outcome))
    return "\n".join(lines)


def summary(outcome: Outcome) -> str:
    """The last line: pairs compared and differing, and the names without a
    partner on each side (with --paired-only, no difference; nothing paired
    is one)."""
    bad = sum(not p.same for p in outcome.pairs)
    line = (f"{len(outcome.pairs)} compared, {bad} different, {len(outcome.only_a)} only in the first, "
            f"{len(outcome.only_b)} only in the second")
    if outcome.paired_only and (outcome.only_a or outcome.only_b):
        line += " (not compared: --paired-only)"
    if not outcome.pairs:
        line += "; no tensor was paired"
    return line


def _distance(p: Pair) -> str:
    """``, max |a-b|=X, max rel=Y, max ulp=N, K NaN vs a number``: each that the pair has."""
    d = p.distance
    if d is None:
        return ""
    parts = [f"max |a-b|={_float(d.max_abs)}" if d.max_abs is not None else "",
             f"max rel={_float(d.max_rel)}" if d.max_rel is not None else "",
             f"max ulp={d.max_ulp}" if d.max_ulp is not None else "",
             f"{d.nan_vs_number} NaN vs a number" if d.nan_vs_number else ""]
    return "".join(", " + x for x in parts if x)


def _float(x: float) -> str:
    from .show import float_text

    return float_text(x, 6)


def document(outcome: Outcome, exit_code: int) -> dict:
    """The --json document (report.base's keys, then the pairs)."""
    from . import json as report

    def entry(p: Pair) -> dict:
        d = p.distance
        return {
            "a": {"path": p.a_label, "name": p.a.name, "shape": list(p.a.shape), "dtype": p.a.dtype.name},
            "b": {"path": p.b_label, "name": p.b.name, "shape": list(p.b.shape), "dtype": p.b.dtype.name},
            "same": p.same,
            "mode": p.mode,
            "problem": p.problem or None,
            "count": p.count,
            "differing": p.differing,
            "max_abs": d.max_abs if d else None,
            "max_rel": d.max_rel if d else None,
            "max_ulp": d.max_ulp if d else None,
            "nan_vs_number": d.nan_vs_number if d else None,
            "first": [
                {"index": list(d.index), "a": d.a, "b": d.b} | ({"a_bits": d.a_bits, "b_bits": d.b_bits} if d.a_bits else {})
                for d in p.first
            ],
        }

    status = "ok" if exit_code == 0 else "failed"
    return report.base("compare", status, exit_code) | {
        "same": outcome.same,
        "rule": {"mode": outcome.rule.mode, "rtol": outcome.rule.rtol, "atol": outcome.rule.atol, "ulp": outcome.rule.ulp},
        "pairs": [entry(p) for p in outcome.pairs],
        "paired_only": outcome.paired_only,
        "only_a": outcome.only_a,
        "only_b": outcome.only_b,
        "left_out": outcome.left_out,
    }

"""Every measured question's candidates (gpu/choose.py), each question
measured ``--repeats`` times in one process, as choose.py measures it (the
candidates checked byte for byte on the question's case, then timed in
rotated rounds, each candidate's best round kept): per candidate, the
median and min..max of its figures over the repeats. The spread of one
candidate's figures is the noise; a candidate whose median is not above
the first candidate's (the one-driver constant or the general kernel) by
more than that spread does not win (issue 32).

    python benchmarks/question_candidates.py --backend vulkan --repeats 5
    python benchmarks/question_candidates.py --backend gl --only transpose,select --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_whole_process import cpu, load  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from onnxop_cli.gpu import choose, get_gpu

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated question names (kernel: the copy kernel)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    gpu = get_gpu(a.backend)
    questions = [choose.COPY, *choose.QUESTIONS.values()]
    chosen = [q for q in questions if not a.only or q.name in a.only.split(",")]
    start = {"load": load(), "time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    rows = []
    for q in chosen:
        figures: dict[str, list[float]] = {}
        answers = []
        for _ in range(a.repeats):
            found = choose._measure(gpu, q)
            answers.append(found.kernel)
            for c, v in found.gbps.items():
                figures.setdefault(c, []).append(v)
        rows.append({"question": q.name, "unit": q.unit or "(decided)", "answers": answers, "figures": figures})
        print(f"{q.name}: " + ", ".join(f"{c} {statistics.median(v):.3g} ({min(v):.3g}..{max(v):.3g})"
                                         for c, v in figures.items()), file=sys.stderr, flush=True)
    out = {"adapter": gpu.name, "driver": gpu.info.driver, "backend": a.backend, "cpu": cpu(), "cpus": os.cpu_count(),
           "repeats": a.repeats, "start": start, "load_end": load(), "rows": rows}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"Command: `python benchmarks/question_candidates.py --backend {a.backend or 'auto'} --repeats {a.repeats}"
          f"{' --only ' + a.only if a.only else ''}`; adapter {gpu.name}, driver {gpu.info.driver}; CPU {cpu()}, "
          f"{os.cpu_count()} CPUs; {start['time']}; load (1 min) {start['load']} at start, {out['load_end']} at end\n")
    print("| question | candidate | median | min..max | answered |\n|---|---|---|---|---|")
    for r in rows:
        for c, v in r["figures"].items():
            print(f"| {r['question']} | {c} | {statistics.median(v):.3g} {r['unit']} | {min(v):.3g}..{max(v):.3g} "
                  f"| {r['answers'].count(c)}/{len(r['answers'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

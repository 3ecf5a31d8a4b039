"""Layouts of the flat copy kernel, side by side with copy_buffer_to_buffer.

The shipped kernels (gpu/render/copy.py's two widths) against the
variants they were chosen over, on one adapter, in the same rounds:

- ``shipped``: runs of RUN = 8 invocations walk forward through consecutive
  words (the kernels as rendered);
- ``strided``: the usual GPU layout, step k of every invocation a whole
  workgroup (WG words) past step k-1: the layout before 2026-11-30;
- ``prefetch`` (64-bit words only): ``shipped`` plus one load of ``dst``
  AHEAD words ahead per 4 words, masked to zero by a uniform the compiler
  cannot see through, so the CPU fetches the lines it is about to store to.
  An experiment, not shipped: it pays off only where the buffers do not fit
  in the cache and the driver is Mesa 25 (see the README).

Every variant's output is checked byte for byte after poisoning. Ratios are
medians of per-round ratios over the copy measured in the same round; the
CPU time other processes took per round is printed.

    python benchmarks/copy_variants.py --backend vulkan --sizes 4M,64M,1G --rounds 7
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import onnxop_cli.gpu.kernels as kernels  # noqa: E402
from onnxop_cli.cli.bench import CpuClock, parse_sizes  # noqa: E402
from onnxop_cli.cli.bench_report import human  # noqa: E402
from onnxop_cli.gpu.measure import Bench  # noqa: E402
from onnxop_cli.gpu.render.frame import FEATURES, Needs  # noqa: E402
from onnxop_cli.gpu.device import get_gpu  # noqa: E402
from onnxop_cli.gpu.render.copy import PARAMS  # noqa: E402
from onnxop_cli.gpu.render.schedule import Runs  # noqa: E402

AHEAD = 2048  # words (64 KiB of 32-byte words): measured best of 1024-4096 on Mesa 25

_BODY = re.compile(r"    let base = .*?\n    }\n", re.DOTALL)

STRIDED = """    let base = group * (WG * UNROLL) + lid;
    for (var k = 0u; k < UNROLL; k = k + 1u) {
        let i = base + k * WG;
        dst[i] = src[i];
    }
"""

PREFETCH = """    let zero = u64(params.pad_zero);
    let lane = lid % RUN;
    let run = group * (WG * UNROLL) + (lid / RUN) * (RUN * UNROLL);
    for (var k = 0u; k < UNROLL; k = k + 4u) {
        let i = run + k * RUN + lane;
        let ahead = dst[run + k * RUN + 4u * lane + AHEADu].x & zero;
        dst[i] = src[i] | vec4<u64>(ahead);
        dst[i + RUN] = src[i + RUN];
        dst[i + 2u * RUN] = src[i + 2u * RUN];
        dst[i + 3u * RUN] = src[i + 3u * RUN];
    }
""".replace("AHEAD", str(AHEAD))


class Text:
    """A variant's WGSL in place of a render: kernels.Kernel reads its label,
    schedule (from the text's constants), binding kinds, Params and text."""

    PARAMS = PARAMS
    kinds = ("read-only-storage", "storage", "uniform")

    def __init__(self, label: str, text: str) -> None:
        c = {m[1]: int(m[2]) for m in re.finditer(r"const (\w+): u32 = (\d+)u;", text)}
        self.label, self.text = label, text
        self.schedule = Runs(label, c["WORD_BYTES"], unroll=c["UNROLL"], run=c["RUN"], wg=c["WG"])

    def wgsl(self) -> str:
        return self.text

    @property
    def needs(self) -> Needs:
        """The features the text's types need (render/frame.py's FEATURES), its workgroup size as limits."""
        wg = self.schedule.wg
        return Needs(tuple(f for f, word in FEATURES.items() if word.search(self.text)),
                     {"max-compute-invocations-per-workgroup": wg, "max-compute-workgroup-size-x": wg})


def shipped(kernel: kernels.Kernel) -> str:
    """The kernel's rendered WGSL, its word's bytes named for the variants' host (``Text``)."""
    return kernel.wgsl + f"\nconst WORD_BYTES: u32 = {kernel.word}u;\n"


def variants(gpu) -> dict[str, str]:
    """name -> WGSL text, for the kernels this adapter can run."""
    out = {}
    for kernel in kernels.available(gpu):
        text = shipped(kernel)
        out[f"{kernel.name} shipped"] = text
        out[f"{kernel.name} strided"] = _BODY.sub(lambda _: STRIDED, text, count=1)
        if kernel.word == 32:
            # the host packs (groups, groups_x) by name (gpu/layout.py): a pad field is a zero
            with_zero = text.replace("groups_x: u32,", "groups_x: u32,\n    pad_zero: u32,", 1)
            out[f"{kernel.name} prefetch"] = _BODY.sub(lambda _: PREFETCH, with_zero, count=1)
    return out


def main(argv: list[str] | None = None) -> int:
    return run(variants, __doc__, "4M,64M,256M,1G", argv)


def run(make_variants, doc: str, sizes: str, argv: list[str] | None = None) -> int:
    """Time the WGSL texts ``make_variants(gpu)`` gives, each a copy kernel
    of its own (this script's and portable_copy.py's main)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--engine", default="wgpu")
    p.add_argument("--sizes", default=sizes)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)

    gpu = get_gpu(args.backend, args.engine)
    texts = make_variants(gpu)
    _measure(gpu, texts, args)
    return 0


def _measure(gpu, texts: dict[str, str], args) -> None:
    names = list(texts)
    ks = [kernels.Kernel(n, Text(n, texts[n])) for n in names]  # type: ignore[arg-type]
    clock = CpuClock()
    print(f"{gpu.name}, {args.engine}; driver {gpu.info.driver or '?'}; {clock.cpus} CPUs")
    for size in parse_sizes(args.sizes):
        bench = Bench(gpu, size, streaming=False, kernels=ks)
        try:
            for k in ks:
                bench.poison()
                bench.kernel(k.name)
                bench.verify(k.name)
            ratios = {n: [] for n in names}
            gbps = {n: [] for n in names}
            copies, others = [], []
            for r in range(args.rounds):
                busy0, own0 = clock.read()
                order = names[r % len(names):] + names[: r % len(names)]
                copy = bench.copy()
                for n in order:
                    t = bench.kernel(n)
                    gbps[n].append(size / t / 1e9)
                    ratios[n].append(copy / t)
                copies.append(size / copy / 1e9)
                busy1, own1 = clock.read()
                others.append(max(0.0, (busy1 - busy0) - (own1 - own0)))
        finally:
            bench.close()
        print(f"\n{human(size)}: copy_buffer_to_buffer {statistics.median(copies):.2f} GB/s; "
              f"CPU s others took per round: {', '.join(f'{o:.2f}' for o in others)}")
        for n in names:
            print(f"  {n:22s} {statistics.median(gbps[n]):6.2f} GB/s   "
                  f"{statistics.median(ratios[n]):.2f}x of copy ({min(ratios[n]):.2f}-{max(ratios[n]):.2f})")


if __name__ == "__main__":
    sys.exit(main())

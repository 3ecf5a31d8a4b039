"""Portable flat-copy kernels (no shader-int64) against the shipped ones
and copy_buffer_to_buffer, on one adapter and engine (issue 23, item 3):
what llvmpipe compiles well without 64-bit integers.

Variants of the rendered flat copy (gpu/render/copy.py; the same run layout: runs of RUN = 8
invocations walk forward through consecutive words):

- ``storage`` (shipped): one vec4<u32> (16 bytes) per step, UNROLL 4;
- ``storage unroll8`` / ``unroll16``: more words per invocation;
- ``pair``: a word of two vec4<u32> (32 bytes, a struct), as wide as
  storage64's vec4<u64>, UNROLL 8;
- ``quad``: a word of four vec4<u32> (64 bytes), UNROLL 4;
- ``u32``: one u32 per step (the run's 8 invocations read 32 consecutive
  bytes: does llvmpipe merge them into one vector access?), UNROLL 16;
- ``vec2``: one vec2<u32> (8 bytes, as wide as a u64) per step, UNROLL 8.

Every variant's output is checked byte for byte after poisoning (as
benchmarks/copy_variants.py measures: medians of per-round ratios to the
copy, the CPU time other processes took per round).

    python benchmarks/portable_copy.py --backend vulkan --sizes 4M,64M --rounds 7
    python benchmarks/portable_copy.py --backend vulkan --engine dawn --sizes 4M,64M
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import copy_variants as cv  # noqa: E402  (its measuring loop, shared rather than copied)

from onnxop_cli.gpu.kernels import KERNELS  # noqa: E402


def wide(text: str, vectors: int, unroll: int) -> str:
    """The copy with a word of ``vectors`` vec4<u32> (a struct) and UNROLL ``unroll``."""
    fields = "".join(f"    v{i}: vec4<u32>,\n" for i in range(vectors))
    text = text.replace("const UNROLL: u32 = 4u;", f"const UNROLL: u32 = {unroll}u;")
    text = text.replace("const WORD_BYTES: u32 = 16u;", f"const WORD_BYTES: u32 = {16 * vectors}u;")
    text = text.replace("struct Params {", f"struct Word {{\n{fields}}}\n\nstruct Params {{", 1)
    return text.replace("array<vec4<u32>>", "array<Word>")


def narrow(text: str, word: str, nbytes: int, unroll: int) -> str:
    """The copy with a word of type ``word`` (``nbytes`` bytes) and UNROLL ``unroll``."""
    text = text.replace("const UNROLL: u32 = 4u;", f"const UNROLL: u32 = {unroll}u;")
    text = text.replace("const WORD_BYTES: u32 = 16u;", f"const WORD_BYTES: u32 = {nbytes}u;")
    return text.replace("array<vec4<u32>>", f"array<{word}>")


def variants(gpu) -> dict[str, str]:
    copy = cv.shipped(KERNELS["storage"])
    out = {
        "storage shipped": copy,
        "storage unroll8": copy.replace("const UNROLL: u32 = 4u;", "const UNROLL: u32 = 8u;"),
        "storage unroll16": copy.replace("const UNROLL: u32 = 4u;", "const UNROLL: u32 = 16u;"),
        "pair": wide(copy, 2, 8),
        "quad": wide(copy, 4, 4),
        "u32": narrow(copy, "u32", 4, 16),
        "vec2": narrow(copy, "vec2<u32>", 8, 8),
    }
    if "shader-int64" in gpu.features:
        out["storage64 shipped"] = cv.shipped(KERNELS["storage64"])
    return out


def main(argv: list[str] | None = None) -> int:
    return cv.run(variants, __doc__, "4M,64M", argv)


if __name__ == "__main__":
    sys.exit(main())

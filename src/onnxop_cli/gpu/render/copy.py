"""The flat copy on the run schedule (``Runs``): dst[i] = src[i], in 16-byte
``vec4<u32>`` words (``storage``, every adapter) or 32-byte ``vec4<u64>``
words (``storage64``, with ``shader-int64``); gpu/kernels.py binds them.
Flatten and Unsqueeze never move an element, so one byte-level copy serves
every fixed-width ONNX type (bool, int4 nibbles and complex128 alike).

The host pads both buffers to whole workgroup spans (WG * UNROLL words) and
dispatches whole spans, so no word needs a bounds check: bytes past the
tensor are copied into padding that is never read back. The grid may be 2-D
when a chunk needs more than 65535 workgroups in x; the spare groups of the
last row (one uniform test per workgroup) do nothing.

Which invocation copies which word: each run of RUN neighbouring invocations
copies RUN * UNROLL consecutive words, RUN at a time. At every step the run
touches one contiguous block (RUN words), as a GPU wants for coalescing, and
the run's steps walk forward through memory, as a CPU's prefetcher wants:
Mesa's llvmpipe runs 8 invocations in one SIMD register (256-bit vectors),
16 on 512-bit ones. Striding the steps a whole workgroup apart instead (the
usual GPU layout) measured 1.0-1.7x slower on lavapipe and on llvmpipe's GL,
never faster (2026-11-30, `python benchmarks/copy_variants.py`). The 64-bit words move twice the bytes
per load and store (Mesa's CPU drivers store each 64-bit lane of a word
separately); which width is fastest is measured per adapter (gpu/kernels.py's
candidates, gpu/choose.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .frame import Binding, Frame
from .schedule import Runs

PARAMS = Struct("Params", (
    ("groups", "u32"),    # workgroups that copy (spans in this binding)
    ("groups_x", "u32"),  # workgroups per row of the dispatch grid
))


@dataclass(frozen=True)
class Copy(Frame):
    """The flat copy over ``schedule``."""

    schedule: Runs
    PARAMS = PARAMS
    LABEL = "copy runs {s.word}[wg={s.wg},run={s.run},unroll={s.unroll}]"

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        word = self.schedule.word
        return (Binding(0, "src", "read", word), Binding(1, "dst", "read_write", word), Binding(2))

    def main(self) -> str:
        return """    let group = wg.y * params.groups_x + wg.x;
    if (group >= params.groups) {
        return;
    }
    let base = group * (WG * UNROLL) + (lid / RUN) * (RUN * UNROLL) + lid % RUN;
    for (var k = 0u; k < UNROLL; k = k + 1u) {
        let i = base + k * RUN;
        dst[i] = src[i];
    }
"""

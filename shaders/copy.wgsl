// Flat copy: dst[i] = src[i], in 16-byte words (vec4<u32>).
//
// Flatten and Unsqueeze never move an element: the output's row-major bytes
// are the input's. So one byte-level copy serves every fixed-width ONNX type
// (bool, int4 nibbles and complex128 alike).
//
// The host pads both buffers to whole workgroup spans (WG * UNROLL words)
// and dispatches whole spans, so no word needs a bounds check: bytes past the
// tensor are copied into padding that is never read back. The grid may be
// 2-D when a chunk needs more than 65535 workgroups in x; the spare groups
// of the last row (one uniform test per workgroup) do nothing.
//
// Which invocation copies which word: each run of RUN neighbouring
// invocations copies RUN * UNROLL consecutive words, RUN at a time. At every
// step the run touches one contiguous block (RUN words), as a GPU wants for
// coalescing, and the run's steps walk forward through memory, as a CPU's
// prefetcher wants: Mesa's llvmpipe runs RUN = 8 invocations in one SIMD
// register. Striding the steps a whole workgroup apart instead (the usual
// GPU layout) measured 1.0-1.7x slower on lavapipe and on llvmpipe's GL,
// never faster (2026-11-30, `python benchmarks/copy_variants.py`).
//
// By hand: the generator (gpu/elementwise_wgsl.py) makes one element per
// invocation behind a bounds test; this moves 16-byte words in runs laid out
// for llvmpipe's SIMD, with no test at all.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const UNROLL: u32 = 4u;
const RUN: u32 = 8u;
const WORD_BYTES: u32 = 16u;

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

#include "lib/copy_main.wgsl"

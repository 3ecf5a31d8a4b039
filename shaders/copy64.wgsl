// Flat copy: dst[i] = src[i], in 32-byte words (vec4<u64>).
//
// The same job as copy.wgsl with twice the bytes per load and store, and the
// same layout (see there: runs of RUN invocations walk forward through
// consecutive words). Mesa's CPU drivers store each 64-bit lane of a word
// separately, so a wider word moves more bytes per store (measured:
// `onnxop bench`; the choice between kernels is measured per adapter, see
// gpu/calibrate.py).
//
// The host pads both buffers to whole workgroup spans (WG * UNROLL words)
// and dispatches whole spans, so no word needs a bounds check; the spare
// groups of a 2-D grid's last row do nothing.
//
// By hand: as copy.wgsl: the generator (gpu/elementwise_wgsl.py) has no
// 32-byte words and no unchecked padded spans.
//
// needs: shader-int64

const WG: u32 = 256u;
const UNROLL: u32 = 8u;
const RUN: u32 = 8u;
const WORD_BYTES: u32 = 32u;

@group(0) @binding(0) var<storage, read> src: array<vec4<u64>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u64>>;
@group(0) @binding(2) var<uniform> params: Params;

#include "lib/copy_main.wgsl"

// Part (shaders/lib, see gpu/shaders.py): a 32-bit word's bytes reversed,
// for big-endian sources and indices. The including shader declares nothing.
//
// By hand: one line every byte-swapping kernel had copied.

fn bswap32(x: u32) -> u32 {
    return (x << 24u) | ((x & 0xff00u) << 8u) | ((x >> 8u) & 0xff00u) | (x >> 24u);
}

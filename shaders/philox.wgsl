// philox.wgsl: Philox4x32-10 (Salmon et al. 2011) and the project's uniform stream, in WGSL.
//
// A snippet, not a module: src/gpu/shader.rs appends it to every kernel that draws random
// numbers. It reproduces src/rng.rs bit for bit:
//
//   philox4x32_10(counter, key)   == rng::philox4x32_10(counter, key)
//   rng_uniform(key, step_lo, step_hi, purpose, index_lo, index_hi)
//                                 == RngStream { key, step, purpose }.uniform(index)
//
// with step = step_hi·2³² + step_lo and index = index_hi·2³² + index_lo (64-bit values as u32
// pairs: WGSL has no 64-bit integers). The uniform for `index` is lane `index & 3` of the block
//
//   counter = [index >> 2 (low 32 bits), step_lo, step_hi, purpose | (index >> 34) << 8]
//
// turned into (x >> 8) · 2⁻²⁴: 24 bits, exactly representable in f32, in [0, 1).
// Kernels that need all four lanes of a block call `philox_block` + `lane_to_uniform` once
// instead of four `rng_uniform` calls. (Not named `uniform`: a declaration of that name would
// shadow the `uniform` address space, and `var<uniform>` would stop compiling.)
// Only integer operations: the result cannot differ by GPU.

const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
const PHILOX_W0: u32 = 0x9E3779B9u;
const PHILOX_W1: u32 = 0xBB67AE85u;

// The high 32 bits of the 64-bit product a·b, from 16-bit halves (each partial product fits in
// 32 bits; the middle column sums three 16-bit values, so it cannot overflow either).
fn mulhi32(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xFFFFu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xFFFFu;
    let b_hi = b >> 16u;
    let lo_lo = a_lo * b_lo;
    let lo_hi = a_lo * b_hi;
    let hi_lo = a_hi * b_lo;
    let hi_hi = a_hi * b_hi;
    let middle = (lo_lo >> 16u) + (lo_hi & 0xFFFFu) + (hi_lo & 0xFFFFu);
    return hi_hi + (lo_hi >> 16u) + (hi_lo >> 16u) + (middle >> 16u);
}

// The Philox4x32 block function with 10 rounds (Random123's philox4x32_10).
fn philox4x32_10(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = key;
    for (var round = 0u; round < 10u; round = round + 1u) {
        if (round > 0u) {
            k = k + vec2<u32>(PHILOX_W0, PHILOX_W1);
        }
        let hi0 = mulhi32(PHILOX_M0, c.x);
        let lo0 = PHILOX_M0 * c.x;
        let hi1 = mulhi32(PHILOX_M1, c.z);
        let lo1 = PHILOX_M1 * c.z;
        c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// The block holding uniforms 4·group .. 4·group + 3 of a stream; group = index >> 2 as a
// 64-bit value (group_lo, group_hi).
fn philox_block(key: vec2<u32>, step_lo: u32, step_hi: u32, purpose: u32, group_lo: u32, group_hi: u32) -> vec4<u32> {
    return philox4x32_10(vec4<u32>(group_lo, step_lo, step_hi, purpose | (group_hi << 8u)), key);
}

// A 32-bit Philox output as a uniform in [0, 1): the top 24 bits times 2⁻²⁴ (exact).
fn lane_to_uniform(x: u32) -> f32 {
    return f32(x >> 8u) * (1.0 / 16777216.0);
}

// RngStream::uniform(index) for the stream (key, step, purpose).
fn rng_uniform(key: vec2<u32>, step_lo: u32, step_hi: u32, purpose: u32, index: u32, index_hi: u32) -> f32 {
    let group_lo = (index >> 2u) | (index_hi << 30u);
    let group_hi = index_hi >> 2u;
    let block = philox_block(key, step_lo, step_hi, purpose, group_lo, group_hi);
    return lane_to_uniform(block[index & 3u]);
}

// 64-bit addition on (lo, hi) pairs, wrapping.
fn add_u64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

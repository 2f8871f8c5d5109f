// gemm_operands_vec4.wgsl: gemm.wgsl's input bindings as arrays of vec4, for products whose
// operands are f32 (not u8, not gathered) with every stored row, row stride and offset a
// multiple of 4 elements along the axis that is contiguous in memory (so every bound window is
// a whole number of vec4). Prepended to gemm.wgsl when VEC is true: the slab loads then read a
// whole vec4 per instruction instead of four scalars. Same accessors as
// gemm_operands_scalar.wgsl; i is an element index, a multiple of 4 for the *_vec ones.

@group(0) @binding(2) var<storage, read> a_data: array<vec4<u32>>; // f32 bits
@group(0) @binding(3) var<storage, read> b_data: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bias: array<vec4<f32>>;   // or B2 (PAIRED)
@group(0) @binding(7) var<storage, read> order: array<vec4<u32>>;  // A2's f32 bits (PAIRED)

fn a_word(i: u32) -> u32 {
    return a_data[i >> 2u][i & 3u];
}

fn b_elem(i: u32) -> f32 {
    return b_data[i >> 2u][i & 3u];
}

fn bias_elem(i: u32) -> f32 {
    return bias[i >> 2u][i & 3u];
}

fn order_word(i: u32) -> u32 {
    return order[i >> 2u][i & 3u];
}

fn a_vec(i: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(a_data[i >> 2u]);
}

fn b_vec(i: u32) -> vec4<f32> {
    return b_data[i >> 2u];
}

fn a2_vec(i: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(order[i >> 2u]);
}

fn b2_vec(i: u32) -> vec4<f32> {
    return bias[i >> 2u];
}

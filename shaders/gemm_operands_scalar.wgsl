// gemm_operands_scalar.wgsl: gemm.wgsl's input bindings as arrays of scalars, for any layout.
// Prepended to gemm.wgsl when VEC is false (src/gpu/gemm/kernels.rs); gemm_operands_vec4.wgsl
// is the other choice. Both define the same accessors, so gemm.wgsl reads its inputs only
// through them. The *_vec accessors (four consecutive elements from i) exist only so that
// gemm.wgsl compiles; this variant never calls them.

@group(0) @binding(2) var<storage, read> a_data: array<u32>; // f32 bits, or 4 packed bytes
@group(0) @binding(3) var<storage, read> b_data: array<f32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;   // or B2 (PAIRED)
@group(0) @binding(7) var<storage, read> order: array<u32>;  // or A2's f32 bits (PAIRED)

fn a_word(i: u32) -> u32 {
    return a_data[i];
}

fn b_elem(i: u32) -> f32 {
    return b_data[i];
}

fn bias_elem(i: u32) -> f32 {
    return bias[i];
}

fn order_word(i: u32) -> u32 {
    return order[i];
}

fn a_vec(i: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(a_data[i]), bitcast<f32>(a_data[i + 1u]), bitcast<f32>(a_data[i + 2u]), bitcast<f32>(a_data[i + 3u]));
}

fn b_vec(i: u32) -> vec4<f32> {
    return vec4<f32>(b_data[i], b_data[i + 1u], b_data[i + 2u], b_data[i + 3u]);
}

fn a2_vec(i: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(order[i]), bitcast<f32>(order[i + 1u]), bitcast<f32>(order[i + 2u]), bitcast<f32>(order[i + 3u]));
}

fn b2_vec(i: u32) -> vec4<f32> {
    return vec4<f32>(bias[i], bias[i + 1u], bias[i + 2u], bias[i + 3u]);
}

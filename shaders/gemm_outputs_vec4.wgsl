// gemm_outputs_vec4.wgsl: gemm.wgsl's output bindings (C, samples, partials, and
// gemm_update.wgsl's weights and previous gradient) as arrays of vec4, for variants whose
// outputs are aligned: every quad e .. e + 3 that gemm.wgsl reads or writes is then one whole
// vec4 with all four lanes inside (n, and C's and the samples' offsets and row strides, are
// multiples of 4: src/gpu/gemm/variant.rs::vec4_outputs). Same accessors as
// gemm_outputs_scalar.wgsl, whose header says what a quad is; `lanes` is always 4 here.
// Why: on an H100 the fused update's scalar stores cost as much as all its DRAM traffic. The
// 4096 × 11008 fused gradient took 1.44 ms with them, 1.17 with these; 1.11 with no epilogue
// traffic at all, and still 1.45 with the traffic confined to 4 MB of L2.

@group(0) @binding(4) var<storage, read_write> c_data: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> samples: array<vec4<f32>>;  // or the velocity
@group(0) @binding(8) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> weights: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read> previous: array<vec4<f32>>;

fn load_c(e: u32, lanes: u32) -> vec4<f32> {
    return c_data[e >> 2u];
}

fn load_partial(e: u32, lanes: u32) -> vec4<f32> {
    return partials[e >> 2u];
}

fn load_weights(e: u32, lanes: u32) -> vec4<f32> {
    return weights[e >> 2u];
}

fn load_velocity(e: u32, lanes: u32) -> vec4<f32> {
    return samples[e >> 2u];
}

fn load_previous(e: u32, lanes: u32) -> vec4<f32> {
    return previous[e >> 2u];
}

fn store_c(e: u32, lanes: u32, v: vec4<f32>) {
    c_data[e >> 2u] = v;
}

fn store_samples(e: u32, lanes: u32, v: vec4<f32>) {
    samples[e >> 2u] = v;
}

fn store_partial(e: u32, lanes: u32, v: vec4<f32>) {
    partials[e >> 2u] = v;
}

fn store_update(e: u32, lanes: u32, g: vec4<f32>, v: vec4<f32>, w: vec4<f32>) {
    c_data[e >> 2u] = g;
    samples[e >> 2u] = v;
    weights[e >> 2u] = w;
}

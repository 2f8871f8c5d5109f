// gemm_outputs_scalar.wgsl: gemm.wgsl's output bindings (C, samples, partials, and
// gemm_update.wgsl's weights and previous gradient) as arrays of scalars, for any layout.
// Prepended to gemm.wgsl unless the variant's outputs are aligned (gemm_outputs_vec4.wgsl,
// which defines the same accessors; see src/gpu/gemm/variant.rs::vec4_outputs). Outputs are
// read and written a quad at a time: the four elements e .. e + 3 of one row, of which `lanes`
// (1 to 4) lie inside the matrix. Loads repeat the last one inside for the others (never
// reading past the row; callers drop those lanes), stores skip them.

@group(0) @binding(4) var<storage, read_write> c_data: array<f32>;
@group(0) @binding(6) var<storage, read_write> samples: array<f32>;   // or the velocity (UPDATE)
@group(0) @binding(8) var<storage, read_write> partials: array<f32>;  // split k, or UPDATE's stats
@group(0) @binding(10) var<storage, read_write> weights: array<f32>;  // UPDATE only
@group(0) @binding(11) var<storage, read> previous: array<f32>;       // UPDATE only

fn lane_at(e: u32, lane: u32, lanes: u32) -> u32 {
    return e + min(lane, lanes - 1u);
}

fn load_c(e: u32, lanes: u32) -> vec4<f32> {
    return vec4<f32>(c_data[e], c_data[lane_at(e, 1u, lanes)], c_data[lane_at(e, 2u, lanes)], c_data[lane_at(e, 3u, lanes)]);
}

fn load_partial(e: u32, lanes: u32) -> vec4<f32> {
    return vec4<f32>(partials[e], partials[lane_at(e, 1u, lanes)], partials[lane_at(e, 2u, lanes)], partials[lane_at(e, 3u, lanes)]);
}

fn load_weights(e: u32, lanes: u32) -> vec4<f32> {
    return vec4<f32>(weights[e], weights[lane_at(e, 1u, lanes)], weights[lane_at(e, 2u, lanes)], weights[lane_at(e, 3u, lanes)]);
}

fn load_velocity(e: u32, lanes: u32) -> vec4<f32> {
    return vec4<f32>(samples[e], samples[lane_at(e, 1u, lanes)], samples[lane_at(e, 2u, lanes)], samples[lane_at(e, 3u, lanes)]);
}

fn load_previous(e: u32, lanes: u32) -> vec4<f32> {
    return vec4<f32>(previous[e], previous[lane_at(e, 1u, lanes)], previous[lane_at(e, 2u, lanes)], previous[lane_at(e, 3u, lanes)]);
}

fn store_c(e: u32, lanes: u32, v: vec4<f32>) {
    c_data[e] = v.x;
    if (lanes > 1u) {
        c_data[e + 1u] = v.y;
    }
    if (lanes > 2u) {
        c_data[e + 2u] = v.z;
    }
    if (lanes > 3u) {
        c_data[e + 3u] = v.w;
    }
}

fn store_samples(e: u32, lanes: u32, v: vec4<f32>) {
    samples[e] = v.x;
    if (lanes > 1u) {
        samples[e + 1u] = v.y;
    }
    if (lanes > 2u) {
        samples[e + 2u] = v.z;
    }
    if (lanes > 3u) {
        samples[e + 3u] = v.w;
    }
}

fn store_partial(e: u32, lanes: u32, v: vec4<f32>) {
    partials[e] = v.x;
    if (lanes > 1u) {
        partials[e + 1u] = v.y;
    }
    if (lanes > 2u) {
        partials[e + 2u] = v.z;
    }
    if (lanes > 3u) {
        partials[e + 3u] = v.w;
    }
}

// The update's three stores of one quad: gradient G' (C), velocity and weights. Written out,
// not as a loop indexing the vec4s by lane: the fused variant with that loop reported 23,552
// bytes of workgroup memory on an H100 against 8,192 without it (tools/vkstats), presumably
// per-invocation arrays of 60 bytes.
fn store_update(e: u32, lanes: u32, g: vec4<f32>, v: vec4<f32>, w: vec4<f32>) {
    store_c(e, lanes, g);
    store_samples(e, lanes, v);
    weights[e] = w.x;
    if (lanes > 1u) {
        weights[e + 1u] = w.y;
    }
    if (lanes > 2u) {
        weights[e + 2u] = w.z;
    }
    if (lanes > 3u) {
        weights[e + 3u] = w.w;
    }
}

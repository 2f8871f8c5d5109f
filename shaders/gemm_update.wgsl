// gemm_update.wgsl: the weight update of a CD batch as the epilogue of its gradient product.
// Appended to gemm.wgsl (compiled with UPDATE = true, after schedule_state.wgsl) by
// src/gpu/gemm/kernels.rs; the other variants get an empty `finish_update` instead.
//
// For each element e = i·n + j of the product C = G (the gradient, row-major nv × nh with
// ldc = n, c_offset = 0; weights, velocity and previous share that layout), while its sum g is
// still in registers, it does what update.wgsl does in a pass of its own:
//
//   g' = g − (wp·w + mean_input[i]·d[j]);  v = m·v + lr·g';  w += v;  G ← g'
//
// with lr, m, wp from `state` (TrainState). The workgroup also writes one partial per task
// (a tile, or half of one: see gemm.wgsl's `main`),
//   partials[4·task .. 4·task + 4] = (Σ g'·p, Σ g'², Σ p², max |v|)
// (p = previous[e], not read while state.has_previous == 0), which the schedule kernel finishes
// exactly as update.wgsl's: each invocation sums its own elements in block order (rows, then
// columns), then the workgroup combines the invocations by a fixed binary tree in a_tile's
// memory (free once the k loop's last barrier has passed): common.wgsl's workgroup_sum_max,
// inline so that the GEMM needs no workgroup memory beyond its tiles. The order depends only
// on the shape.
//
// Fusing saves the update's own pass, which read G back after the product wrote it: on an H100,
// 4096 × 11008 batches of 192 took 1.53 ms for the fused product against 1.26 + 0.47 for the
// two. The epilogue's 1 GB of weights, velocity and previous gradient remain. What they cost
// depended more on the number of memory instructions than on the bytes: whole-vec4 accesses
// took that product from 1.44 to 1.17 ms (gemm_outputs_vec4.wgsl). gemm.wgsl's staggered
// start (half tasks) keeps the two workgroups of an SM out of phase, so that this traffic
// partly overlaps the other's arithmetic.
// CPU reference: src/train/weights_update.rs::update_weights.
//
// Bindings beyond gemm.wgsl's: 6 (`samples`) holds the velocity, 8 (`partials`) the per-task
// partials; 9 state (uniform), 10 weights (rw), 11 previous, 12 mean_input (nv),
// 13 sparsity_derivative (nh). With gemm.wgsl's this is 11 storage buffers, over WebGPU's
// default of 8: the host uses this variant only where the device offers them. The weights,
// velocity, previous gradient and G' are read and written a quad (4 columns of one row) at a
// time through the output file's accessors (load_weights, store_update, ...): one vec4 per
// access where the variant has vec4 operands (gemm_outputs_vec4.wgsl).

@group(0) @binding(9) var<uniform> state: TrainState;
@group(0) @binding(12) var<storage, read> mean_input: array<f32>;
@group(0) @binding(13) var<storage, read> sparsity_in: array<f32>;

// One row's 4 elements: new velocity and weights, stored with G' for the lanes inside; returns
// the updated stats.
fn update_row(sums: vec4<f32>, r: u32, c0: u32, lanes: u32, w: vec4<f32>, vel: vec4<f32>, prev: vec4<f32>, d: vec4<f32>, stats: vec4<f32>) -> vec4<f32> {
    if (r >= params.m) {
        return stats;
    }
    let g = sums - (state.weight_penalty * w + mean_input[r] * d);
    let v = state.momentum * vel + state.learning_rate * g;
    let w_new = w + v;
    store_update(r * params.ldc + c0, lanes, g, v, w_new);
    let inside = vec4<bool>(true, lanes > 1u, lanes > 2u, lanes > 3u);
    let zero = vec4<f32>(0.0);
    let gm = select(zero, g, inside);
    let pm = select(zero, prev, inside);
    return vec4<f32>(stats.x + dot(gm, pm), stats.y + dot(gm, gm), stats.z + dot(pm, pm), max(stats.w, max(max(abs(v.x), select(0.0, abs(v.y), lanes > 1u)), max(select(0.0, abs(v.z), lanes > 2u), select(0.0, abs(v.w), lanes > 3u)))));
}

// A 4 × 4 block: every load is issued before any arithmetic (weights, velocity and previous of
// all four rows), so their latencies overlap; an element at a time, the epilogue waited for
// 64 round trips to memory per invocation and cost as much as update.wgsl's own pass.
fn update_block(acc: Block, r0: u32, c0: u32, stats: vec4<f32>) -> vec4<f32> {
    if (c0 >= params.n || r0 >= params.m) {
        return stats;
    }
    let lanes = min(4u, params.n - c0);
    let last = params.m - 1u;
    // Rows past the matrix read its last row (their results are dropped).
    let e0 = min(r0, last) * params.ldc + c0;
    let e1 = min(r0 + 1u, last) * params.ldc + c0;
    let e2 = min(r0 + 2u, last) * params.ldc + c0;
    let e3 = min(r0 + 3u, last) * params.ldc + c0;
    let w0 = load_weights(e0, lanes);
    let w1 = load_weights(e1, lanes);
    let w2 = load_weights(e2, lanes);
    let w3 = load_weights(e3, lanes);
    let v0 = load_velocity(e0, lanes);
    let v1 = load_velocity(e1, lanes);
    let v2 = load_velocity(e2, lanes);
    let v3 = load_velocity(e3, lanes);
    var p0 = vec4<f32>(0.0);
    var p1 = vec4<f32>(0.0);
    var p2 = vec4<f32>(0.0);
    var p3 = vec4<f32>(0.0);
    if (state.has_previous != 0u) {
        p0 = load_previous(e0, lanes);
        p1 = load_previous(e1, lanes);
        p2 = load_previous(e2, lanes);
        p3 = load_previous(e3, lanes);
    }
    let d = vec4<f32>(sparsity_in[c0], sparsity_in[c0 + min(1u, lanes - 1u)], sparsity_in[c0 + min(2u, lanes - 1u)], sparsity_in[c0 + min(3u, lanes - 1u)]);
    var scale = 1.0;
    if (!PAIRED) {
        scale = params.alpha; // PAIRED scaled its loads instead
    }
    var s = update_row(scale * acc.r0, r0, c0, lanes, w0, v0, p0, d, stats);
    s = update_row(scale * acc.r1, r0 + 1u, c0, lanes, w1, v1, p1, d, s);
    s = update_row(scale * acc.r2, r0 + 2u, c0, lanes, w2, v2, p2, d, s);
    return update_row(scale * acc.r3, r0 + 3u, c0, lanes, w3, v3, p3, d, s);
}

// Called by every invocation of the workgroup (it has barriers), after the k loop.
// `task`: the workgroup's task (its partial's index); `whole`: false for a half task, whose
// rows of c10 and c11 belong to the other half.
fn finish_update(c00: Block, c01: Block, c10: Block, c11: Block, r0: u32, c0: u32, tid: u32, task: u32, whole: bool) {
    var s = update_block(c00, r0, c0, vec4<f32>(0.0));
    if (TN == 8u) {
        s = update_block(c01, r0, c0 + 4u * WG_X, s);
    }
    if (TM == 8u && whole) {
        s = update_block(c10, r0 + 4u * WG_Y, c0, s);
        if (TN == 8u) {
            s = update_block(c11, r0 + 4u * WG_Y, c0 + 4u * WG_X, s);
        }
    }
    a_tile[tid] = s;
    workgroupBarrier();
    for (var half = NT / 2u; half > 0u; half = half >> 1u) {
        if (tid < half) {
            let a = a_tile[tid];
            let b = a_tile[tid + half];
            a_tile[tid] = vec4<f32>(a.xyz + b.xyz, max(a.w, b.w));
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        let total = a_tile[0];
        store_partial(4u * task, 4u, total);
    }
}

// autoencoder_cost.wgsl: the sparse autoencoder's cost J and gradient around the products of
// gemm.wgsl, over one full batch of m cases resident on the device (UFLDL's
// sparseAutoencoderCost; Klaus & Welles eqs. 5–12). CPU reference: src/autoencoder/cost.rs.
// src/gpu/autoencoder.rs records, in one compute pass:
//
//   decay                     grad W ← λW (both blocks), per workgroup (Σw², non-finite count)
//   GEMM  a₂ = σ(X·W₁ + b₁)                       (bias and sigmoid fused in its epilogue)
//   mean_activation_partials  column partial sums of a₂ per row group
//   finish_mean_activation    ρ̂ⱼ = Σ/m, KLⱼ = ρ ln(ρ/ρ̂ⱼ) + (1−ρ) ln((1−ρ)/(1−ρ̂ⱼ)),
//                             sⱼ = β(−ρ/ρ̂ⱼ + (1−ρ)/(1−ρ̂ⱼ))
//   GEMM  x̂ = σ(a₂·W₂ᵀ + b₂)
//   output_delta              e = x̂ − x; Σe² per workgroup; δ₃ = e·x̂·(1 − x̂) in place of x̂;
//                             column partial sums of δ₃
//   finish_cost               the three sums of J and the error counts → stats[0 .. 8]
//   (with the gradient:)
//   finish_output_bias        grad b₂ = Σᵣ δ₃ / m
//   GEMM  δ₂ ← δ₃·W₂ + s                           (the sparsity term as the GEMM's bias)
//   hidden_delta_step         δ₂ ← δ₂ ⊙ a₂(1 − a₂) in place; column partial sums of δ₂
//   finish_hidden_bias        grad b₁ = Σᵣ δ₂ / m
//   GEMM  grad W₂ += (1/m)·δ₃ᵀ·a₂                 (accumulating onto λW₂)
//   GEMM  grad W₁ += (1/m)·Xᵀ·δ₂                  (accumulating onto λW₁)
//
// Buffers (all f32, row-major; one bind group for every entry point here):
//   0 params        uniform Params (below)
//   1 theta         read: the parameters, W₁ (v × h) at 0, W₂ (v × h) at w2_offset, b₁ (h) at
//                   b1_offset, b₂ (v) at b2_offset; each block starts on a multiple of 64
//                   elements, the gaps are zero; n_params values in all
//   2 data          read: X, m × v
//   3 hidden        read: a₂, m × h
//   4 output        rw: x̂, m × v, overwritten by δ₃
//   5 hidden_delta  rw: δ₃·W₂ + s, m × h, overwritten by δ₂
//   6 gradient      rw: laid out like theta
//   7 stats         rw: stats[0 .. 8] = (Σ(x̂ − x)², Σw², Σⱼ KLⱼ, non-finite parameters,
//                   saturated units (ρ̂ ∉ (0, 1)), non-finite sⱼ, 0, 0); then ρ̂, s and KL (h
//                   each) at rho_offset, delta_offset and kl_offset; the partials at
//                   columns_offset (row_groups × width), recon_offset (one per output_delta
//                   workgroup) and decay_offset (a pair per decay workgroup)
//
// Workgroups:
//   decay             256 invocations, one workgroup per decay_span elements of theta
//                     (invocation t takes t, t + 256, ..); grid (decay_groups, 1)
//   mean_activation_partials, output_delta, hidden_delta_step
//                     (64 columns, 4 row lanes); workgroup (gx, gy) owns columns 64·gx .. and
//                     rows 64·gy .. 64·gy + 63; lane l sums rows 64·gy + l + 4i, i = 0 .. 15,
//                     in order; grid (⌈width / 64⌉, row_groups = ⌈m / 64⌉)
//   finish_*          256 invocations, one column or hidden unit each; grid ⌈width / 256⌉,
//                     except finish_cost: one workgroup
//
// Precision and order: WGSL has no f64. Every sum is f32 in an order fixed by the shapes
// (sequential within an invocation, then common.wgsl's tree across invocations, then the
// partials in index order), so J and the gradient are bit-reproducible on one device. The
// host scales the three sums of J in f64. Relative rounding of a sum of n positive terms: at
// most ~(16 + 8 + n / (64·256)) ulp here, ~1e-7 in practice; column sums over m cases: at
// most ~(16 + 2 + m / 64) ulp. Non-finite values are caught from their bits (a compiler may
// assume that floats are finite and drop NaN comparisons).

struct Params {
    rows: u32,
    n_visible: u32,
    n_hidden: u32,
    n_params: u32,
    w2_offset: u32,
    b1_offset: u32,
    b2_offset: u32,
    row_groups: u32,
    rho_offset: u32,
    delta_offset: u32,
    kl_offset: u32,
    columns_offset: u32,
    recon_offset: u32,
    recon_groups: u32,
    decay_offset: u32,
    decay_groups: u32,
    decay_span: u32,
    weight_decay: f32,
    sparsity_target: f32,
    sparsity_weight: f32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG: u32 = 256u;
const COLS: u32 = 64u;
const LANES: u32 = 4u;
const ROWS_PER_GROUP: u32 = 64u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> theta: array<f32>;
@group(0) @binding(2) var<storage, read> data: array<f32>;
@group(0) @binding(3) var<storage, read> hidden: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
@group(0) @binding(5) var<storage, read_write> hidden_delta: array<f32>;
@group(0) @binding(6) var<storage, read_write> gradient: array<f32>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;

// Exponent bits all ones: ±∞ or NaN.
fn non_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7F800000u) == 0x7F800000u;
}

@compute @workgroup_size(256)
fn decay(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wid.x * params.decay_span;
    var squares = 0.0f;
    var bad = 0.0f;
    for (var k = t; k < params.decay_span; k = k + WG) {
        let e = base + k;
        if (e < params.n_params) {
            let w = theta[e];
            if (non_finite(w)) {
                bad = bad + 1.0f;
            }
            // Below b1_offset: W₁, W₂ and the zero gaps after each.
            if (e < params.b1_offset) {
                squares = squares + w * w;
                gradient[e] = params.weight_decay * w;
            }
        }
    }
    let total = workgroup_sum2(t, WG, 1u, vec2<f32>(squares, bad));
    if (t == 0u) {
        stats[params.decay_offset + 2u * wid.x] = total.x;
        stats[params.decay_offset + 2u * wid.x + 1u] = total.y;
    }
}

// Rows [first, end) of the lane's row group that it visits: first, first + 4, ...
fn lane_rows(wid: vec3<u32>, lid: vec3<u32>) -> vec2<u32> {
    let start = wid.y * ROWS_PER_GROUP;
    return vec2<u32>(start + lid.y, min(start + ROWS_PER_GROUP, params.rows));
}

// Writes the workgroup's column sums (the tree over its 4 lanes) of a `width`-column matrix
// into the column partials, row group wid.y.
fn store_column_partial(wid: vec3<u32>, lid: vec3<u32>, width: u32, column_total: f32) {
    let c = wid.x * COLS + lid.x;
    if (lid.y == 0u && c < width) {
        stats[params.columns_offset + wid.y * width + c] = column_total;
    }
}

// Σ over the row groups, in order, of column c's partial sums.
fn column_total(c: u32, width: u32) -> f32 {
    var s = 0.0f;
    for (var g = 0u; g < params.row_groups; g = g + 1u) {
        s = s + stats[params.columns_offset + g * width + c];
    }
    return s;
}

@compute @workgroup_size(64, 4)
fn mean_activation_partials(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = params.n_hidden;
    let c = wid.x * COLS + lid.x;
    var s = 0.0f;
    if (c < h) {
        let rows = lane_rows(wid, lid);
        for (var r = rows.x; r < rows.y; r = r + LANES) {
            s = s + hidden[r * h + c];
        }
    }
    let total = workgroup_sum(lid.y * COLS + lid.x, WG, COLS, s);
    store_column_partial(wid, lid, h, total);
}

@compute @workgroup_size(256)
fn finish_mean_activation(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let j = wid.x * WG + t;
    if (j >= params.n_hidden) {
        return;
    }
    let mean = column_total(j, params.n_hidden) * params.inv_rows;
    let rho = params.sparsity_target;
    var kl = 0.0f;
    var delta = 0.0f;
    // Saturated units (ρ̂ = 0 or 1: KL infinite) are counted by finish_cost and reported.
    if (mean > 0.0f && mean < 1.0f) {
        kl = rho * log(rho / mean) + (1.0f - rho) * log((1.0f - rho) / (1.0f - mean));
        delta = params.sparsity_weight * (-rho / mean + (1.0f - rho) / (1.0f - mean));
    }
    stats[params.rho_offset + j] = mean;
    stats[params.kl_offset + j] = kl;
    stats[params.delta_offset + j] = delta;
}

@compute @workgroup_size(64, 4)
fn output_delta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let v = params.n_visible;
    let c = wid.x * COLS + lid.x;
    var s = 0.0f;
    var squares = 0.0f;
    if (c < v) {
        let rows = lane_rows(wid, lid);
        for (var r = rows.x; r < rows.y; r = r + LANES) {
            let at = r * v + c;
            let out = output[at];
            let e = out - data[at];
            squares = squares + e * e;
            // The CPU's order: (e·x̂)·(1 − x̂).
            let d = e * out * (1.0f - out);
            output[at] = d;
            s = s + d;
        }
    }
    let t = lid.y * COLS + lid.x;
    let column = workgroup_sum2(t, WG, COLS, vec2<f32>(s, squares));
    store_column_partial(wid, lid, v, column.x);
    // Then the 64 columns' squared errors: lane 0 holds them.
    let total = workgroup_sum(t, COLS, 1u, select(0.0f, column.y, t < COLS));
    if (t == 0u) {
        stats[params.recon_offset + wid.y * ((v + COLS - 1u) / COLS) + wid.x] = total;
    }
}

@compute @workgroup_size(64, 4)
fn hidden_delta_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = params.n_hidden;
    let c = wid.x * COLS + lid.x;
    var s = 0.0f;
    if (c < h) {
        let rows = lane_rows(wid, lid);
        for (var r = rows.x; r < rows.y; r = r + LANES) {
            let at = r * h + c;
            let a = hidden[at];
            // The CPU's order: δ·(a·(1 − a)).
            let d = hidden_delta[at] * (a * (1.0f - a));
            hidden_delta[at] = d;
            s = s + d;
        }
    }
    let total = workgroup_sum(lid.y * COLS + lid.x, WG, COLS, s);
    store_column_partial(wid, lid, h, total);
}

@compute @workgroup_size(256)
fn finish_output_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let c = wid.x * WG + t;
    if (c < params.n_visible) {
        gradient[params.b2_offset + c] = column_total(c, params.n_visible) * params.inv_rows;
    }
}

@compute @workgroup_size(256)
fn finish_hidden_bias(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let c = wid.x * WG + t;
    if (c < params.n_hidden) {
        gradient[params.b1_offset + c] = column_total(c, params.n_hidden) * params.inv_rows;
    }
}

@compute @workgroup_size(256)
fn finish_cost(@builtin(local_invocation_index) t: u32) {
    var squared_error = 0.0f;
    for (var k = t; k < params.recon_groups; k = k + WG) {
        squared_error = squared_error + stats[params.recon_offset + k];
    }
    var squares = 0.0f;
    var bad_params = 0.0f;
    for (var k = t; k < params.decay_groups; k = k + WG) {
        squares = squares + stats[params.decay_offset + 2u * k];
        bad_params = bad_params + stats[params.decay_offset + 2u * k + 1u];
    }
    var divergence = 0.0f;
    var saturated = 0.0f;
    var bad_delta = 0.0f;
    for (var j = t; j < params.n_hidden; j = j + WG) {
        divergence = divergence + stats[params.kl_offset + j];
        let mean = stats[params.rho_offset + j];
        if (non_finite(mean) || !(mean > 0.0f && mean < 1.0f)) {
            saturated = saturated + 1.0f;
        }
        if (non_finite(stats[params.delta_offset + j])) {
            bad_delta = bad_delta + 1.0f;
        }
    }
    let sums = workgroup_sum_max(t, WG, 1u, vec4<f32>(squared_error, squares, divergence, 0.0f));
    let counts = workgroup_sum2(t, WG, 1u, vec2<f32>(bad_params, saturated));
    let delta_count = workgroup_sum(t, WG, 1u, bad_delta);
    if (t == 0u) {
        stats[0] = sums.x;
        stats[1] = sums.y;
        stats[2] = sums.z;
        stats[3] = counts.x;
        stats[4] = counts.y;
        stats[5] = delta_count;
        stats[6] = 0.0f;
        stats[7] = 0.0f;
    }
}

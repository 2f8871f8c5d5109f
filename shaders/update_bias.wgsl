// update_bias.wgsl: the bias half of a CD batch's update, fused with the column means it
// needs and (hidden side) the sparsity estimate. Rates come from the device `TrainState`
// (prepended from schedule_state.wgsl). CPU reference: contrastive_divergence.rs::
// train_batch (column_means, update_bias) and penalties.rs (SparsityEstimate::update,
// sparsity_derivative). All buffers row-major f32.
//
// visible_bias_step, over the nv visible columns:
//     mean_input ← mean(v0);  g = mean(v0) − mean(vk);  v = m·v + lr·g;  b += v
// visible_bias_error_step: visible_bias_step, and also the batch's squared reconstruction
//     error, error_partials[workgroup] = Σ over its columns and all rows of (v0 − error_source)²
//     (each lane sums its rows in order, then common.wgsl's tree over the 256 invocations
//     t = lane·8 + column, t ⊕= t + s, s = 128 .. 1), so the error costs no dispatch of its own;
// hidden_bias_step, over the nh hidden columns:
//     m0 = mean(h0);  q ← 0.95 q + 0.05 m0;  d = sparsity_derivative(q)  (→ sparsity_out)
//     g = (m0 − mean(hk)) − d;  v = m·v + lr·g;  c += v
//
// Column means: workgroup (8 columns, 32 row lanes), grid ceil(width / 8). Lane l sums the
// rows [l·c, l·c + c), c = ceil(rows / 32), in four interleaved accumulators (row
// start + 4m + q into q; rows past the last full four into the first) combined as
// (a0 + a1) + (a2 + a3); the 32 lane sums are then combined by the tree
// lane[l] += lane[l + s], s = 16 .. 1 (common.wgsl's, with 8 columns: positive and negative
// sums as one vec2), and divided by the row count (exactly as reduce.wgsl's column_means).
// Tall batches (thousands of rows) keep 4 loads in flight per thread. f32 throughout; the CPU
// sums all rows in order in f32, so the two agree to a few ulp·rows.
//
// The buffers that both sides use are read and written through accessors with a `side`
// argument (0 visible, 1 hidden), defined by the file prepended to this one (7, 8 and 9, used
// by one side only, are declared here):
// - update_bias_one.wgsl, for the three steps above (one side per dispatch, `side` ignored):
//   0 dims (uniform BiasDims: rows of the data batch, chains = rows of the negative batch,
//   width), grid ceil(width / 8), 1 state (uniform TrainState), 2 positive (read,
//   rows × width: v0 or h0), 3 negative (read, chains × width: vk or hk), 4 bias (rw, width),
//   5 bias_velocity (rw, width), 6 column_state (rw, width: visible: mean(v0) is written
//   there, the weight update's mean_input; hidden: the smoothed estimate q, read and written),
//   7 sparsity_out (rw, nh; hidden only: d for the weight update), 8 error_source (read,
//   rows × width; visible_bias_error_step only: the reconstruction), 9 error_partials (rw,
//   one per workgroup; visible_bias_error_step only);
// - update_bias_both.wgsl, for bias_steps: visible_bias_error_step and hidden_bias_step in one
//   dispatch (13 storage buffers; see that file).
//
// Run both before update.wgsl's update_weights (which reads mean_input and d) and before the
// schedule kernel (which changes the rates).

struct BiasDims {
    rows: u32,
    chains: u32,
    width: u32,
    hidden_width: u32, // bias_steps only: width is the visible one
}

const COLS: u32 = 8u;
const LANES: u32 = 32u;
const SATURATION_LOW: f32 = 0.01f;
const SATURATION_HIGH: f32 = 0.99f;

@group(0) @binding(0) var<uniform> dims: BiasDims;
@group(0) @binding(1) var<uniform> state: TrainState;
// Used by one side only, so the same in both prefixes' layouts.
@group(0) @binding(7) var<storage, read_write> sparsity_out: array<f32>;
@group(0) @binding(8) var<storage, read> error_source: array<f32>;
@group(0) @binding(9) var<storage, read_write> error_partials: array<f32>;

fn lane_rows(rows: u32, lane: u32) -> vec2<u32> {
    let chunk = (rows + LANES - 1u) / LANES;
    let start = min(lane * chunk, rows);
    return vec2<u32>(start, min(start + chunk, rows));
}

fn lane_sum_positive(side: u32, col: u32, lane: u32) -> f32 {
    let width = width_of(side);
    let range = lane_rows(dims.rows, lane);
    var a = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    var r = range.x;
    for (; r + 4u <= range.y; r = r + 4u) {
        a = a + vec4<f32>(positive_at(side, r * width + col), positive_at(side, (r + 1u) * width + col), positive_at(side, (r + 2u) * width + col), positive_at(side, (r + 3u) * width + col));
    }
    for (; r < range.y; r = r + 1u) {
        a.x = a.x + positive_at(side, r * width + col);
    }
    return (a.x + a.y) + (a.z + a.w);
}

fn lane_sum_negative(side: u32, col: u32, lane: u32) -> f32 {
    let width = width_of(side);
    let range = lane_rows(dims.chains, lane);
    var a = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    var r = range.x;
    for (; r + 4u <= range.y; r = r + 4u) {
        a = a + vec4<f32>(negative_at(side, r * width + col), negative_at(side, (r + 1u) * width + col), negative_at(side, (r + 2u) * width + col), negative_at(side, (r + 3u) * width + col));
    }
    for (; r < range.y; r = r + 1u) {
        a.x = a.x + negative_at(side, r * width + col);
    }
    return (a.x + a.y) + (a.z + a.w);
}

// Column means (positive, negative) of this workgroup's column lx, returned to lane 0 (the
// other lanes get partial sums). Every invocation of the workgroup must call it (it holds
// barriers).
fn column_means(side: u32, col: u32, lx: u32, lane: u32) -> vec2<f32> {
    var sp = 0.0f;
    var sn = 0.0f;
    if (col < width_of(side)) {
        sp = lane_sum_positive(side, col, lane);
        sn = lane_sum_negative(side, col, lane);
    }
    let sums = workgroup_sum2(lane * COLS + lx, COLS * LANES, COLS, vec2<f32>(sp, sn));
    return vec2<f32>(sums.x / f32(dims.rows), sums.y / f32(dims.chains));
}

// Exactly penalties.rs::sparsity_derivative (f32, same operation order).
fn sparsity_derivative(q: f32, penalty: f32, goal: f32) -> f32 {
    var d = penalty * (q - goal);
    if (q < SATURATION_LOW) {
        d = d + penalty * (q - SATURATION_LOW) / SATURATION_LOW;
    } else if (q > SATURATION_HIGH) {
        d = d + penalty * (q - SATURATION_HIGH) / (1.0f - SATURATION_HIGH);
    }
    return d;
}

// The momentum step of bias `col` on `side` with gradient g.
fn bias_step(side: u32, col: u32, g: f32) {
    let v = state.momentum * velocity_at(side, col) + state.learning_rate * g;
    set_velocity(side, col, v);
    set_bias(side, col, bias_at(side, col) + v);
}

fn visible_bias_update(col: u32, lid: vec3<u32>, means: vec2<f32>) {
    if (lid.y == 0u && col < width_of(0u)) {
        let m0 = means.x;
        set_column_state(0u, col, m0);
        bias_step(0u, col, m0 - means.y);
    }
}

@compute @workgroup_size(8, 32)
fn visible_bias_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let col = wid.x * COLS + lid.x;
    visible_bias_update(col, lid, column_means(0u, col, lid.x, lid.y));
}

fn visible_bias_error(group: u32, lid: vec3<u32>) {
    let col = group * COLS + lid.x;
    let t = lid.y * COLS + lid.x;
    let width = width_of(0u);
    var e = 0.0f;
    if (col < width) {
        let range = lane_rows(dims.rows, lid.y);
        for (var r = range.x; r < range.y; r = r + 1u) {
            let d = positive_at(0u, r * width + col) - error_source[r * width + col];
            e = e + d * d;
        }
    }
    visible_bias_update(col, lid, column_means(0u, col, lid.x, lid.y));
    let error = workgroup_sum(t, COLS * LANES, 1u, e);
    if (t == 0u) {
        error_partials[group] = error;
    }
}

@compute @workgroup_size(8, 32)
fn visible_bias_error_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    visible_bias_error(wid.x, lid);
}

fn hidden_bias(group: u32, lid: vec3<u32>) {
    let col = group * COLS + lid.x;
    let means = column_means(1u, col, lid.x, lid.y);
    if (lid.y == 0u && col < width_of(1u)) {
        let m0 = means.x;
        let q = 0.95f * column_state_at(1u, col) + 0.05f * m0;
        set_column_state(1u, col, q);
        let d = sparsity_derivative(q, state.sparsity_penalty, state.sparsity_target);
        sparsity_out[col] = d;
        bias_step(1u, col, m0 - means.y - d);
    }
}

@compute @workgroup_size(8, 32)
fn hidden_bias_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    hidden_bias(wid.x, lid);
}

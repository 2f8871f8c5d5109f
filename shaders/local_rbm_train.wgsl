// local_rbm_train.wgsl: the CD-1 step of a local-patch RBM on the device, the twin of
// src/local_rbm/train.rs (LocalCdTrainer::train_batch, CPU reference). With h0 = up(v0),
// v1 = E[v | sample(h0)] and h1 = up(v1) from local_rbm.wgsl:
//
//   sample_hidden:        samples[t] = (u_t < h0[t]), u_t = RngStream(seed, step, HiddenSample).uniform(t)
//   weight_update:        g = (sum_k X0[k, i] H0[k, j] - X1[k, i] H1[k, j]) / cases * tied_scale
//                         v = momentum v + rate (g - weight_penalty w),  w += v
//                         (k runs over cases, and over the positions too when tied;
//                          X[k, i] = visible[r, pixel(q, i)], H[k, j] = hidden[r, q, j])
//   visible_bias_update:  g = sum_r (v0 - v1)[r, p] / cases; v = momentum v + rate g; b += v
//   hidden_bias_update:   g = sum (h0 - h1) / cases * tied_scale, qbar = sum h0 / (cases * per_bank);
//                         v = momentum v + rate g; c += v + sparsity_penalty (target - qbar)
//
// Layouts as local_rbm.wgsl (LocalDims, bank_of, pixel_of from local_rbm_geometry.wgsl).
// weight_update: 16 x 16 tiles of one bank's width x units matrix, grid (ceil(units / 16),
// ceil(width / 16), banks), each invocation the only writer of its weight. sample_hidden:
// workgroups of 256 on a 2-D grid (x fastest, 65,535 wide). The bias updates: workgroups of 64,
// one invocation per bias.

struct TrainParams {
    key_lo: u32,
    key_hi: u32,
    step_lo: u32,
    step_hi: u32,
    count: u32,
    learning_rate: f32,
    momentum: f32,
    weight_penalty: f32,
    sparsity_penalty: f32,
    sparsity_target: f32,
    tied_scale: f32,
    _pad: u32,
}

@group(0) @binding(1) var<uniform> params: TrainParams;
@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<storage, read_write> velocity: array<f32>;
@group(0) @binding(4) var<storage, read> visible0: array<f32>;
@group(0) @binding(5) var<storage, read> visible1: array<f32>;
@group(0) @binding(6) var<storage, read> hidden0: array<f32>;
@group(0) @binding(7) var<storage, read> hidden1: array<f32>;
@group(0) @binding(8) var<storage, read_write> samples: array<f32>;

var<workgroup> tile_a0: array<array<f32, 16>, 16>;
var<workgroup> tile_b0: array<array<f32, 16>, 16>;
var<workgroup> tile_a1: array<array<f32, 16>, 16>;
var<workgroup> tile_b1: array<array<f32, 16>, 16>;

const HIDDEN_SAMPLE: u32 = 1u;

@compute @workgroup_size(256)
fn sample_hidden(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let t = (wid.y * nwg.x + wid.x) * 256u + local;
    if (t >= params.count) {
        return;
    }
    let u = rng_uniform(vec2<u32>(params.key_lo, params.key_hi), params.step_lo, params.step_hi, HIDDEN_SAMPLE, t, 0u);
    samples[t] = select(0.0, 1.0, u < hidden0[t]);
}

// Positions a bank serves: all of them when tied, else its own.
fn per_bank() -> u32 {
    return select(1u, dims.positions, dims.tied != 0u);
}

@compute @workgroup_size(16, 16)
fn weight_update(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let bank = wg.z;
    let j = wg.x * TILE + lid.x;
    let i0 = wg.y * TILE;
    let n_visible = dims.rows * dims.cols * dims.channels;
    let spread = per_bank();
    let depth = dims.cases * spread;
    let steps = (depth + TILE - 1u) / TILE;
    var acc0 = 0.0;
    var acc1 = 0.0;
    for (var s = 0u; s < steps; s = s + 1u) {
        // A tiles: element (i0 + ly, k0 + lx) of Xᵀ; B tiles: element (k0 + ly, j) of H.
        let ka = s * TILE + lid.x;
        let ia = i0 + lid.y;
        var a0 = 0.0;
        var a1 = 0.0;
        if (ka < depth && ia < dims.width) {
            let q = select(bank, ka % spread, dims.tied != 0u);
            let at = (ka / spread) * n_visible + pixel_of(q, ia);
            a0 = visible0[at];
            a1 = visible1[at];
        }
        tile_a0[lid.y][lid.x] = a0;
        tile_a1[lid.y][lid.x] = a1;
        let kb = s * TILE + lid.y;
        var b0 = 0.0;
        var b1 = 0.0;
        if (kb < depth && j < dims.units) {
            let q = select(bank, kb % spread, dims.tied != 0u);
            let at = ((kb / spread) * dims.positions + q) * dims.units + j;
            b0 = hidden0[at];
            b1 = hidden1[at];
        }
        tile_b0[lid.y][lid.x] = b0;
        tile_b1[lid.y][lid.x] = b1;
        workgroupBarrier();
        for (var k = 0u; k < TILE; k = k + 1u) {
            acc0 = acc0 + tile_a0[lid.y][k] * tile_b0[k][lid.x];
            acc1 = acc1 + tile_a1[lid.y][k] * tile_b1[k][lid.x];
        }
        workgroupBarrier();
    }
    let i = i0 + lid.y;
    if (i < dims.width && j < dims.units) {
        let at = (bank * dims.width + i) * dims.units + j;
        let g = (acc0 - acc1) / f32(dims.cases) * params.tied_scale;
        let w = weights[at];
        let v = params.momentum * velocity[at] + params.learning_rate * (g - params.weight_penalty * w);
        velocity[at] = v;
        weights[at] = w + v;
    }
}

@compute @workgroup_size(64)
fn visible_bias_update(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x;
    let n_visible = dims.rows * dims.cols * dims.channels;
    if (p >= n_visible) {
        return;
    }
    var g = 0.0;
    for (var r = 0u; r < dims.cases; r = r + 1u) {
        g = g + (visible0[r * n_visible + p] - visible1[r * n_visible + p]);
    }
    g = g / f32(dims.cases);
    let v = params.momentum * velocity[p] + params.learning_rate * g;
    velocity[p] = v;
    weights[p] = weights[p] + v;
}

@compute @workgroup_size(64)
fn hidden_bias_update(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = id.x;
    let spread = per_bank();
    let banks = dims.positions / spread;
    if (t >= banks * dims.units) {
        return;
    }
    let bank = t / dims.units;
    let j = t % dims.units;
    var sum0 = 0.0;
    var sum1 = 0.0;
    for (var r = 0u; r < dims.cases; r = r + 1u) {
        for (var s = 0u; s < spread; s = s + 1u) {
            let q = select(bank, s, dims.tied != 0u);
            let at = (r * dims.positions + q) * dims.units + j;
            sum0 = sum0 + hidden0[at];
            sum1 = sum1 + hidden1[at];
        }
    }
    let g = (sum0 - sum1) / f32(dims.cases) * params.tied_scale;
    let mean = sum0 / f32(dims.cases * spread);
    let v = params.momentum * velocity[t] + params.learning_rate * g;
    velocity[t] = v;
    weights[t] = weights[t] + v + params.sparsity_penalty * (params.sparsity_target - mean);
}

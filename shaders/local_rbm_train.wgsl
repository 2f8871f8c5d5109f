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
// weight_update: 64 x 64 blocks of one bank's width x units matrix per 16 x 16 workgroup, 4 x 4
// weights per invocation, grid (ceil(units / 64), ceil(width / 64), banks of the group), each
// invocation the only writer of its weights; untied banks split into groups (local_rbm.wgsl)
// are dispatched per group on the group's weights and velocity buffers. sample_hidden:
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

// weight_update's blocks: data (0) and reconstruction (1) operands, k-major, 64 wide
// (4 x 4 KiB: WebGPU's default 16 KiB of workgroup memory exactly).
const BLOCK: u32 = 64u;
const STEP: u32 = 16u;
var<workgroup> block_a0: array<f32, 1024>;
var<workgroup> block_b0: array<f32, 1024>;
var<workgroup> block_a1: array<f32, 1024>;
var<workgroup> block_b1: array<f32, 1024>;

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
    // The bank within the group's buffers; untied, it serves position first_position + bank.
    let bank = wg.z;
    let own = dims.first_position + bank;
    let j0 = wg.x * BLOCK;
    let i0 = wg.y * BLOCK;
    let t = lid.y * 16u + lid.x;
    let n_visible = dims.rows * dims.cols * dims.channels;
    let spread = per_bank();
    let depth = dims.cases * spread;
    let steps = (depth + STEP - 1u) / STEP;
    var acc0: array<vec4<f32>, 4>;
    var acc1: array<vec4<f32>, 4>;
    for (var s = 0u; s < steps; s = s + 1u) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let e = t + 256u * u;
            // Xᵀ[i, k]: 64 consecutive patch inputs of case-position k (contiguous runs of pixels).
            let kb = e / BLOCK;
            let m = e % BLOCK;
            let k = s * STEP + kb;
            var a0 = 0.0;
            var a1 = 0.0;
            if (k < depth && i0 + m < dims.width) {
                let q = select(own, k % spread, dims.tied != 0u);
                let at = (k / spread) * n_visible + pixel_of(q, i0 + m);
                a0 = visible0[at];
                a1 = visible1[at];
            }
            block_a0[kb * BLOCK + m] = a0;
            block_a1[kb * BLOCK + m] = a1;
            // H[k, j]: 64 consecutive units.
            var b0 = 0.0;
            var b1 = 0.0;
            if (k < depth && j0 + m < dims.units) {
                let q = select(own, k % spread, dims.tied != 0u);
                let at = ((k / spread) * dims.positions + q) * dims.units + j0 + m;
                b0 = hidden0[at];
                b1 = hidden1[at];
            }
            block_b0[kb * BLOCK + m] = b0;
            block_b1[kb * BLOCK + m] = b1;
        }
        workgroupBarrier();
        for (var k = 0u; k < STEP; k = k + 1u) {
            let o = k * BLOCK;
            let a0 = vec4<f32>(block_a0[o + lid.y], block_a0[o + lid.y + 16u], block_a0[o + lid.y + 32u], block_a0[o + lid.y + 48u]);
            let b0 = vec4<f32>(block_b0[o + lid.x], block_b0[o + lid.x + 16u], block_b0[o + lid.x + 32u], block_b0[o + lid.x + 48u]);
            let a1 = vec4<f32>(block_a1[o + lid.y], block_a1[o + lid.y + 16u], block_a1[o + lid.y + 32u], block_a1[o + lid.y + 48u]);
            let b1 = vec4<f32>(block_b1[o + lid.x], block_b1[o + lid.x + 16u], block_b1[o + lid.x + 32u], block_b1[o + lid.x + 48u]);
            acc0[0] = acc0[0] + a0.x * b0;
            acc0[1] = acc0[1] + a0.y * b0;
            acc0[2] = acc0[2] + a0.z * b0;
            acc0[3] = acc0[3] + a0.w * b0;
            acc1[0] = acc1[0] + a1.x * b1;
            acc1[1] = acc1[1] + a1.y * b1;
            acc1[2] = acc1[2] + a1.z * b1;
            acc1[3] = acc1[3] + a1.w * b1;
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < 4u; r = r + 1u) {
        let i = i0 + lid.y + 16u * r;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let j = j0 + lid.x + 16u * c;
            if (i < dims.width && j < dims.units) {
                let at = (bank * dims.width + i) * dims.units + j;
                let g = (acc0[r][c] - acc1[r][c]) / f32(dims.cases) * params.tied_scale;
                let w = weights[at];
                let v = params.momentum * velocity[at] + params.learning_rate * (g - params.weight_penalty * w);
                velocity[at] = v;
                weights[at] = w + v;
            }
        }
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

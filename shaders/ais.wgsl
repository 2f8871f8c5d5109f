// ais.wgsl: annealed importance sampling of log Z for a Bernoulli RBM, all runs at once
// (src/gpu/ais.rs; CPU reference: src/eval/ais.rs `ais_log_partition`). The Philox snippet
// (shaders/philox.wgsl) and common.wgsl (softplus, sigmoid, workgroup_sum2) are appended by
// src/gpu/shader.rs.
//
// The annealing step k lives on the device, in counter[0], so one prepared bind group serves
// every step: per step the host records ais_next_step, the GEMM x = v·W + c, ais_hidden, and
// (except after the last step) the GEMM a = h·Wᵀ + b_B and ais_visible.
//
// Layout: row-major f32, one run per row: v, a are runs × n_visible, x, h runs × n_hidden.
// betas[k] = (β_k, β_k − β_{k−1}) as f32 (the difference taken in f64 on the host, as the CPU
// weights its visible term). log_weights holds two f32 per run, (sum, Kahan compensation):
// a thousand increments of ~1/K of the total each would otherwise lose ~√K ulp.
// Random draws: key = params.key (the seed mixed with AIS_SEED_SALT), step k, index = element
// of the whole runs × width matrix, purposes GibbsHidden (3) and GibbsVisible (4): the CPU's
// `backend.bernoulli` calls draw exactly these uniforms.
//
// Entry points:
//   ais_next_step  (one invocation) counter[0] += 1.
//   ais_hidden     one workgroup per run r (WG threads, a power of two from 32 to 256 set by
//                  the host from the layer's width, prepended as a constant; terms t, t + WG,
//                  .. then common.wgsl's tree): log weight += Δβ_k·Σ_i v_i·(b_B − b_A)_i
//                                      + Σ_j softplus(β_k·x_j) − softplus(β_{k−1}·x_j);
//                  then, unless k = params.last, h_j = [u < σ(β_k·x_j)].
//   ais_visible    one invocation per element: v = [u < σ((1 − β_k)·b_A_i + β_k·a)], with
//                  a = h·Wᵀ + b_B; at k = 0 (a = 0, β = 0) this is the draw from the base-rate
//                  model, σ(b_A).

struct Params {
    runs: u32,
    n_visible: u32,
    n_hidden: u32,
    last: u32,
    key: vec2<u32>,
    _pad: vec2<u32>,
}

const GIBBS_HIDDEN: u32 = 3u;
const GIBBS_VISIBLE: u32 = 4u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> counter: array<u32>;
@group(0) @binding(2) var<storage, read> betas: array<vec2<f32>>;
// ais_hidden: v; ais_visible: a = h·Wᵀ + b_B.
@group(0) @binding(3) var<storage, read> src_a: array<f32>;
// ais_hidden: x = v·W + c; ais_visible: the base-rate biases b_A.
@group(0) @binding(4) var<storage, read> src_b: array<f32>;
// ais_hidden: b_B − b_A.
@group(0) @binding(5) var<storage, read> bias_gap: array<f32>;
// ais_hidden: hidden samples h; ais_visible: visible samples v.
@group(0) @binding(6) var<storage, read_write> samples: array<f32>;
@group(0) @binding(7) var<storage, read_write> log_weights: array<f32>;

@compute @workgroup_size(1)
fn ais_next_step() {
    // (Reads params only so that every entry point's bind group starts with it.)
    if (params.runs > 0u) {
        counter[0] = counter[0] + 1u;
    }
}

@compute @workgroup_size(WG)
fn ais_hidden(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let r = wid.x + wid.y * nwg.x;
    let k = counter[0];
    let beta = betas[k].x;
    let before = betas[k - 1u].x;
    let nv = params.n_visible;
    let nh = params.n_hidden;
    var acc = vec2<f32>(0.0f, 0.0f);
    if (r < params.runs) {
        for (var i = t; i < nv; i = i + WG) {
            acc.x = acc.x + src_a[r * nv + i] * bias_gap[i];
        }
        let sample = k < params.last;
        for (var j = t; j < nh; j = j + WG) {
            let x = src_b[r * nh + j];
            acc.y = acc.y + (softplus(beta * x) - softplus(before * x));
            if (sample) {
                let u = rng_uniform(params.key, k, 0u, GIBBS_HIDDEN, r * nh + j, 0u);
                samples[r * nh + j] = select(0.0f, 1.0f, u < sigmoid(beta * x));
            }
        }
    }
    let total = workgroup_sum2(t, WG, 1u, acc);
    if (t == 0u && r < params.runs) {
        let increment = betas[k].y * total.x + total.y;
        // Kahan: sum in [2r], the lost low part in [2r + 1].
        let y = increment - log_weights[2u * r + 1u];
        let sum = log_weights[2u * r];
        let total = sum + y;
        log_weights[2u * r + 1u] = (total - sum) - y;
        log_weights[2u * r] = total;
    }
}

@compute @workgroup_size(256)
fn ais_visible(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    let nv = params.n_visible;
    if (e >= params.runs * nv) {
        return;
    }
    let k = counter[0];
    let beta = betas[k].x;
    let p = sigmoid((1.0f - beta) * src_b[e % nv] + beta * src_a[e]);
    let u = rng_uniform(params.key, k, 0u, GIBBS_VISIBLE, e, 0u);
    samples[e] = select(0.0f, 1.0f, u < p);
}

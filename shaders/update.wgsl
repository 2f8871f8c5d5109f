// update.wgsl: the fused weight update of one CD batch, with the rates read from the device
// (`TrainState`, prepended from schedule_state.wgsl) so the adaptive schedule never needs the
// host. CPU reference: src/train/weights_update.rs::update_weights. Buffers row-major f32.
// Where the device offers 11 storage buffers per stage, trainers run the same update as the
// gradient product's epilogue instead (gemm_update.wgsl); this pass serves the others.
//
//   g' = g − (wp·w + mean_input[i]·d[j]);  v = m·v + lr·g';  w += v;  G ← g'
//
// with lr, m, wp = state.learning_rate, state.momentum, state.weight_penalty, i the visible
// and j the hidden index of element e = i·n_hidden + j. Each workgroup also writes
//   partials[group] = (Σ g'·p, Σ g'², Σ p², max |v|)
// over its elements; the dot and Σp² terms are 0 (P not read) when state.has_previous == 0.
//
// Workgroup 256; G = min(ceil(n / 1024), 4096) workgroups (1-D grid), so the schedule kernel
// never finishes more than 4096 partials. Workgroup g owns the `span` elements
// [span·g, span·g + span), span = ceil(n / G) rounded up to a multiple of 256 (host-computed);
// thread t handles span·g + t + 256 k for k = 0, 1, .. (coalesced) and sums its terms in f32
// in k order; the 256 thread sums are then combined by common.wgsl's fixed binary tree
// (scratch[t] ⊕= scratch[t + s] for s = 128, 64, .., 1; ⊕ is + on xyz and max on w;
// appended by src/gpu/shader.rs).
// The order depends only on the shape, so results are deterministic on a given device.
//
// bindings: 0 dims (uniform UpdateDims), 1 state (uniform TrainState), 2 weights (rw, nv×nh),
// 3 velocity (rw, nv×nh), 4 gradient (rw, nv×nh: raw estimate in, penalised g' out),
// 5 previous (read, nv×nh: last batch's g'), 6 mean_input (read, nv),
// 7 sparsity_derivative (read, nh), 8 partials (rw, one vec4 per workgroup).

struct UpdateDims {
    n_visible: u32,
    n_hidden: u32,
    total: u32,
    span: u32,
}

const WG: u32 = 256u;

@group(0) @binding(1) var<uniform> state: TrainState;

@group(0) @binding(0) var<uniform> dims: UpdateDims;
@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<storage, read_write> velocity: array<f32>;
@group(0) @binding(4) var<storage, read_write> gradient: array<f32>;
@group(0) @binding(5) var<storage, read> previous: array<f32>;
@group(0) @binding(6) var<storage, read> mean_input: array<f32>;
@group(0) @binding(7) var<storage, read> sparsity_in: array<f32>;
@group(0) @binding(8) var<storage, read_write> partials: array<vec4<f32>>;

@compute @workgroup_size(256)
fn update_weights(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = wid.x;
    let base = group * dims.span;
    let lr = state.learning_rate;
    let m = state.momentum;
    let wp = state.weight_penalty;
    let has_previous = state.has_previous != 0u;
    var acc = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    for (var k = t; k < dims.span; k = k + WG) {
        let e = base + k;
        if (e < dims.total) {
            let i = e / dims.n_hidden;
            let j = e - i * dims.n_hidden;
            let w = weights[e];
            let g = gradient[e] - (wp * w + mean_input[i] * sparsity_in[j]);
            gradient[e] = g;
            let v = m * velocity[e] + lr * g;
            velocity[e] = v;
            weights[e] = w + v;
            acc.y = acc.y + g * g;
            if (has_previous) {
                let p = previous[e];
                acc.x = acc.x + g * p;
                acc.z = acc.z + p * p;
            }
            acc.w = max(acc.w, abs(v));
        }
    }
    let total = workgroup_sum_max(t, WG, 1u, acc);
    if (t == 0u) {
        partials[group] = total;
    }
}

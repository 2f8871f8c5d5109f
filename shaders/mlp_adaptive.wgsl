// mlp_adaptive.wgsl: Toman's all-sigmoid MLP trained full batch with per-weight adaptive steps
// and robust training (issue 21; Toman 2011 §6.4–§6.8), the rule and the rollback on the
// device. src/gpu/mlp.rs records, per epoch, the forward products (GEMM, bias + sigmoid
// epilogue), these kernels and the backward products; the CPU reference is
// src/supervised/adaptive_step.rs with src/supervised/criterion.rs (docs/TOMAN.md).
//
//   output_delta   over the N·K outputs: d = o − t; delta = d·o(1 − o) (the criterion's
//                  ∂/∂logit times N: the weight-gradient products scale by 1/N); per workgroup
//                  the partial (Σ d², #non-finite d)
//   hidden_delta   delta ⊙= a(1 − a) in place, after the product delta_above · Wᵀ
//   decide         one workgroup: folds the partials into Toman's error RMS/2 =
//                  sqrt(Σ d² / (N·K)) / 2 and takes robust training's decision (below)
//   measure        the same fold, writing only the measured error (the end-of-run check)
//   step           per weight (one an invocation), what the decision says; a gradient element
//                  in the folded range [fold_at, fold_at + fold_len) is the sum of narrow's
//                  partials in a fixed order times 1/N instead of the gradient buffer's
//   narrow         the layers after the first when every one is at most NARROW units wide
//                  (Toman's 25→15→10): one invocation per case runs their forward from the
//                  first layer's activations, the output delta and error partials, and the
//                  backward deltas down to the first layer's, in private arrays (the weights
//                  are read from the weights vector, the same address across a workgroup).
//                  It stands for the narrow layers' forward products, output_delta, and the
//                  backward products with hidden_delta (7 dispatches of Toman's net). With
//                  fold, each sweep of 64 cases then sums their [a_{k−1} 1]ᵀ·δ_k for every
//                  narrow layer (invocation t: elements t, t + 64, …, the cases in order)
//                  into the workgroup's partial row (the narrow layers' gradient products,
//                  4 dispatches of Toman's net).
//
// decide also appends the epoch's scalars to `history` (row scalars[COUNTER], which the host
// zeroes before each submission), so the epochs of a submission run in one compute pass with
// one copy at its end.
//
// Decision (scalars[DECISION]), in the CPU reference's order: E ≤ target (> 0), or a non-finite
// error without robust training → HOLD (no change; the host stops); robust training: E < best
// → best := E and STEP_KEEP (copy w into the best weights, then step); E ≥ best · growth →
// ROLLBACK (w := best weights, every rate × robust_factor, both delta memories cleared, no
// step); else STEP. A non-finite error with robust training counts as N·K (Toman's kernel's
// value). The best error starts at f32's largest value (the host writes it), so the first
// epoch keeps its weights.
//
// Step, per weight, with δ = −g: rate × (up if δ and the last δ have the same strict sign, else
// down), capped at max_step; δ_m = δ + momentum · last δ_m; w += rate · δ_m. A non-finite new
// weight is not written: its memories are cleared and (robust) its rate × robust_factor.
//
// Buffers (f32), one bind group each kernel, three layouts. Delta kernels: 0 DeltaParams, 1
// values (outputs or the layer's activations, read), 2 targets (read), 3 delta (rw), 4
// partials (vec2 per workgroup, rw). Rule kernels: 5 RuleParams, 6 partials (read; a row of
// rp.row per workgroup: Σ d², #non-finite, then the folded gradient's partials), 7 scalars (rw, the slots
// below), 8 weights, 9 best weights, 10 memory (rw, vec4 per weight: rate, last δ, last δ_m,
// unused), 11 gradient (read), 12 history (rw, 8 scalars per epoch of a submission). Narrow:
// 13 NarrowParams, 14 the layers' shapes (NarrowLayer each, read), 15 weights (read), 16
// targets (read), 17 activations (rw; every layer's rows × act_ld block, the first layer's
// written by its GEMM), 18 deltas (rw; rows × delta_ld per layer), 19 partials (vec2 per
// workgroup, then the folded gradient's partials: np.row per workgroup). The
// weights are the layers' blocks, each padded to 64 values (zero gradient there, so padding
// stays zero).
//
// Workgroups of 256; the elementwise kernels run G = min(⌈n / 2048⌉, 4096) workgroups (host:
// src/gpu/reduce.rs's split), workgroup g owning [g·span, g·span + span), invocation t taking
// g·span + t + 256i in order; decide folds the partials t, t + 256, … then common.wgsl's tree.
// The error sum is an f32 sum in an order fixed by N·K alone: bit-reproducible on one device;
// against the CPU's f64 sum it is off by ~1e-6 relative. The rule runs in f32 where the CPU
// reference runs its rates and memories in f64 (tests/gpu_mlp.rs states the tolerances).

struct DeltaParams {
    n: u32,
    span: u32,
    clip: u32,
    _pad: u32,
}

struct RuleParams {
    n: u32,
    span: u32,
    groups: u32,
    robust: u32,
    count: f32,
    target_error: f32,
    up: f32,
    down: f32,
    max_step: f32,
    momentum: f32,
    growth: f32,
    robust_factor: f32,
    // Values per workgroup row of `partials` (2: the error pair alone; more: the narrow
    // layers' gradient partials follow it, the gradient from element fold_at on, fold_len of
    // them, each Σ over the rows times fold_scale = 1/N).
    row: u32,
    fold_at: u32,
    fold_len: u32,
    fold_scale: f32,
}

struct NarrowParams {
    rows: u32,
    layers: u32,
    clip: u32,
    // Cases one sweep of the grid covers: workgroups × NARROW_WG.
    stride: u32,
    // Values per workgroup row of the partials, and (fold ≠ 0) where the gradient's folded
    // part starts: a layer's block [W_k; b_k] at gradient offset w lies at w − fold_from + 2.
    row: u32,
    fold_from: u32,
    fold: u32,
    _pad: u32,
}

// Offsets in elements; act_ld and delta_ld are row strides.
struct NarrowLayer {
    n_in: u32,
    n_out: u32,
    w: u32,
    b: u32,
    act: u32,
    act_ld: u32,
    delta: u32,
    delta_ld: u32,
}

const WG: u32 = 256u;
// The widest layer `narrow` takes (src/gpu/mlp: NARROW), and its workgroup size.
const NARROW: u32 = 64u;
const NARROW_WG: u32 = 64u;

// Slots of `scalars`.
const ERROR: u32 = 0u;
const SUM: u32 = 1u;
const BAD: u32 = 2u;
const DECISION: u32 = 3u;
const BEST: u32 = 4u;
const ROLLBACKS: u32 = 5u;
const MEASURED: u32 = 6u;
const COUNTER: u32 = 7u;
const SCALARS: u32 = 8u;

// Decisions, as f32 in scalars[DECISION].
const HOLD: f32 = 0.0f;
const STEP: f32 = 1.0f;
const STEP_KEEP: f32 = 2.0f;
const ROLLBACK: f32 = 3.0f;

@group(0) @binding(0) var<uniform> dp: DeltaParams;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<f32>;
@group(0) @binding(3) var<storage, read_write> delta: array<f32>;
@group(0) @binding(4) var<storage, read_write> delta_partials: array<vec2<f32>>;

@group(0) @binding(5) var<uniform> rp: RuleParams;
@group(0) @binding(6) var<storage, read> partials: array<f32>;
@group(0) @binding(7) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(8) var<storage, read_write> weights: array<f32>;
@group(0) @binding(9) var<storage, read_write> best: array<f32>;
@group(0) @binding(10) var<storage, read_write> memory: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read> gradient: array<f32>;
@group(0) @binding(12) var<storage, read_write> history: array<f32>;

@group(0) @binding(13) var<uniform> np: NarrowParams;
@group(0) @binding(14) var<storage, read> shape: array<NarrowLayer>;
@group(0) @binding(15) var<storage, read> net_weights: array<f32>;
@group(0) @binding(16) var<storage, read> net_targets: array<f32>;
@group(0) @binding(17) var<storage, read_write> acts: array<f32>;
@group(0) @binding(18) var<storage, read_write> deltas: array<f32>;
@group(0) @binding(19) var<storage, read_write> narrow_partials: array<f32>;

// Exponent bits all ones: ±∞ or NaN (from the bits: a compiler may assume floats finite).
fn non_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7F800000u) == 0x7F800000u;
}

// A quiet NaN built at run time (Tint refuses a NaN const-expression).
fn nan() -> f32 {
    var bits = 0x7FC00000u;
    return bitcast<f32>(bits);
}

// y(1 − y), y clipped to [0.01, 0.99] as FANN 2.2 takes it where asked.
fn slope_of(y: f32, clip: bool) -> f32 {
    var a = y;
    if (clip) {
        a = clamp(a, 0.01f, 0.99f);
    }
    return a * (1.0f - a);
}

fn slope(y: f32) -> f32 {
    return slope_of(y, dp.clip != 0u);
}

@compute @workgroup_size(256)
fn output_delta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wid.x * dp.span;
    var acc = vec2<f32>(0.0f, 0.0f);
    for (var k = t; k < dp.span; k = k + WG) {
        let e = base + k;
        if (e < dp.n) {
            let o = values[e];
            let d = o - targets[e];
            if (non_finite(d)) {
                acc.y = acc.y + 1.0f;
            } else {
                acc.x = acc.x + d * d;
            }
            delta[e] = d * slope(o);
        }
    }
    let total = workgroup_sum2(t, WG, 1u, acc);
    if (t == 0u) {
        delta_partials[wid.x] = total;
    }
}

@compute @workgroup_size(256)
fn hidden_delta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wid.x * dp.span;
    for (var k = t; k < dp.span; k = k + WG) {
        let e = base + k;
        if (e < dp.n) {
            delta[e] = delta[e] * slope(values[e]);
        }
    }
}

// Σ d² and the non-finite count over every partial; invocation 0 gets the totals.
fn fold_partials(t: u32) -> vec2<f32> {
    var acc = vec2<f32>(0.0f, 0.0f);
    for (var k = t; k < rp.groups; k = k + WG) {
        acc = acc + vec2<f32>(partials[k * rp.row], partials[k * rp.row + 1u]);
    }
    return workgroup_sum2(t, WG, 1u, acc);
}

// RMS/2 of the totals; NaN when any difference or the result is not finite.
fn rms_half(total: vec2<f32>) -> f32 {
    let e = sqrt(total.x / rp.count) / 2.0f;
    if (total.y > 0.0f || non_finite(total.x) || non_finite(e)) {
        return nan();
    }
    return e;
}

@compute @workgroup_size(256)
fn decide(@builtin(local_invocation_index) t: u32) {
    let total = fold_partials(t);
    if (t != 0u) {
        return;
    }
    var e = rms_half(total);
    let robust = rp.robust != 0u;
    let finite = !non_finite(e);
    if (!finite && robust) {
        e = rp.count;
    }
    var decision = STEP;
    if (!finite && !robust) {
        decision = HOLD;
    } else if (rp.target_error > 0.0f && e <= rp.target_error) {
        decision = HOLD;
    } else if (robust) {
        let best_error = scalars[BEST];
        if (e < best_error) {
            scalars[BEST] = e;
            decision = STEP_KEEP;
        } else if (e >= best_error * rp.growth) {
            decision = ROLLBACK;
            scalars[ROLLBACKS] = scalars[ROLLBACKS] + 1.0f;
        }
    }
    scalars[ERROR] = e;
    scalars[SUM] = total.x;
    scalars[BAD] = total.y;
    scalars[DECISION] = decision;
    let row = u32(scalars[COUNTER]);
    if (row < arrayLength(&history) / SCALARS) {
        for (var s = 0u; s < SCALARS; s = s + 1u) {
            history[row * SCALARS + s] = scalars[s];
        }
    }
    scalars[COUNTER] = f32(row + 1u);
}

@compute @workgroup_size(256)
fn measure(@builtin(local_invocation_index) t: u32) {
    let total = fold_partials(t);
    if (t == 0u) {
        scalars[MEASURED] = rms_half(total);
    }
}

fn same_direction(a: f32, b: f32) -> bool {
    return (a > 0.0f && b > 0.0f) || (a < 0.0f && b < 0.0f);
}

// Σ over the narrow kernel's workgroups of their partials of folded gradient element o, in
// a fixed order (8 interleaved chains, then their pairwise sum), times 1/N.
fn folded_gradient(o: u32) -> f32 {
    var s: array<f32, 8>;
    for (var c = 0u; c < 8u; c = c + 1u) {
        s[c] = 0.0f;
    }
    let at = 2u + o;
    var g = 0u;
    for (; g + 8u <= rp.groups; g = g + 8u) {
        for (var c = 0u; c < 8u; c = c + 1u) {
            s[c] = s[c] + partials[(g + c) * rp.row + at];
        }
    }
    for (var c = 0u; g + c < rp.groups; c = c + 1u) {
        s[c] = s[c] + partials[(g + c) * rp.row + at];
    }
    let total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    return total * rp.fold_scale;
}

@compute @workgroup_size(256)
fn step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let decision = scalars[DECISION];
    if (decision == HOLD) {
        return;
    }
    let base = wid.x * rp.span;
    for (var k = t; k < rp.span; k = k + WG) {
        let i = base + k;
        if (i < rp.n) {
            let m = memory[i];
            if (decision == ROLLBACK) {
                weights[i] = best[i];
                memory[i] = vec4<f32>(m.x * rp.robust_factor, 0.0f, 0.0f, 0.0f);
                continue;
            }
            let w = weights[i];
            if (decision == STEP_KEEP) {
                best[i] = w;
            }
            var g = 0.0f;
            if (i - rp.fold_at < rp.fold_len) {
                g = folded_gradient(i - rp.fold_at);
            } else {
                g = gradient[i];
            }
            let d = -g;
            var factor = rp.down;
            if (same_direction(m.y, d)) {
                factor = rp.up;
            }
            let rate = min(m.x * factor, rp.max_step);
            let dm = d + rp.momentum * m.z;
            let next = w + rate * dm;
            if (non_finite(next)) {
                var kept = rate;
                if (rp.robust != 0u) {
                    kept = rate * rp.robust_factor;
                }
                memory[i] = vec4<f32>(kept, 0.0f, 0.0f, 0.0f);
            } else {
                weights[i] = next;
                memory[i] = vec4<f32>(rate, d, dm, 0.0f);
            }
        }
    }
}

// The same logistic as the GEMM's epilogue (sigmoid_clamped).
fn logistic(x: f32) -> f32 {
    return 1.0f / (1.0f + exp(clamp(-x, -87.0f, 88.0f)));
}

@compute @workgroup_size(64)
fn narrow(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let clip = np.clip != 0u;
    let last = np.layers - 1u;
    var acc = vec2<f32>(0.0f, 0.0f);
    var cur: array<f32, NARROW>;
    var next: array<f32, NARROW>;
    let fold = np.fold != 0u;
    let own = wid.x * np.row;
    // base is the same across the workgroup: the barriers below are in uniform control flow.
    for (var base = wid.x * NARROW_WG; base < np.rows; base = base + np.stride) {
        let r = base + t;
        if (r < np.rows) {
            let first = shape[0];
            for (var i = 0u; i < first.n_out; i = i + 1u) {
                cur[i] = acts[first.act + r * first.act_ld + i];
            }
            for (var k = 1u; k < np.layers; k = k + 1u) {
                let l = shape[k];
                for (var j = 0u; j < l.n_out; j = j + 1u) {
                    var s = net_weights[l.b + j];
                    for (var i = 0u; i < l.n_in; i = i + 1u) {
                        s = s + cur[i] * net_weights[l.w + i * l.n_out + j];
                    }
                    next[j] = logistic(s);
                }
                for (var j = 0u; j < l.n_out; j = j + 1u) {
                    cur[j] = next[j];
                    acts[l.act + r * l.act_ld + j] = next[j];
                }
            }
            let out = shape[last];
            for (var j = 0u; j < out.n_out; j = j + 1u) {
                let o = cur[j];
                let d = o - net_targets[r * out.n_out + j];
                if (non_finite(d)) {
                    acc.y = acc.y + 1.0f;
                } else {
                    acc.x = acc.x + d * d;
                }
                cur[j] = d * slope_of(o, clip);
                deltas[out.delta + r * out.delta_ld + j] = cur[j];
            }
            // δ_{k−1} = (δ_k · W_kᵀ) ⊙ a_{k−1}(1 − a_{k−1}), down to the first layer's.
            for (var k = last; k > 0u; k = k - 1u) {
                let l = shape[k];
                let below = shape[k - 1u];
                for (var i = 0u; i < l.n_in; i = i + 1u) {
                    var s = 0.0f;
                    for (var j = 0u; j < l.n_out; j = j + 1u) {
                        s = s + cur[j] * net_weights[l.w + i * l.n_out + j];
                    }
                    next[i] = s * slope_of(acts[below.act + r * below.act_ld + i], clip);
                }
                for (var i = 0u; i < l.n_in; i = i + 1u) {
                    cur[i] = next[i];
                    deltas[below.delta + r * below.delta_ld + i] = next[i];
                }
            }
        }
        if (fold) {
            // The sweep's cases' part of [a_{k−1} 1]ᵀ·δ_k for every narrow layer: invocation t
            // owns the block's elements t, t + NARROW_WG, …, each a sum over the cases in order
            // (their activations and deltas just written above by the workgroup's invocations).
            storageBarrier();
            let cases = min(NARROW_WG, np.rows - base);
            for (var k = 1u; k < np.layers; k = k + 1u) {
                let l = shape[k];
                let below = shape[k - 1u];
                let at = own + 2u + l.w - np.fold_from;
                for (var o = t; o < (l.n_in + 1u) * l.n_out; o = o + NARROW_WG) {
                    let i = o / l.n_out;
                    let j = o % l.n_out;
                    var s = 0.0f;
                    for (var c = 0u; c < cases; c = c + 1u) {
                        let row = base + c;
                        s = s + acts[below.act + row * below.act_ld + i] * deltas[l.delta + row * l.delta_ld + j];
                    }
                    if (base == wid.x * NARROW_WG) {
                        narrow_partials[at + o] = s;
                    } else {
                        narrow_partials[at + o] = narrow_partials[at + o] + s;
                    }
                }
            }
        }
    }
    let total = workgroup_sum2(t, NARROW_WG, 1u, acc);
    if (t == 0u) {
        narrow_partials[own] = total.x;
        narrow_partials[own + 1u] = total.y;
    }
}

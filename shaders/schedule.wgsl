// schedule.wgsl: end of a CD batch, on the device. One workgroup of 256 threads:
//   1. finishes the weight update's partials (update.wgsl: vec4 (Σ g'·p, Σ g'², Σ p², max|v|)
//      per workgroup, at most 4096) and the squared-error partials (reduce.wgsl
//      partial_sum_sq_diff, at most 4096) into scalars: thread t takes items t, t + 256, .. in order, then the fixed binary tree
//      scratch[t] ⊕= scratch[t + s], s = 128 .. 1 (⊕: + on sums, max on max|v|): common.wgsl's
//      workgroup_sum_max and workgroup_sum, inline as one tree over both (half the barriers);
//   2. thread 0: cosine = dot / (sqrt(norm²)·sqrt(prev norm²)), valid when
//      has_previous && norm² > 0 && prev norm² > 0 (train/weights_update.rs);
//      gradient RMS = sqrt(norm² / n_weights);
//   3. adaptive schedule (state.adaptive == 1) and a valid cosine: Masters' rules exactly as
//      train/schedule.rs (adapt_learning_rate with the clamp to [0.001, 1], adapt_momentum:
//      ÷ 1.5 when |cos| > 0.3), in f32 like the CPU (only the cosine is f64 there);
//      fixed schedule: rates untouched (the epoch-end rules stay on the host);
//   4. epoch accumulators (cosine sum and count, RMS sum, max increment, squared error),
//      the last_* scalars, has_previous = 1, and one record in the batch log at
//      batch_index (if it fits), then batch_index += 1.
// `TrainState` is prepended from schedule_state.wgsl.
// schedule_gather.wgsl runs this step and the next batch's gather in one dispatch.
//
// bindings: 0 params (uniform ScheduleParams), 1 state (rw storage TrainState),
// 2 update_partials (read, array<vec4<f32>>), 3 error_partials (read, array<f32>),
// 4 batch_log (rw, array<f32>, 8 words per batch:
//    [cosine (0 if invalid), cosine valid (1.0/0.0), gradient RMS, max |increment|,
//     squared error, learning rate after, momentum after, 0]).

struct ScheduleParams {
    n_update_partials: u32,
    n_error_partials: u32,
    n_weights: u32,
    log_capacity: u32,
}

const WG: u32 = 256u;
const LOG_WORDS: u32 = 8u;

@group(0) @binding(0) var<uniform> params: ScheduleParams;
@group(0) @binding(1) var<storage, read_write> state: TrainState;
@group(0) @binding(2) var<storage, read> update_partials: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> error_partials: array<f32>;
@group(0) @binding(4) var<storage, read_write> batch_log: array<f32>;

var<workgroup> scratch4: array<vec4<f32>, 256>;
var<workgroup> scratch1: array<f32, 256>;

fn adapt_learning_rate(learning_rate: f32, cosine: f32) -> f32 {
    var adapted = learning_rate;
    if (cosine > 0.5f) {
        adapted = learning_rate * 1.2f;
    } else if (cosine > 0.3f) {
        adapted = learning_rate * 1.1f;
    } else if (cosine < -0.5f) {
        adapted = learning_rate / 1.2f;
    } else if (cosine < -0.3f) {
        adapted = learning_rate / 1.1f;
    }
    return clamp(adapted, 0.001f, 1.0f);
}

fn adapt_momentum(momentum: f32, cosine: f32) -> f32 {
    if (abs(cosine) > 0.3f) {
        return momentum / 1.5f;
    }
    return momentum;
}

@compute @workgroup_size(256)
fn schedule(@builtin(local_invocation_index) t: u32) {
    schedule_batch(t);
}

// Every invocation of the workgroup must call it (it holds barriers).
fn schedule_batch(t: u32) {
    var acc = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    for (var k = t; k < params.n_update_partials; k = k + WG) {
        let p = update_partials[k];
        acc = vec4<f32>(acc.xyz + p.xyz, max(acc.w, p.w));
    }
    var err = 0.0f;
    for (var k = t; k < params.n_error_partials; k = k + WG) {
        err = err + error_partials[k];
    }
    scratch4[t] = acc;
    scratch1[t] = err;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            let a = scratch4[t];
            let b = scratch4[t + s];
            scratch4[t] = vec4<f32>(a.xyz + b.xyz, max(a.w, b.w));
            scratch1[t] = scratch1[t] + scratch1[t + s];
        }
        workgroupBarrier();
    }
    if (t != 0u) {
        return;
    }
    let total = scratch4[0];
    let dot = total.x;
    let norm = total.y;
    let prev_norm = total.z;
    let max_increment = total.w;
    let squared_error = scratch1[0];
    let valid = state.has_previous != 0u && norm > 0.0f && prev_norm > 0.0f;
    var cosine = 0.0f;
    if (valid) {
        cosine = dot / (sqrt(norm) * sqrt(prev_norm));
    }
    let rms = sqrt(norm / f32(max(params.n_weights, 1u)));
    if (valid && state.adaptive != 0u) {
        state.learning_rate = adapt_learning_rate(state.learning_rate, cosine);
        state.momentum = adapt_momentum(state.momentum, cosine);
    }
    if (valid) {
        state.cosine_sum = state.cosine_sum + cosine;
        state.cosine_count = state.cosine_count + 1u;
    }
    state.rms_sum = state.rms_sum + rms;
    state.max_increment = max(state.max_increment, max_increment);
    state.squared_error = state.squared_error + squared_error;
    state.last_dot = dot;
    state.last_norm = norm;
    state.last_prev_norm = prev_norm;
    state.last_max_increment = max_increment;
    state.last_cosine = cosine;
    state.last_cosine_valid = select(0u, 1u, valid);
    state.last_gradient_rms = rms;
    state.last_squared_error = squared_error;
    state.has_previous = 1u;
    let slot = state.batch_index;
    if (slot < params.log_capacity) {
        let o = slot * LOG_WORDS;
        batch_log[o] = cosine;
        batch_log[o + 1u] = select(0.0f, 1.0f, valid);
        batch_log[o + 2u] = rms;
        batch_log[o + 3u] = max_increment;
        batch_log[o + 4u] = squared_error;
        batch_log[o + 5u] = state.learning_rate;
        batch_log[o + 6u] = state.momentum;
        batch_log[o + 7u] = 0.0f;
    }
    state.batch_index = slot + 1u;
}

// update_bias_both.wgsl: update_bias.wgsl's visible_bias_error_step and hidden_bias_step in
// one dispatch (`bias_steps`): workgroups [0, ceil(nv / 8)) do the visible columns, the rest
// the hidden ones. The two halves share no buffer they write, so nothing orders them, and
// the batch spends one dispatch on its bias steps instead of two. Prepended to
// update_bias.wgsl; dims.width is nv and dims.hidden_width nh.
//
// bindings: 0 dims, 1 state, visible side 2 v0, 3 vk, 4 visible bias, 5 its velocity,
// 6 mean_input (written), 8 error_source, 9 error_partials; hidden side 10 h0, 11 hk,
// 12 hidden bias, 13 its velocity, 14 the smoothed estimate q, 7 sparsity_out (d).
// (7, 8 and 9 are declared in update_bias.wgsl, as for the one-side steps.)
// 13 storage buffers, over WebGPU's default of 8: used only where the device offers them.

@group(0) @binding(2) var<storage, read> positive: array<f32>;
@group(0) @binding(3) var<storage, read> negative: array<f32>;
@group(0) @binding(4) var<storage, read_write> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> bias_velocity: array<f32>;
@group(0) @binding(6) var<storage, read_write> column_state: array<f32>;
@group(0) @binding(10) var<storage, read> hidden_positive: array<f32>;
@group(0) @binding(11) var<storage, read> hidden_negative: array<f32>;
@group(0) @binding(12) var<storage, read_write> hidden_biases: array<f32>;
@group(0) @binding(13) var<storage, read_write> hidden_velocity: array<f32>;
@group(0) @binding(14) var<storage, read_write> smoothed: array<f32>;

@compute @workgroup_size(8, 32)
fn bias_steps(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let visible_groups = (dims.width + COLS - 1u) / COLS;
    if (wid.x < visible_groups) {
        visible_bias_error(wid.x, lid);
    } else {
        hidden_bias(wid.x - visible_groups, lid);
    }
}

fn width_of(side: u32) -> u32 {
    if (side == 0u) {
        return dims.width;
    }
    return dims.hidden_width;
}

fn positive_at(side: u32, i: u32) -> f32 {
    if (side == 0u) {
        return positive[i];
    }
    return hidden_positive[i];
}

fn negative_at(side: u32, i: u32) -> f32 {
    if (side == 0u) {
        return negative[i];
    }
    return hidden_negative[i];
}

fn bias_at(side: u32, i: u32) -> f32 {
    if (side == 0u) {
        return bias[i];
    }
    return hidden_biases[i];
}

fn set_bias(side: u32, i: u32, value: f32) {
    if (side == 0u) {
        bias[i] = value;
    } else {
        hidden_biases[i] = value;
    }
}

fn velocity_at(side: u32, i: u32) -> f32 {
    if (side == 0u) {
        return bias_velocity[i];
    }
    return hidden_velocity[i];
}

fn set_velocity(side: u32, i: u32, value: f32) {
    if (side == 0u) {
        bias_velocity[i] = value;
    } else {
        hidden_velocity[i] = value;
    }
}

fn column_state_at(side: u32, i: u32) -> f32 {
    if (side == 0u) {
        return column_state[i];
    }
    return smoothed[i];
}

fn set_column_state(side: u32, i: u32, value: f32) {
    if (side == 0u) {
        column_state[i] = value;
    } else {
        smoothed[i] = value;
    }
}

// update_bias_one.wgsl: the buffers of one side of update_bias.wgsl's steps (one dispatch per
// side; `side` is ignored). Prepended to update_bias.wgsl; bindings as listed there.

@group(0) @binding(2) var<storage, read> positive: array<f32>;
@group(0) @binding(3) var<storage, read> negative: array<f32>;
@group(0) @binding(4) var<storage, read_write> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> bias_velocity: array<f32>;
@group(0) @binding(6) var<storage, read_write> column_state: array<f32>;

fn width_of(side: u32) -> u32 {
    return dims.width;
}

fn positive_at(side: u32, i: u32) -> f32 {
    return positive[i];
}

fn negative_at(side: u32, i: u32) -> f32 {
    return negative[i];
}

fn bias_at(side: u32, i: u32) -> f32 {
    return bias[i];
}

fn set_bias(side: u32, i: u32, value: f32) {
    bias[i] = value;
}

fn velocity_at(side: u32, i: u32) -> f32 {
    return bias_velocity[i];
}

fn set_velocity(side: u32, i: u32, value: f32) {
    bias_velocity[i] = value;
}

fn column_state_at(side: u32, i: u32) -> f32 {
    return column_state[i];
}

fn set_column_state(side: u32, i: u32, value: f32) {
    column_state[i] = value;
}

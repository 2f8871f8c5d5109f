// affine_sigmoid.wgsl: hidden-unit probabilities of an RBM layer (naive reference kernel).
//
//   output[r, j] = sigmoid(bias[j] + sum_i input[r, i] * weights[i, j])
//
// Layout: input is rows x n_in, weights n_in x n_out, bias n_out, output rows x n_out;
// all row-major f32. One invocation per output element; workgroups of 64 along j,
// grid (ceil(n_out / 64), rows). CPU reference: CpuBackend::visible_to_hidden. `sigmoid` is
// common.wgsl's (appended by src/gpu/shader.rs).

struct Dims {
    rows: u32,
    n_in: u32,
    n_out: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let j = id.x;
    let r = id.y;
    if (j >= dims.n_out || r >= dims.rows) {
        return;
    }
    var acc = bias[j];
    for (var i = 0u; i < dims.n_in; i = i + 1u) {
        acc = acc + input[r * dims.n_in + i] * weights[i * dims.n_out + j];
    }
    output[r * dims.n_out + j] = sigmoid(acc);
}

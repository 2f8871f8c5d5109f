// rtrl_step.wgsl: the O(n²) parts of Moore's RTRL step on the device (issue 20), so a step's
// only read-back is E and the output: the forward step (Moore 3.1–3.2), ∂E/∂y and E (2.12),
// the back-propagation shortcut's δ's and gradients (§5.10) and the online Euler step. The
// O(n⁴) sensitivity update is gpu::gemm plus rtrl_sensitivity.wgsl. CPU reference:
// recurrent::network::forward, Network::output_error, rtrl::shortcut_gradients, train_step.
// Layouts (f32 unless said):
//   graph     u32: per block 6 words [to, kind (0 feed-forward, 1 recurrent, 2 bias), from,
//             rows, cols, offset into params], then each layer's unit offset (layer order);
//   params    the flat parameter vector (recurrent::graph::GraphSpec::blocks order);
//   frame     this step's [a of every layer | σ' = 1 − a² of every layer], `total` units each;
//   prev      the previous step's frame, same layout (read only);
//   desired   the step's desired output (outputs values);
//   work      [∂E/∂y (outputs) | E (1) | δ of every layer (total, at the layers' offsets)];
//   gradient  ∂E/∂θ in the params layout (tensor blocks' written by the GEMM, shortcut
//             blocks' here).
// One entry point per part; the host records them in Moore's order.

struct StepDims {
    layer: u32,
    rows: u32,
    block: u32,
    blocks: u32,
    total: u32,
    outputs: u32,
    out_offset: u32,
    count: u32,
    rate: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> dims: StepDims;
@group(0) @binding(1) var<storage, read> graph: array<u32>;
@group(0) @binding(2) var<storage, read_write> params: array<f32>;
@group(0) @binding(3) var<storage, read_write> frame: array<f32>;
@group(0) @binding(4) var<storage, read> prev: array<f32>;
@group(0) @binding(5) var<storage, read> desired: array<f32>;
@group(0) @binding(6) var<storage, read_write> work: array<f32>;
@group(0) @binding(7) var<storage, read_write> gradient: array<f32>;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

fn layer_offset(layer: u32) -> u32 {
    return graph[6u * dims.blocks + layer];
}

fn flat_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return ((wid.z * nwg.y + wid.y) * nwg.x + wid.x) * WG + lid;
}

// Sums partial[0..64] into partial[0] (every invocation must call it).
fn reduce_partials(lid: u32) {
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        workgroupBarrier();
        if (lid < stride) {
            partial[lid] += partial[lid + stride];
        }
    }
    workgroupBarrier();
}

// net^i_j = Σ_blocks into i (w a^k(τ) | μ a^q(τ − 1) | b); a = tanh(net), σ' = 1 − a².
// One workgroup per unit j of dims.layer (dims.rows units).
@compute @workgroup_size(64)
fn forward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    var sum = 0.0;
    if (j < dims.rows) {
        for (var b = 0u; b < dims.blocks; b++) {
            if (graph[6u * b] != dims.layer) {
                continue;
            }
            let kind = graph[6u * b + 1u];
            let cols = graph[6u * b + 4u];
            let row = graph[6u * b + 5u] + j * cols;
            if (kind == 2u) {
                if (lid == 0u) {
                    sum += params[row];
                }
                continue;
            }
            let base = layer_offset(graph[6u * b + 2u]);
            for (var l = lid; l < cols; l += WG) {
                if (kind == 0u) {
                    sum += params[row + l] * frame[base + l];
                } else {
                    sum += params[row + l] * prev[base + l];
                }
            }
        }
    }
    partial[lid] = sum;
    reduce_partials(lid);
    if (lid == 0u && j < dims.rows) {
        // tanh(±20) is ±1 in f32; the clamp keeps backends that compute tanh through exp from
        // overflowing to NaN.
        let a = tanh(clamp(partial[0], -20.0, 20.0));
        let at = layer_offset(dims.layer) + j;
        frame[at] = a;
        frame[dims.total + at] = 1.0 - a * a;
    }
}

// ∂E/∂y = y − d into work[0..outputs], E = ½Σ(y − d)² into work[outputs]. One workgroup.
@compute @workgroup_size(64)
fn output_error(@builtin(local_invocation_index) lid: u32) {
    var sum = 0.0;
    for (var j = lid; j < dims.outputs; j += WG) {
        let g = frame[dims.out_offset + j] - desired[j];
        work[j] = g;
        sum += g * g;
    }
    partial[lid] = sum;
    reduce_partials(lid);
    if (lid == 0u) {
        work[dims.outputs] = 0.5 * partial[0];
    }
}

// δ^i = σ'(net^i) ⊙ (∂E/∂y [i = y] + Σ_{feed-forward c ← i} w^{c,iᵀ} δ^c) for shortcut layer
// dims.layer; the host runs the shortcut layers from the output down, so the consumers' δ
// are ready. One invocation per unit.
@compute @workgroup_size(64)
fn backprop(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = flat_index(wid, nwg, lid);
    if (j >= dims.rows) {
        return;
    }
    let own = layer_offset(dims.layer);
    var e = 0.0;
    if (own == dims.out_offset) {
        e = work[j];
    }
    for (var b = 0u; b < dims.blocks; b++) {
        if (graph[6u * b + 1u] != 0u || graph[6u * b + 2u] != dims.layer) {
            continue;
        }
        let rows = graph[6u * b + 3u];
        let cols = graph[6u * b + 4u];
        let offset = graph[6u * b + 5u];
        let delta = dims.outputs + 1u + layer_offset(graph[6u * b]);
        for (var r = 0u; r < rows; r++) {
            e += params[offset + r * cols + j] * work[delta + r];
        }
    }
    work[dims.outputs + 1u + own + j] = frame[dims.total + own + j] * e;
}

// ∂E/∂w^{m,n} = δ^m ⊗ a^n for block dims.block (a^n(τ), a^n(τ − 1) or 1). One invocation per
// entry (dims.count = rows × cols).
@compute @workgroup_size(64)
fn shortcut_gradient(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let x = flat_index(wid, nwg, lid);
    if (x >= dims.count) {
        return;
    }
    let b = dims.block;
    let kind = graph[6u * b + 1u];
    let cols = graph[6u * b + 4u];
    let r = x / cols;
    let t = x % cols;
    var source = 1.0;
    if (kind == 0u) {
        source = frame[layer_offset(graph[6u * b + 2u]) + t];
    } else if (kind == 1u) {
        source = prev[layer_offset(graph[6u * b + 2u]) + t];
    }
    gradient[graph[6u * b + 5u] + x] = work[dims.outputs + 1u + layer_offset(graph[6u * b]) + r] * source;
}

// The online Euler step θ ← θ − rate · ∂E/∂θ over all dims.count parameters.
@compute @workgroup_size(64)
fn euler(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let x = flat_index(wid, nwg, lid);
    if (x < dims.count) {
        params[x] -= dims.rate * gradient[x];
    }
}

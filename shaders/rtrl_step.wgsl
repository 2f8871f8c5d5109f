// rtrl_step.wgsl: the O(n²) parts of Moore's RTRL step on the device (issue 20), so a step's
// only read-back is E and the output: the forward step (Moore 3.1–3.2), ∂E/∂y, E (2.12) and
// δ^y in one kernel, the back-propagation shortcut's δ's (§5.10), and the gradient of the
// shortcut blocks fused with the online Euler step. The O(n⁴) sensitivity update is gpu::gemm
// plus rtrl_sensitivity.wgsl or rtrl_fold.wgsl (which also folds tensors into the gradient).
// CPU reference: recurrent::network::forward, Network::output_error,
// rtrl::shortcut_gradients, train_step.
// Layouts (f32 unless said):
//   graph     u32: a header [n_in, where the targets start in examples, where the outputs
//             start in results, 0], then per block 7 words [to, kind (0 feed-forward,
//             1 recurrent, 2 bias), from, rows, cols, offset into params, shortcut (1: its
//             gradient is δ^m ⊗ a^n, formed by gradient_euler)], then each layer's unit offset
//             (layer order; padded so every layer starts at a storage-binding alignment);
//   params    the flat parameter vector (recurrent::graph::GraphSpec::blocks order);
//   frame     this step's [a of every layer | σ' = 1 − a² of every layer], `total` units each
//             (two frames alternate by the step's parity: this one and prev);
//   prev      the previous step's frame, same layout (read only);
//   examples  a submission's [inputs (capacity × n_in) | targets (capacity × outputs)];
//   work      [∂E/∂y (outputs) | E (1) | δ of every layer (total, at the layers' offsets)];
//   gradient  ∂E/∂θ in the params layout (tensor blocks' written by rtrl_fold.wgsl,
//             shortcut blocks' by gradient_euler);
//   results   a submission's [E per step (capacity) | output per step (capacity × outputs)];
//   slot      x: the step's slot in examples and results (a dynamic offset per step).
// One entry point per part; the host records them in Moore's order, a submission's steps in
// one compute pass.

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
@group(0) @binding(5) var<storage, read> examples: array<f32>;
@group(0) @binding(6) var<storage, read_write> work: array<f32>;
@group(0) @binding(7) var<storage, read_write> gradient: array<f32>;
@group(0) @binding(8) var<storage, read_write> results: array<f32>;
@group(0) @binding(9) var<uniform> slot: vec4<u32>;

const WG: u32 = 64u;
const HEAD: u32 = 4u;
const STRIDE: u32 = 7u;
var<workgroup> partial: array<f32, 64>;

fn layer_offset(layer: u32) -> u32 {
    return graph[HEAD + STRIDE * dims.blocks + layer];
}

// Word `w` of block `b`'s entry in the graph table.
fn block_word(b: u32, w: u32) -> u32 {
    return graph[HEAD + STRIDE * b + w];
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
// One workgroup per unit j of dims.layer (dims.rows units). The input a^0(τ) is read from the
// step's slot of examples; layer 1's dispatch (always the first) also copies it into the frame,
// where later dispatches and the next step (as prev) read it.
@compute @workgroup_size(64)
fn forward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    let n_in = graph[0];
    let input_at = slot.x * n_in;
    if (dims.layer == 1u && j == 0u) {
        let at = layer_offset(0u);
        for (var l = lid; l < n_in; l += WG) {
            frame[at + l] = examples[input_at + l];
        }
    }
    var sum = 0.0;
    if (j < dims.rows) {
        for (var b = 0u; b < dims.blocks; b++) {
            if (block_word(b, 0u) != dims.layer) {
                continue;
            }
            let kind = block_word(b, 1u);
            let source_layer = block_word(b, 2u);
            let cols = block_word(b, 4u);
            let row = block_word(b, 5u) + j * cols;
            if (kind == 2u) {
                if (lid == 0u) {
                    sum += params[row];
                }
                continue;
            }
            let base = layer_offset(source_layer);
            for (var l = lid; l < cols; l += WG) {
                if (kind == 0u && source_layer == 0u) {
                    sum += params[row + l] * examples[input_at + l];
                } else if (kind == 0u) {
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

// After the output layer's forward: ∂E/∂y = y − d into work[0..outputs], E = ½Σ(y − d)² into
// work[outputs], δ^y = σ'(net^y) ⊙ ∂E/∂y into the output's δ (the shortcut's and the fold's
// starting point), and E and y into the step's slot of results. One workgroup.
@compute @workgroup_size(64)
fn output_delta(@builtin(local_invocation_index) lid: u32) {
    let target_at = graph[1] + slot.x * dims.outputs;
    let output_at = graph[2] + slot.x * dims.outputs;
    var sum = 0.0;
    for (var j = lid; j < dims.outputs; j += WG) {
        let y = frame[dims.out_offset + j];
        let g = y - examples[target_at + j];
        work[j] = g;
        work[dims.outputs + 1u + dims.out_offset + j] = frame[dims.total + dims.out_offset + j] * g;
        results[output_at + j] = y;
        sum += g * g;
    }
    partial[lid] = sum;
    reduce_partials(lid);
    if (lid == 0u) {
        work[dims.outputs] = 0.5 * partial[0];
        results[slot.x] = 0.5 * partial[0];
    }
}

// δ^i = σ'(net^i) ⊙ (∂E/∂y [i = y] + Σ_{feed-forward c ← i} w^{c,iᵀ} δ^c) for shortcut layer
// dims.layer below the output (output_delta forms δ^y); the host runs the shortcut layers from
// the output down, so the consumers' δ are ready. One invocation per unit.
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
        if (block_word(b, 1u) != 0u || block_word(b, 2u) != dims.layer) {
            continue;
        }
        let rows = block_word(b, 3u);
        let cols = block_word(b, 4u);
        let offset = block_word(b, 5u);
        let delta = dims.outputs + 1u + layer_offset(block_word(b, 0u));
        for (var r = 0u; r < rows; r++) {
            e += params[offset + r * cols + j] * work[delta + r];
        }
    }
    work[dims.outputs + 1u + own + j] = frame[dims.total + own + j] * e;
}

// δ^m ⊗ a^n (a^n(τ), a^n(τ − 1) or 1) at entry x of block b: the shortcut's gradient.
fn outer_gradient(b: u32, x: u32) -> f32 {
    let kind = block_word(b, 1u);
    let cols = block_word(b, 4u);
    let r = x / cols;
    let t = x % cols;
    var source = 1.0;
    if (kind == 0u) {
        source = frame[layer_offset(block_word(b, 2u)) + t];
    } else if (kind == 1u) {
        source = prev[layer_offset(block_word(b, 2u)) + t];
    }
    return work[dims.outputs + 1u + layer_offset(block_word(b, 0u)) + r] * source;
}

// ∂E/∂w^{m,n} = δ^m ⊗ a^n for block dims.block into the gradient (the own term of a folded
// output block). One invocation per entry (dims.count = rows × cols).
@compute @workgroup_size(64)
fn shortcut_gradient(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let x = flat_index(wid, nwg, lid);
    if (x >= dims.count) {
        return;
    }
    gradient[block_word(dims.block, 5u) + x] = outer_gradient(dims.block, x);
}

// The online Euler step θ ← θ − rate · ∂E/∂θ over all dims.count parameters, forming the
// shortcut blocks' gradient δ^m ⊗ a^n on the way (kept in gradient too). The host records it
// after every product that reads the weights.
@compute @workgroup_size(64)
fn gradient_euler(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let x = flat_index(wid, nwg, lid);
    if (x >= dims.count) {
        return;
    }
    var g = 0.0;
    var found = false;
    for (var b = 0u; b < dims.blocks; b++) {
        let offset = block_word(b, 5u);
        if (x >= offset && x < offset + block_word(b, 3u) * block_word(b, 4u)) {
            if (block_word(b, 6u) != 0u) {
                g = outer_gradient(b, x - offset);
                gradient[x] = g;
                found = true;
            }
            break;
        }
    }
    if (!found) {
        g = gradient[x];
    }
    params[x] -= dims.rate * g;
}

// local_rbm_train_tiled.wgsl: local_rbm_train.wgsl's weight_update on the blocks of
// local_rbm_tile.wgsl, with the same bindings and result (CPU reference:
// src/local_rbm/train.rs, LocalCdTrainer::train_batch):
//
//   g = (sum_k X0[k, i] H0[k, j] - X1[k, i] H1[k, j]) / cases * tied_scale
//   v = momentum v + rate (g - weight_penalty w),  w += v
//   (k runs over cases, and over the positions too when tied;
//    X[k, i] = visible[r, pixel(q, i)], H[k, j] = hidden[r, q, j])
//
// As the CPU does, the two terms are one product over 2 · depth (depth = cases · positions a
// bank serves): [X0; X1]ᵀ [H0; −H1]. The data's k run [0, depth) is padded to a whole number
// of k steps (k1p), the reconstruction's follows, so each step reads one pair only (a branch
// uniform per step). A BM × BN block of one bank's width × units matrix per workgroup, grid
// (ceil(units / BN), ceil(width / BM), banks of the group), each invocation the only writer of
// its TM × TN weights, with decay and momentum in the epilogue. An invocation's A loads share
// one patch input (tid % BM, local_rbm_tile.wgsl), so its offset from the patch corner is
// computed once. Every load and store is checked against the shapes; the host compiles this
// module without wgpu's index clamps. `TrainParams` is local_rbm_train.wgsl's.

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

// A workgroup's bank and block, the invocation, and the depth of each term.
struct Grad {
    // The position an untied bank serves (tied: every position, k % spread).
    own: u32,
    i0: u32,
    j0: u32,
    tid: u32,
    spread: u32,
    depth: u32,
    // The data's k run padded to whole steps: the reconstruction's starts there.
    k1p: u32,
    n_visible: u32,
    // Patch input i0 + tid % BM (this invocation's A loads), whether it is one, and its image
    // offset from the patch corner.
    input_ok: bool,
    offset: u32,
    corner_own: u32,
}

// Case and position of depth index k.
fn case_position(g: Grad, k: u32) -> vec2<u32> {
    if (dims.tied != 0u) {
        return vec2<u32>(k / g.spread, k % g.spread);
    }
    return vec2<u32>(k, g.own);
}

// A quad j: X[k, i0 + tid % BM] of the data (second false) or the reconstruction.
fn grad_a(g: Grad, j: u32, k0: u32, second: bool) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (!g.input_ok) {
        return v;
    }
    for (var c = 0u; c < 4u; c = c + 1u) {
        let k = k0 + slab_at(g.tid, j, c, false, BM).y;
        if (k < g.depth) {
            let rq = case_position(g, k);
            var corner = g.corner_own;
            if (dims.tied != 0u) {
                corner = corner_of(rq.y);
            }
            let at = rq.x * g.n_visible + corner + g.offset;
            if (second) {
                v[c] = visible1[at];
            } else {
                v[c] = visible0[at];
            }
        }
    }
    return v;
}

// B quad j: H[k, j0 + n] of the data, or −H of the reconstruction.
fn grad_b(g: Grad, j: u32, k0: u32, second: bool) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let at = slab_at(g.tid, j, c, false, BN);
        let k = k0 + at.y;
        let n = g.j0 + at.x;
        if (k < g.depth && n < dims.units) {
            let rq = case_position(g, k);
            let e = (rq.x * dims.positions + rq.y) * dims.units + n;
            if (second) {
                v[c] = -hidden1[e];
            } else {
                v[c] = hidden0[e];
            }
        }
    }
    return v;
}

// Step s's loads: the data's term for s < k1p / BK, then the reconstruction's.
fn grad_fetch(g: Grad, s: u32) -> Staged {
    let k_all = s * BK;
    let second = k_all >= g.k1p;
    let k0 = select(k_all, k_all - g.k1p, second);
    var st: Staged;
    st.a0 = grad_a(g, 0u, k0, second);
    if (QA > 1u) {
        st.a1 = grad_a(g, 1u, k0, second);
    }
    if (QA > 2u) {
        st.a2 = grad_a(g, 2u, k0, second);
    }
    if (QA > 3u) {
        st.a3 = grad_a(g, 3u, k0, second);
    }
    st.b0 = grad_b(g, 0u, k0, second);
    if (QB > 1u) {
        st.b1 = grad_b(g, 1u, k0, second);
    }
    if (QB > 2u) {
        st.b2 = grad_b(g, 2u, k0, second);
    }
    if (QB > 3u) {
        st.b3 = grad_b(g, 3u, k0, second);
    }
    return st;
}

@compute @workgroup_size(WG_X, WG_Y)
fn weight_update(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    // The bank within the group's buffers; untied, it serves position first_position + bank.
    let bank = wg.z;
    let own = dims.first_position + bank;
    let tid = lid.y * WG_X + lid.x;
    let spread = select(1u, dims.positions, dims.tied != 0u);
    let depth = dims.cases * spread;
    let k1p = (depth + BK - 1u) / BK * BK;
    let i0 = wg.y * BM;
    let input = i0 + tid % BM;
    let walk = walk_from(input);
    let g = Grad(own, i0, wg.x * BN, tid, spread, depth, k1p, dims.rows * dims.cols * dims.channels, input < dims.width, walk.row + walk.rem, corner_of(own));
    let steps = 2u * k1p / BK;
    var staged = grad_fetch(g, 0u);
    var acc: Sums;
    for (var s = 0u; s < steps; s = s + 1u) {
        stash(staged, tid, false, false);
        workgroupBarrier();
        if (s + 1u < steps) {
            staged = grad_fetch(g, s + 1u);
        }
        acc = slab_products(acc, lid.x, lid.y);
        workgroupBarrier();
    }
    for (var i = 0u; i < TM / 4u; i = i + 1u) {
        for (var j = 0u; j < TN / 4u; j = j + 1u) {
            let col0 = g.j0 + 4u * (lid.x + j * WG_X);
            for (var row = 0u; row < 4u; row = row + 1u) {
                let input_row = i0 + 4u * (lid.y + i * WG_Y) + row;
                let v = sums_row(acc, i, j, row);
                for (var c = 0u; c < 4u; c = c + 1u) {
                    let col = col0 + c;
                    if (input_row < dims.width && col < dims.units) {
                        let at = (bank * dims.width + input_row) * dims.units + col;
                        let grad = v[c] / f32(dims.cases) * params.tied_scale;
                        let w = weights[at];
                        let moved = params.momentum * velocity[at] + params.learning_rate * (grad - params.weight_penalty * w);
                        velocity[at] = moved;
                        weights[at] = w + moved;
                    }
                }
            }
        }
    }
}

// local_rbm_tiled.wgsl: the products of local_rbm.wgsl (up, down_products) on the blocks of
// local_rbm_tile.wgsl, with the same bindings, layouts, grids' meaning and results (the CPU
// reference is src/local_rbm/passes.rs):
//
//   up:             hidden[r, q, j] = sigmoid(c[bank(q), j] + sum_i visible[r, pixel(q, i)] * W[bank(q), i, j])
//   down_products:  products[r, q, i] = sum_j hidden[r, q, j] * W[bank(q), i, j]
//
// A BM × BN block of the output per workgroup of WG_X × WG_Y invocations, TM × TN outputs
// each: grid (ceil(units, resp. width / BN), ceil(cases / BM), positions of the group). up's A
// is gathered straight from the image (no im2col buffer): an invocation's loads share one patch
// input k (local_rbm_tile.wgsl), whose image offset it walks along the patch a step at a time
// (PatchWalk), so there is no division per element. Every load and store is checked against
// the shapes and every workgroup-memory index is in range by construction (the host compiles
// this module without wgpu's index clamps). `LocalDims`, `dims`, `bank_of` and `group_bank`
// come from local_rbm_geometry.wgsl, the blocks from local_rbm_tile.wgsl, `sigmoid` from
// common.wgsl.

@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> input: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

// Where a workgroup works: position q, first output row r0 and column c0, the invocation, the
// position's bank in the group's weights, and for up the patch corner in the image.
struct Place {
    q: u32,
    r0: u32,
    c0: u32,
    tid: u32,
    w_base: u32,
    corner: u32,
    n_visible: u32,
}

fn place(wg: vec3<u32>, lid: vec3<u32>) -> Place {
    let q = dims.first_position + wg.z;
    return Place(q, wg.y * BM, wg.x * BN, lid.y * WG_X + lid.x, group_bank(q) * dims.width * dims.units, corner_of(q), dims.rows * dims.cols * dims.channels);
}

// up, A quad j: cases r0 + (tid + (4 j + c) NT) / BK at the walk's patch input.
fn up_a(p: Place, j: u32, walk: PatchWalk) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (walk.k < dims.width) {
        let pixel = p.corner + walk.row + walk.rem;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let r = p.r0 + slab_at(p.tid, j, c, true, BM).x;
            if (r < dims.cases) {
                v[c] = input[r * p.n_visible + pixel];
            }
        }
    }
    return v;
}

// up, B quad j: W[bank, k, c0 + n], consecutive units across invocations.
fn up_b(p: Place, j: u32, k0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let at = slab_at(p.tid, j, c, false, BN);
        let k = k0 + at.y;
        let n = p.c0 + at.x;
        if (k < dims.width && n < dims.units) {
            v[c] = weights[p.w_base + k * dims.units + n];
        }
    }
    return v;
}

fn up_fetch(p: Place, walk: PatchWalk, k0: u32) -> Staged {
    var st: Staged;
    st.a0 = up_a(p, 0u, walk);
    if (QA > 1u) {
        st.a1 = up_a(p, 1u, walk);
    }
    if (QA > 2u) {
        st.a2 = up_a(p, 2u, walk);
    }
    if (QA > 3u) {
        st.a3 = up_a(p, 3u, walk);
    }
    st.b0 = up_b(p, 0u, k0);
    if (QB > 1u) {
        st.b1 = up_b(p, 1u, k0);
    }
    if (QB > 2u) {
        st.b2 = up_b(p, 2u, k0);
    }
    if (QB > 3u) {
        st.b3 = up_b(p, 3u, k0);
    }
    return st;
}

@compute @workgroup_size(WG_X, WG_Y)
fn up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = place(wg, lid);
    let steps = (dims.width + BK - 1u) / BK;
    var walk = walk_from(p.tid % BK);
    var staged = up_fetch(p, walk, 0u);
    var acc: Sums;
    for (var s = 0u; s < steps; s = s + 1u) {
        stash(staged, p.tid, true, false);
        workgroupBarrier();
        if (s + 1u < steps) {
            walk = walk_on(walk, BK);
            staged = up_fetch(p, walk, (s + 1u) * BK);
        }
        acc = slab_products(acc, lid.x, lid.y);
        workgroupBarrier();
    }
    let bias_base = bank_of(p.q) * dims.units;
    for (var i = 0u; i < TM / 4u; i = i + 1u) {
        for (var j = 0u; j < TN / 4u; j = j + 1u) {
            let col0 = p.c0 + 4u * (lid.x + j * WG_X);
            for (var row = 0u; row < 4u; row = row + 1u) {
                let r = p.r0 + 4u * (lid.y + i * WG_Y) + row;
                let v = sums_row(acc, i, j, row);
                for (var c = 0u; c < 4u; c = c + 1u) {
                    let col = col0 + c;
                    if (r < dims.cases && col < dims.units) {
                        output[(r * dims.positions + p.q) * dims.units + col] = sigmoid(v[c] + bias[bias_base + col]);
                    }
                }
            }
        }
    }
}

// down_products, A quad j: hidden[r, q, k], consecutive k across invocations.
fn down_a(p: Place, j: u32, k0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    let k = k0 + p.tid % BK;
    if (k < dims.units) {
        for (var c = 0u; c < 4u; c = c + 1u) {
            let r = p.r0 + slab_at(p.tid, j, c, true, BM).x;
            if (r < dims.cases) {
                v[c] = input[(r * dims.positions + p.q) * dims.units + k];
            }
        }
    }
    return v;
}

// down_products, B quad j: Wᵀ[k, n] = W[bank, c0 + n, k], consecutive k across invocations.
fn down_b(p: Place, j: u32, k0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    let k = k0 + p.tid % BK;
    if (k < dims.units) {
        for (var c = 0u; c < 4u; c = c + 1u) {
            let n = p.c0 + slab_at(p.tid, j, c, true, BN).x;
            if (n < dims.width) {
                v[c] = weights[p.w_base + n * dims.units + k];
            }
        }
    }
    return v;
}

fn down_fetch(p: Place, k0: u32) -> Staged {
    var st: Staged;
    st.a0 = down_a(p, 0u, k0);
    if (QA > 1u) {
        st.a1 = down_a(p, 1u, k0);
    }
    if (QA > 2u) {
        st.a2 = down_a(p, 2u, k0);
    }
    if (QA > 3u) {
        st.a3 = down_a(p, 3u, k0);
    }
    st.b0 = down_b(p, 0u, k0);
    if (QB > 1u) {
        st.b1 = down_b(p, 1u, k0);
    }
    if (QB > 2u) {
        st.b2 = down_b(p, 2u, k0);
    }
    if (QB > 3u) {
        st.b3 = down_b(p, 3u, k0);
    }
    return st;
}

@compute @workgroup_size(WG_X, WG_Y)
fn down_products(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let p = place(wg, lid);
    let steps = (dims.units + BK - 1u) / BK;
    var staged = down_fetch(p, 0u);
    var acc: Sums;
    for (var s = 0u; s < steps; s = s + 1u) {
        stash(staged, p.tid, true, true);
        workgroupBarrier();
        if (s + 1u < steps) {
            staged = down_fetch(p, (s + 1u) * BK);
        }
        acc = slab_products(acc, lid.x, lid.y);
        workgroupBarrier();
    }
    for (var i = 0u; i < TM / 4u; i = i + 1u) {
        for (var j = 0u; j < TN / 4u; j = j + 1u) {
            let col0 = p.c0 + 4u * (lid.x + j * WG_X);
            for (var row = 0u; row < 4u; row = row + 1u) {
                let r = p.r0 + 4u * (lid.y + i * WG_Y) + row;
                let v = sums_row(acc, i, j, row);
                for (var c = 0u; c < 4u; c = c + 1u) {
                    let col = col0 + c;
                    if (r < dims.cases && col < dims.width) {
                        output[(r * dims.group_positions + wg.z) * dims.width + col] = v[c];
                    }
                }
            }
        }
    }
}

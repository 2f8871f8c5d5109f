// local_rbm_tile.wgsl: a snippet, not a module. The blocked product behind the tiled kernels of
// the local-patch RBM (local_rbm_tiled.wgsl: up, down_products; local_rbm_train_tiled.wgsl:
// weight_update), and the patch walk their gathered operands use. The host
// (src/gpu/local_rbm.rs, `LocalTiling`) prepends the constants, then local_rbm_geometry.wgsl:
//
//   BM, BN   a block of BM × BN outputs per workgroup
//   BK       the depth of one k step
//   TM, TN   outputs per invocation (4 or 8 each): WG_X = BN / TN by WG_Y = BM / TM invocations
//
// Each k step the invocations copy a BK × BM slab of A and a BK × BN slab of B into
// workgroup memory (k-major, vec4 along m and n, each k row padded by one vec4 so that the
// copies laid along k do not all hit one bank). Invocation (tx, ty) owns rows
// 4 (ty + i WG_Y) + 0..3 (i < TM / 4) and columns 4 (tx + j WG_X) + 0..3 (j < TN / 4) of the
// block, so every workgroup-memory read of the product is a vec4: A's broadcast across tx,
// B's consecutive across tx. The next step's global loads are issued into registers
// (`Staged`) before the current step's arithmetic, which hides their latency behind it; one
// slab of each operand (two barriers a step) keeps a 64 × 64 block with k steps of 16 at
// 8.5 KiB of workgroup memory, within WebGPU's default 16 KiB.
//
// Loads: an invocation's loads come in quads of 4, QA of A and QB of B a step; load c of
// quad j is slab element l = tid + (4 j + c) NT, laid along k (element (l / BK, l % BK):
// consecutive invocations read consecutive k, for operands whose rows run along k) or along m
// or n (element (l % BM, l / BM), resp. (l % BN, l / BN)). NT a multiple of BK, BM and BN means
// all of an invocation's loads laid along k share one k (tid % BK), and all laid along m one
// m (tid % BM): one patch offset per invocation instead of one per element.

const WG_X: u32 = BN / TN;
const WG_Y: u32 = BM / TM;
const NT: u32 = WG_X * WG_Y;
const QA: u32 = BM * BK / NT / 4u;
const QB: u32 = BN * BK / NT / 4u;
const SA: u32 = BM / 4u + 1u;
const SB: u32 = BN / 4u + 1u;
const_assert TM == 4u || TM == 8u;
const_assert TN == 4u || TN == 8u;
const_assert NT <= 256u;
const_assert QA * 4u * NT == BM * BK;
const_assert QB * 4u * NT == BN * BK;
const_assert QA >= 1u && QA <= 4u && QB >= 1u && QB <= 4u;
const_assert NT % BK == 0u && NT % BM == 0u && NT % BN == 0u;

var<workgroup> tile_a: array<vec4<f32>, BK * SA>;
var<workgroup> tile_b: array<vec4<f32>, BK * SB>;

// One step's loads of an invocation, in registers: quads a0 .. a{QA-1} of A and b0 ..
// b{QB-1} of B (the rest unused).
struct Staged {
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
    b0: vec4<f32>,
    b1: vec4<f32>,
    b2: vec4<f32>,
    b3: vec4<f32>,
}

// Slab coordinates (m or n, k) of load c of quad j: laid along k, or along a side `run` wide.
fn slab_at(tid: u32, j: u32, c: u32, along_k: bool, run: u32) -> vec2<u32> {
    let l = tid + (4u * j + c) * NT;
    if (along_k) {
        return vec2<u32>(l / BK, l % BK);
    }
    return vec2<u32>(l % run, l / run);
}

fn put_a(tid: u32, j: u32, along_k: bool, v: vec4<f32>) {
    for (var c = 0u; c < 4u; c = c + 1u) {
        let at = slab_at(tid, j, c, along_k, BM);
        tile_a[at.y * SA + at.x / 4u][at.x % 4u] = v[c];
    }
}

fn put_b(tid: u32, j: u32, along_k: bool, v: vec4<f32>) {
    for (var c = 0u; c < 4u; c = c + 1u) {
        let at = slab_at(tid, j, c, along_k, BN);
        tile_b[at.y * SB + at.x / 4u][at.x % 4u] = v[c];
    }
}

// The staged loads into the slabs (call between barriers).
fn stash(st: Staged, tid: u32, a_along_k: bool, b_along_k: bool) {
    put_a(tid, 0u, a_along_k, st.a0);
    if (QA > 1u) {
        put_a(tid, 1u, a_along_k, st.a1);
    }
    if (QA > 2u) {
        put_a(tid, 2u, a_along_k, st.a2);
    }
    if (QA > 3u) {
        put_a(tid, 3u, a_along_k, st.a3);
    }
    put_b(tid, 0u, b_along_k, st.b0);
    if (QB > 1u) {
        put_b(tid, 1u, b_along_k, st.b1);
    }
    if (QB > 2u) {
        put_b(tid, 2u, b_along_k, st.b2);
    }
    if (QB > 3u) {
        put_b(tid, 3u, b_along_k, st.b3);
    }
}

// A 4 × 4 block of accumulators, row i a vec4 over 4 adjacent columns; struct members, not an
// array, so that no compiler puts them in addressable memory.
struct Block {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
}

// c{i}{j}: rows 4 (ty + i WG_Y) + 0..3, columns 4 (tx + j WG_X) + 0..3. c01 with TN = 8, c10
// with TM = 8, c11 with both; the unused ones are dead code.
struct Sums {
    c00: Block,
    c01: Block,
    c10: Block,
    c11: Block,
}

fn outer_add(acc: Block, a: vec4<f32>, b: vec4<f32>) -> Block {
    return Block(acc.r0 + a.x * b, acc.r1 + a.y * b, acc.r2 + a.z * b, acc.r3 + a.w * b);
}

// acc += the slabs' product for this invocation's outputs.
fn slab_products(acc: Sums, tx: u32, ty: u32) -> Sums {
    var s = acc;
    for (var kk = 0u; kk < BK; kk = kk + 1u) {
        let a0 = tile_a[kk * SA + ty];
        let b0 = tile_b[kk * SB + tx];
        s.c00 = outer_add(s.c00, a0, b0);
        if (TN == 8u) {
            let b1 = tile_b[kk * SB + tx + WG_X];
            s.c01 = outer_add(s.c01, a0, b1);
            if (TM == 8u) {
                let a1 = tile_a[kk * SA + ty + WG_Y];
                s.c10 = outer_add(s.c10, a1, b0);
                s.c11 = outer_add(s.c11, a1, b1);
            }
        } else if (TM == 8u) {
            let a1 = tile_a[kk * SA + ty + WG_Y];
            s.c10 = outer_add(s.c10, a1, b0);
        }
    }
    return s;
}

// Row `row` (0..3) of block c{i}{j}: the sums for columns 4 (tx + j WG_X) + 0..3.
fn sums_row(s: Sums, i: u32, j: u32, row: u32) -> vec4<f32> {
    var b = s.c00;
    if (i == 1u && j == 1u) {
        b = s.c11;
    } else if (i == 1u) {
        b = s.c10;
    } else if (j == 1u) {
        b = s.c01;
    }
    var out = b.r0;
    switch (row) {
        case 1u: { out = b.r1; }
        case 2u: { out = b.r2; }
        case 3u: { out = b.r3; }
        default: {}
    }
    return out;
}

// Walking a patch's inputs k = (dr · patch + dc) · channels + ch in steps, without a division
// per element: the image offset of input k from the patch's corner is row + rem, with
// rem = k mod (patch · channels) (a patch row is contiguous in the image) and
// row = dr · cols · channels.
struct PatchWalk {
    k: u32,
    rem: u32,
    row: u32,
}

fn walk_from(k: u32) -> PatchWalk {
    let run = dims.patch_side * dims.channels;
    return PatchWalk(k, k % run, k / run * dims.cols * dims.channels);
}

fn walk_on(w: PatchWalk, by: u32) -> PatchWalk {
    let run = dims.patch_side * dims.channels;
    let rem = w.rem + by;
    return PatchWalk(w.k + by, rem % run, w.row + rem / run * dims.cols * dims.channels);
}

// The visible index of position q's corner: pixel_of(q, k) = corner_of(q) + the walk's offset.
fn corner_of(q: u32) -> u32 {
    let pr = q / dims.positions_cols;
    let pc = q % dims.positions_cols;
    return (pr * dims.stride * dims.cols + pc * dims.stride) * dims.channels;
}

// gemm.wgsl: tiled matrix product with a fused epilogue, for every product of an RBM layer.
//
//   C = alpha · op(A) · op(B)  [+ C if ACCUMULATE]  [+ bias per column]  [then sigmoid]
//   S = (uniform(index_base + r·n + j) < C[r, j]) ? 1 : 0            [if SAMPLE]
//
// op(A) is m × k: A stored m × k (row stride lda), or with A_TRANS stored k × m (op(A) = Aᵀ).
// op(B) is k × n: B stored k × n (row stride ldb), or with B_TRANS stored n × k (op(B) = Bᵀ).
// C and S are m × n with row strides ldc and lds. All matrices are row-major f32, except A:
// - A_U8: A holds bytes packed 4 per u32 (little-endian), value = byte / 255 (common.wgsl's
//   byte_to_unit), strides and offsets counted in bytes (the first layer's pixels stay u8 on
//   the device);
// - A_GATHER: stored row s of A is the physical row order[order_offset + slot.row_shift + s]
//   (the shuffled batch: the data never moves; the order buffer holds u32 case indices).
// The RBM's products: hidden = v·W (NN), visible = h·Wᵀ (B_TRANS), gradient += alpha·vᵀ·h
// (A_TRANS + ACCUMULATE), or both CD terms at once with PAIRED (below). CPU reference:
// CpuBackend::{visible_to_hidden, hidden_to_visible, accumulate_outer, bernoulli}; the samples
// use the Philox stream of shaders/philox.wgsl.
//
// PAIRED: two operand pairs, op(A) = [A | A2], op(B) = [B ; B2]:
//   C = alpha · (A·B) + alpha2 · (A2·B2)   (k_split and k2 deep)
// A2 lives in the `order` binding (f32 bits, element offset order_offset, stride lda) and B2
// in the `bias` binding (element offset bias_offset, stride ldb), so a CD batch's gradient
// v0ᵀh0/rows − vkᵀhk/chains is one product of depth rows + chains over its own buffers, not
// two dispatches. The k axis walked is [0, k1p) for the first pair (k1p = k_split rounded up
// to BK, zero past k_split) then [k1p, k1p + k2) for the second (params.k = k1p + k2), so each
// k step reads one pair only: a branch that is uniform per step (picking the pair per element
// made the 4096 × 11008 gradient of depth 384 take 1.8 ms on an H100, against 1.5). alpha and alpha2 scale the loads
// (the epilogue's alpha is then 1); PAIRED excludes BIAS, A_U8 and A_GATHER (their bindings
// hold the second pair).
//
// src/gpu/shader.rs appends the Philox snippet and common.wgsl (byte_to_unit, the epilogue's
// sigmoid_clamped) and prepends compile-time constants (this file is not standalone):
//   BM, BN, BK     tile of C per workgroup (BM × BN) and depth of one k step
//   TM, TN         outputs per invocation (TM × TN, each 4 or 8); WG_X = BN/TN, WG_Y = BM/TM
//   A_TRANS, A_U8, A_GATHER, B_TRANS, PAIRED  operand layouts (bool)
//   A_STRIDE, B_STRIDE  row strides in vec4 of a_tile and b_tile (BM/4 or BN/4, plus one of
//                  padding where the slab is stored along k, against bank conflicts)
//   UPDATE         the CD weight update as the epilogue (gemm_update.wgsl, appended with it)
//   VEC            slab loads of whole vec4 (gemm_operands_vec4.wgsl prepended; else
//                  gemm_operands_scalar.wgsl): aligned f32 operands only, see that file
// Outputs (C, samples, partials) are read and written a quad of 4 columns at a time: one vec4
// per access where they are aligned (gemm_outputs_vec4.wgsl prepended, else
// gemm_outputs_scalar.wgsl; the host picks, see variant.rs::vec4_outputs).
// Runtime options (flags): ACCUMULATE, BIAS, SIGMOID, SAMPLE, so one pipeline per layout
// serves every epilogue.
//
// Tiling: each workgroup owns a BM × BN tile of C and walks k in steps of BK. Per step the
// invocations copy a BM × BK slab of op(A) and a BK × BN slab of op(B) into workgroup memory
// (k-major, as vec4 along m and n); the next step's global loads are issued into registers
// before the current step's arithmetic (register double buffering). Invocation (tx, ty) owns
// TM/4 groups of 4 rows (4·(ty + g·WG_Y) + 0..3) and TN/4 groups of 4 columns
// (4·(tx + g·WG_X) + 0..3): every workgroup-memory read is a vec4, reads of B by neighbouring
// invocations are contiguous (no bank conflicts), reads of A are broadcasts, and each
// invocation's 4 adjacent columns share one Philox block when sampling.
// Split k: with splits > 1, workgroup g computes tile g % tiles over k range
// [s·k_chunk, (s + 1)·k_chunk), s = g / tiles, and stores its raw sums in `partials`; the
// `finish` entry point then adds the splits in order and applies the epilogue. Small outputs
// with long k (a 100 × 500 batch product with k = 784) get enough workgroups that way.
// Grid: workgroups are numbered g = (wid.z · nwg.y + wid.y) · nwg.x + wid.x, tiles row-major
// over tile rows × tile columns, so any count fits in the 65,535-per-dimension limit.
// Edges: loads outside the matrices read 0 and stores outside them are skipped.

const NT: u32 = WG_X * WG_Y;
const LOADS_A: u32 = BM * BK / NT;
const LOADS_B: u32 = BN * BK / NT;
// Loads per invocation and k step in quads of 4 (registers next_a0/1, next_b0/1).
const QA: u32 = LOADS_A / 4u;
const QB: u32 = LOADS_B / 4u;
const_assert LOADS_A == 4u || LOADS_A == 8u;
const_assert LOADS_B == 4u || LOADS_B == 8u;
const_assert BK == 8u || BK == 16u; // slab_products writes out 8 or 16 steps
// One slab of A and of B in workgroup memory (SLABS of each: 2 with DOUBLE).
const A_SLAB: u32 = BK * A_STRIDE;
const B_SLAB: u32 = BK * B_STRIDE;

const FLAG_ACCUMULATE: u32 = 1u;
const FLAG_BIAS: u32 = 2u;
const FLAG_SIGMOID: u32 = 4u;
const FLAG_SAMPLE: u32 = 8u;

struct Params {
    m: u32,
    n: u32,
    k: u32,
    tiles_n: u32,
    tiles_total: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    a_offset: u32,
    b_offset: u32,
    c_offset: u32,
    bias_offset: u32,
    order_offset: u32,
    sample_offset: u32,
    lds: u32,
    flags: u32,
    alpha: f32,
    purpose: u32,
    key: vec2<u32>,
    step: vec2<u32>,
    index_base: vec2<u32>,
    splits: u32,
    k_chunk: u32,
    k_split: u32, // PAIRED: depth of the first pair
    alpha2: f32,  // PAIRED: scale of the second pair
    half_tasks: u32, // UPDATE: leading half-height tasks (see main)
    group_rows: u32, // tile rows walked together, column by column (see main); 1: row-major
}

// Per-call values that a trainer changes every batch without new bind groups: one 256-byte
// slot of a table, picked with a dynamic offset. Added to the Params' base values.
struct Slot {
    step: vec2<u32>,
    row_shift: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> slot: Slot;
// Bindings 2 (a_data), 3 (b_data), 5 (bias) and 7 (order) are declared by the operand file
// prepended to this one, and read only through its accessors (a_word, b_elem, bias_elem,
// order_word, and a_vec, b_vec, a2_vec, b2_vec for whole vec4); bindings 4 (c_data),
// 6 (samples) and 8 (partials: splits × m × n, packed) by the output file, likewise, a quad
// of 4 columns at a time (load_c, store_c, store_samples, load_partial, store_partial).

var<workgroup> a_tile: array<vec4<f32>, SLABS * A_SLAB>;
var<workgroup> b_tile: array<vec4<f32>, SLABS * B_SLAB>;

// Element (stored_row, col) of A as stored, gathered and converted.
fn a_at(stored_row: u32, col: u32) -> f32 {
    var row = stored_row;
    if (A_GATHER) {
        row = order_word(params.order_offset + slot.row_shift + stored_row);
    }
    let at = params.a_offset + row * params.lda + col;
    if (A_U8) {
        return byte_to_unit((a_word(at >> 2u) >> ((at & 3u) * 8u)) & 0xFFu);
    }
    return bitcast<f32>(a_word(at));
}

// Loading one k step's slabs, op(A)[m0 .. m0 + BM, k0 .. k0 + BK] and
// op(B)[k0 .. k0 + BK, n0 .. n0 + BN], zero outside the matrices (and beyond k_end): load
// l = tid + s·NT of an invocation is slab element (row, k) chosen so that neighbouring
// invocations read neighbouring addresses of the stored matrix. Loads are fetched four at a
// time into a vec4 register (quad q: loads 4q .. 4q + 3) during the previous step's
// arithmetic, then stashed into workgroup memory (k-major, vec4 along m and n).
fn a_slot(l: u32) -> vec2<u32> { // (mm, kk)
    if (A_TRANS) {
        return vec2<u32>(l % BM, l / BM); // along a stored row of Aᵀ's storage
    }
    return vec2<u32>(l / BK, l % BK); // along a stored row of A
}

fn b_slot(l: u32) -> vec2<u32> { // (nn, kk)
    if (B_TRANS) {
        return vec2<u32>(l / BK, l % BK);
    }
    return vec2<u32>(l % BN, l / BN);
}

// One k step's operand range: (k0, k_end) in the coordinates of the pair it reads, and 1 for
// the second pair (PAIRED), else 0.
fn pair_range(k0: u32, k_end: u32) -> vec3<u32> {
    if (!PAIRED) {
        return vec3<u32>(k0, k_end, 0u);
    }
    let k1p = (params.k_split + BK - 1u) / BK * BK;
    if (k0 >= k1p) {
        return vec3<u32>(k0 - k1p, k_end - k1p, 1u);
    }
    return vec3<u32>(k0, min(k_end, params.k_split), 0u);
}

// `checked` false (a constant after inlining): the tile lies inside the matrices (INTERIOR).
fn load_a(m0: u32, k0: u32, k_end: u32, l: u32, checked: bool) -> f32 {
    let at = a_slot(l);
    let i = m0 + at.x;
    let j = k0 + at.y;
    if (checked && (i >= params.m || j >= k_end)) {
        return 0.0;
    }
    if (A_TRANS) {
        return a_at(j, i);
    }
    return a_at(i, j);
}

// PAIRED: element of the second pair's A2 (stored like A, in the `order` binding).
fn load_a2(m0: u32, k0: u32, k_end: u32, l: u32) -> f32 {
    let at = a_slot(l);
    let i = m0 + at.x;
    let j = k0 + at.y;
    if (i >= params.m || j >= k_end) {
        return 0.0;
    }
    var e = i * params.lda + j;
    if (A_TRANS) {
        e = j * params.lda + i;
    }
    return bitcast<f32>(order_word(params.order_offset + e));
}

fn load_b(n0: u32, k0: u32, k_end: u32, l: u32, checked: bool) -> f32 {
    let at = b_slot(l);
    let j = n0 + at.x;
    let i = k0 + at.y;
    if (checked && (j >= params.n || i >= k_end)) {
        return 0.0;
    }
    if (B_TRANS) {
        return b_elem(params.b_offset + j * params.ldb + i);
    }
    return b_elem(params.b_offset + i * params.ldb + j);
}

// PAIRED: element of the second pair's B2 (stored like B, in the `bias` binding).
fn load_b2(n0: u32, k0: u32, k_end: u32, l: u32) -> f32 {
    let at = b_slot(l);
    let j = n0 + at.x;
    let i = k0 + at.y;
    if (j >= params.n || i >= k_end) {
        return 0.0;
    }
    if (B_TRANS) {
        return bias_elem(params.bias_offset + j * params.ldb + i);
    }
    return bias_elem(params.bias_offset + i * params.ldb + j);
}

// VEC: register q of an invocation holds one vec4 of the stored matrix, slab vector
// v = tid + q·NT, 4 elements along the stored row (k for A, n for B; m for A_TRANS, k for
// B_TRANS). The alignment VEC requires puts each vector wholly inside or wholly outside.
const A_RUN: u32 = select(BK, BM, A_TRANS); // slab elements along A's stored rows
const B_RUN: u32 = select(BN, BK, B_TRANS);

fn a_vec_slot(v: u32) -> vec2<u32> { // (mm, kk) of the vector's first element
    let along = v % (A_RUN / 4u) * 4u;
    let across = v / (A_RUN / 4u);
    if (A_TRANS) {
        return vec2<u32>(along, across);
    }
    return vec2<u32>(across, along);
}

fn b_vec_slot(v: u32) -> vec2<u32> { // (nn, kk) of the vector's first element
    let along = v % (B_RUN / 4u) * 4u;
    let across = v / (B_RUN / 4u);
    if (B_TRANS) {
        return vec2<u32>(across, along);
    }
    return vec2<u32>(along, across);
}

fn fetch_a_vec(m0: u32, k0_all: u32, k_end_all: u32, tid: u32, q: u32, checked: bool) -> vec4<f32> {
    let at = a_vec_slot(tid + q * NT);
    let r = pair_range(k0_all, k_end_all);
    let i = m0 + at.x;
    let j = r.x + at.y;
    if (checked && (i >= params.m || j >= r.y)) {
        return vec4<f32>(0.0);
    }
    var e = i * params.lda + j;
    if (A_TRANS) {
        e = j * params.lda + i;
    }
    if (PAIRED && r.z != 0u) {
        return params.alpha2 * a2_vec(params.order_offset + e);
    }
    if (PAIRED) {
        return params.alpha * a_vec(params.a_offset + e);
    }
    return a_vec(params.a_offset + e);
}

fn fetch_b_vec(n0: u32, k0_all: u32, k_end_all: u32, tid: u32, q: u32, checked: bool) -> vec4<f32> {
    let at = b_vec_slot(tid + q * NT);
    let r = pair_range(k0_all, k_end_all);
    let j = n0 + at.x;
    let i = r.x + at.y;
    if (checked && (j >= params.n || i >= r.y)) {
        return vec4<f32>(0.0);
    }
    var e = i * params.ldb + j;
    if (B_TRANS) {
        e = j * params.ldb + i;
    }
    if (PAIRED && r.z != 0u) {
        return b2_vec(params.bias_offset + e);
    }
    return b_vec(params.b_offset + e);
}

// The pair is chosen once per k step (a uniform branch), so each path is the plain one.
fn fetch_a(m0: u32, k0_all: u32, k_end_all: u32, tid: u32, q: u32, checked: bool) -> vec4<f32> {
    if (VEC_A) {
        return fetch_a_vec(m0, k0_all, k_end_all, tid, q, checked);
    }
    let l = tid + 4u * q * NT;
    let r = pair_range(k0_all, k_end_all);
    let k0 = r.x;
    let k_end = r.y;
    if (PAIRED && r.z != 0u) {
        return params.alpha2 * vec4<f32>(load_a2(m0, k0, k_end, l), load_a2(m0, k0, k_end, l + NT), load_a2(m0, k0, k_end, l + 2u * NT), load_a2(m0, k0, k_end, l + 3u * NT));
    }
    let v = vec4<f32>(load_a(m0, k0, k_end, l, checked), load_a(m0, k0, k_end, l + NT, checked), load_a(m0, k0, k_end, l + 2u * NT, checked), load_a(m0, k0, k_end, l + 3u * NT, checked));
    if (PAIRED) {
        return params.alpha * v;
    }
    return v;
}

fn fetch_b(n0: u32, k0_all: u32, k_end_all: u32, tid: u32, q: u32, checked: bool) -> vec4<f32> {
    if (VEC_B) {
        return fetch_b_vec(n0, k0_all, k_end_all, tid, q, checked);
    }
    let l = tid + 4u * q * NT;
    let r = pair_range(k0_all, k_end_all);
    let k0 = r.x;
    let k_end = r.y;
    if (PAIRED && r.z != 0u) {
        return vec4<f32>(load_b2(n0, k0, k_end, l), load_b2(n0, k0, k_end, l + NT), load_b2(n0, k0, k_end, l + 2u * NT), load_b2(n0, k0, k_end, l + 3u * NT));
    }
    return vec4<f32>(load_b(n0, k0, k_end, l, checked), load_b(n0, k0, k_end, l + NT, checked), load_b(n0, k0, k_end, l + 2u * NT, checked), load_b(n0, k0, k_end, l + 3u * NT, checked));
}

fn put_a(base: u32, l: u32, value: f32) {
    let at = a_slot(l);
    a_tile[base + at.y * A_STRIDE + at.x / 4u][at.x % 4u] = value;
}

fn put_b(base: u32, l: u32, value: f32) {
    let at = b_slot(l);
    b_tile[base + at.y * B_STRIDE + at.x / 4u][at.x % 4u] = value;
}

// Quad q of an invocation's loads into slab `slab` of workgroup memory.
fn stash_a(slab: u32, tid: u32, q: u32, v: vec4<f32>) {
    let base = slab * A_SLAB;
    if (VEC_A) {
        let at = a_vec_slot(tid + q * NT);
        if (A_TRANS) {
            a_tile[base + at.y * A_STRIDE + at.x / 4u] = v; // 4 rows at one k: one vec4 slot
        } else {
            for (var c = 0u; c < 4u; c = c + 1u) {
                a_tile[base + (at.y + c) * A_STRIDE + at.x / 4u][at.x % 4u] = v[c];
            }
        }
        return;
    }
    let l = tid + 4u * q * NT;
    put_a(base, l, v.x);
    put_a(base, l + NT, v.y);
    put_a(base, l + 2u * NT, v.z);
    put_a(base, l + 3u * NT, v.w);
}

fn stash_b(slab: u32, tid: u32, q: u32, v: vec4<f32>) {
    let base = slab * B_SLAB;
    if (VEC_B) {
        let at = b_vec_slot(tid + q * NT);
        if (B_TRANS) {
            for (var c = 0u; c < 4u; c = c + 1u) {
                b_tile[base + (at.y + c) * B_STRIDE + at.x / 4u][at.x % 4u] = v[c];
            }
        } else {
            b_tile[base + at.y * B_STRIDE + at.x / 4u] = v; // 4 columns at one k: one vec4 slot
        }
        return;
    }
    let l = tid + 4u * q * NT;
    put_b(base, l, v.x);
    put_b(base, l + NT, v.y);
    put_b(base, l + 2u * NT, v.z);
    put_b(base, l + 3u * NT, v.w);
}

// A 4 × 4 block of accumulators: row i of the block is a vec4 over 4 adjacent columns. Kept
// as a struct of vectors, never an array, so that no compiler is tempted to put the
// accumulators in addressable (local) memory.
struct Block {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
}

// acc += a ⊗ b: a holds 4 rows' values at one k, b 4 columns' values at the same k.
fn outer_add(acc: Block, a: vec4<f32>, b: vec4<f32>) -> Block {
    return Block(acc.r0 + a.x * b, acc.r1 + a.y * b, acc.r2 + a.z * b, acc.r3 + a.w * b);
}

fn bias_get(at: u32, lane: u32, lanes: u32) -> f32 {
    if (lane < lanes) {
        return bias_elem(at + lane);
    }
    return 0.0;
}

// The epilogue for C[r, c0 .. c0 + 4] (clipped to the matrix) from the accumulated products.
fn finish_row(acc: vec4<f32>, r: u32, c0: u32, step: vec2<u32>) {
    if (r >= params.m || c0 >= params.n) {
        return;
    }
    let flags = params.flags;
    let lanes = min(4u, params.n - c0);
    let c_at = params.c_offset + r * params.ldc + c0;
    var v = acc;
    if (!PAIRED) {
        v = acc * params.alpha; // PAIRED scaled its loads instead
    }
    if ((flags & FLAG_ACCUMULATE) != 0u) {
        v = v + load_c(c_at, lanes);
    }
    if ((flags & FLAG_BIAS) != 0u) {
        let b_at = params.bias_offset + c0;
        v = v + vec4<f32>(bias_get(b_at, 0u, lanes), bias_get(b_at, 1u, lanes), bias_get(b_at, 2u, lanes), bias_get(b_at, 3u, lanes));
    }
    if ((flags & FLAG_SIGMOID) != 0u) {
        v = sigmoid_clamped(v);
    }
    store_c(c_at, lanes, v);
    if (SAMPLING && (flags & FLAG_SAMPLE) != 0u) {
        // Stream indices e .. e + 3, e = index_base + r·n + c0: lanes (e & 3) .. 3 of block
        // e >> 2 and, when e is not a multiple of 4, the first lanes of the next block.
        let e = add_u64(params.index_base, vec2<u32>(r * params.n + c0, 0u));
        let group = vec2<u32>((e.x >> 2u) | (e.y << 30u), e.y >> 2u);
        let first = e.x & 3u;
        let block0 = philox_block(params.key, step.x, step.y, params.purpose, group.x, group.y);
        var bits = block0;
        if (first != 0u && first + lanes > 4u) {
            let next = add_u64(group, vec2<u32>(1u, 0u));
            let block1 = philox_block(params.key, step.x, step.y, params.purpose, next.x, next.y);
            switch (first) {
                case 1u: { bits = vec4<u32>(block0.yzw, block1.x); }
                case 2u: { bits = vec4<u32>(block0.zw, block1.xy); }
                default: { bits = vec4<u32>(block0.w, block1.xyz); }
            }
        } else {
            switch (first) {
                case 1u: { bits = vec4<u32>(block0.yzw, 0u); }
                case 2u: { bits = vec4<u32>(block0.zw, 0u, 0u); }
                case 3u: { bits = vec4<u32>(block0.w, 0u, 0u, 0u); }
                default: {}
            }
        }
        let u = vec4<f32>(bits >> vec4<u32>(8u)) * (1.0 / 16777216.0);
        let sample = select(vec4<f32>(0.0), vec4<f32>(1.0), u < v);
        let s_at = params.sample_offset + r * params.lds + c0;
        store_samples(s_at, lanes, sample);
    }
}

fn finish_block(acc: Block, r0: u32, c0: u32, step: vec2<u32>) {
    finish_row(acc.r0, r0, c0, step);
    finish_row(acc.r1, r0 + 1u, c0, step);
    finish_row(acc.r2, r0 + 2u, c0, step);
    finish_row(acc.r3, r0 + 3u, c0, step);
}

// A split-k workgroup's raw sums for C[r0 .. r0 + 4, c0 .. c0 + 4] into its slice of partials.
fn store_partial_block(acc: Block, split: u32, r0: u32, c0: u32) {
    let mn = params.m * params.n;
    let lanes = min(4u, params.n - min(c0, params.n));
    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = r0 + i;
        if (r >= params.m || lanes == 0u) {
            continue;
        }
        var v = acc.r0;
        switch (i) {
            case 1u: { v = acc.r1; }
            case 2u: { v = acc.r2; }
            case 3u: { v = acc.r3; }
            default: {}
        }
        store_partial(split * mn + r * params.n + c0, lanes, v);
    }
}

// The accumulator blocks of an invocation: c{i}{j} holds rows 4·(ty + i·WG_Y) + 0..3 and
// columns 4·(tx + j·WG_X) + 0..3 of the tile. c00 always; c01 with TN ≥ 8, c02 and c03 with
// TN = 16, c1j with TM = 8. The unused ones are dead code for the compiler.
struct Sums {
    c00: Block,
    c01: Block,
    c02: Block,
    c03: Block,
    c10: Block,
    c11: Block,
    c12: Block,
    c13: Block,
}

// One k index's products: acc += op(A)[rows, kk] ⊗ op(B)[kk, columns], with a_at and b_at the
// workgroup-memory indices of this invocation's first vec4 of A and of B at that kk. Every
// read is a vec4: A's are broadcasts, B's contiguous across tx.
fn kk_products(acc: Sums, a_at: u32, b_at: u32, whole: bool) -> Sums {
    var c00 = acc.c00;
    var c01 = acc.c01;
    var c02 = acc.c02;
    var c03 = acc.c03;
    var c10 = acc.c10;
    var c11 = acc.c11;
    var c12 = acc.c12;
    var c13 = acc.c13;
    let a0 = a_tile[a_at];
    let b0 = b_tile[b_at];
    c00 = outer_add(c00, a0, b0);
    if (TN >= 8u) {
        let b1 = b_tile[b_at + WG_X];
        c01 = outer_add(c01, a0, b1);
        if (TM == 8u && whole) {
            let a1 = a_tile[a_at + WG_Y];
            c11 = outer_add(c11, a1, b1);
        }
    }
    if (TN == 16u) {
        let b2 = b_tile[b_at + 2u * WG_X];
        let b3 = b_tile[b_at + 3u * WG_X];
        c02 = outer_add(c02, a0, b2);
        c03 = outer_add(c03, a0, b3);
        if (TM == 8u && whole) {
            let a1 = a_tile[a_at + WG_Y];
            c12 = outer_add(c12, a1, b2);
            c13 = outer_add(c13, a1, b3);
        }
    }
    if (TM == 8u && whole) {
        let a1 = a_tile[a_at + WG_Y];
        c10 = outer_add(c10, a1, b0);
    }
    return Sums(c00, c01, c02, c03, c10, c11, c12, c13);
}

// One slab's products: acc += op(A)[rows, slab] · op(B)[slab, columns] from slab `slab` of
// workgroup memory. UNROLL writes the BK steps out: NVIDIA's Vulkan compiler keeps the loop
// (an H100's SASS showed it rolled, with address arithmetic and register moves in every
// step and no load of the next step's operands during this one's FMAs).
fn slab_products(acc: Sums, slab: u32, tx: u32, ty: u32, whole: bool) -> Sums {
    let a_at = slab * A_SLAB + ty;
    let b_at = slab * B_SLAB + tx;
    var s = acc;
    if (UNROLL) {
        s = kk_products(s, a_at, b_at, whole);
        s = kk_products(s, a_at + A_STRIDE, b_at + B_STRIDE, whole);
        s = kk_products(s, a_at + 2u * A_STRIDE, b_at + 2u * B_STRIDE, whole);
        s = kk_products(s, a_at + 3u * A_STRIDE, b_at + 3u * B_STRIDE, whole);
        s = kk_products(s, a_at + 4u * A_STRIDE, b_at + 4u * B_STRIDE, whole);
        s = kk_products(s, a_at + 5u * A_STRIDE, b_at + 5u * B_STRIDE, whole);
        s = kk_products(s, a_at + 6u * A_STRIDE, b_at + 6u * B_STRIDE, whole);
        s = kk_products(s, a_at + 7u * A_STRIDE, b_at + 7u * B_STRIDE, whole);
        if (BK == 16u) {
            s = kk_products(s, a_at + 8u * A_STRIDE, b_at + 8u * B_STRIDE, whole);
            s = kk_products(s, a_at + 9u * A_STRIDE, b_at + 9u * B_STRIDE, whole);
            s = kk_products(s, a_at + 10u * A_STRIDE, b_at + 10u * B_STRIDE, whole);
            s = kk_products(s, a_at + 11u * A_STRIDE, b_at + 11u * B_STRIDE, whole);
            s = kk_products(s, a_at + 12u * A_STRIDE, b_at + 12u * B_STRIDE, whole);
            s = kk_products(s, a_at + 13u * A_STRIDE, b_at + 13u * B_STRIDE, whole);
            s = kk_products(s, a_at + 14u * A_STRIDE, b_at + 14u * B_STRIDE, whole);
            s = kk_products(s, a_at + 15u * A_STRIDE, b_at + 15u * B_STRIDE, whole);
        }
        return s;
    }
    for (var kk = 0u; kk < BK; kk = kk + 1u) {
        s = kk_products(s, a_at + kk * A_STRIDE, b_at + kk * B_STRIDE, whole);
    }
    return s;
}

// The k loop of a workgroup's tile, rows m0.. and columns n0.., over [k_begin, k_end).
// `whole` false: only the tile's first BM/2 rows (the c1j stay zero). Called with a
// constant for `whole`, so each call compiles to its own loop without a branch inside (a
// uniform branch in the loop cost the fused gradient 6% on an H100).
fn k_loop(m0: u32, n0: u32, k_begin: u32, k_end: u32, tid: u32, tx: u32, ty: u32, whole: bool, checked: bool) -> Sums {
    let zero = Block(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var acc = Sums(zero, zero, zero, zero, zero, zero, zero, zero);

    // Register double buffering (PREFETCH): the next step's global loads are issued before this
    // step's arithmetic. Every tiling has 4 or 8 loads of A and of B per invocation and step.
    var next_a0 = vec4<f32>(0.0);
    var next_a1 = vec4<f32>(0.0);
    var next_b0 = vec4<f32>(0.0);
    var next_b1 = vec4<f32>(0.0);
    if (PREFETCH || DOUBLE) {
        next_a0 = fetch_a(m0, k_begin, k_end, tid, 0u, checked);
        if (QA == 2u) {
            next_a1 = fetch_a(m0, k_begin, k_end, tid, 1u, checked);
        }
        next_b0 = fetch_b(n0, k_begin, k_end, tid, 0u, checked);
        if (QB == 2u) {
            next_b1 = fetch_b(n0, k_begin, k_end, tid, 1u, checked);
        }
    }
    if (DOUBLE) {
        // Two slabs: step s computes from slab s % 2 while it stores step s + 1's loads into
        // the other, so one barrier per step orders both (the slab stored in step s was last
        // read in step s − 1, before that step's barrier).
        stash_a(0u, tid, 0u, next_a0);
        if (QA == 2u) {
            stash_a(0u, tid, 1u, next_a1);
        }
        stash_b(0u, tid, 0u, next_b0);
        if (QB == 2u) {
            stash_b(0u, tid, 1u, next_b1);
        }
        workgroupBarrier();
        var slab = 0u;
        for (var k0 = k_begin; k0 < k_end; k0 = k0 + BK) {
            let k_next = k0 + BK;
            let more = k_next < k_end;
            if (more) {
                next_a0 = fetch_a(m0, k_next, k_end, tid, 0u, checked);
                if (QA == 2u) {
                    next_a1 = fetch_a(m0, k_next, k_end, tid, 1u, checked);
                }
                next_b0 = fetch_b(n0, k_next, k_end, tid, 0u, checked);
                if (QB == 2u) {
                    next_b1 = fetch_b(n0, k_next, k_end, tid, 1u, checked);
                }
            }
            acc = slab_products(acc, slab, tx, ty, whole);
            if (more) {
                stash_a(1u - slab, tid, 0u, next_a0);
                if (QA == 2u) {
                    stash_a(1u - slab, tid, 1u, next_a1);
                }
                stash_b(1u - slab, tid, 0u, next_b0);
                if (QB == 2u) {
                    stash_b(1u - slab, tid, 1u, next_b1);
                }
            }
            workgroupBarrier();
            slab = 1u - slab;
        }
        return acc;
    }
    for (var k0 = k_begin; k0 < k_end; k0 = k0 + BK) {
        if (!PREFETCH) {
            // The loads right before their stores: fewer live registers, the latency exposed.
            next_a0 = fetch_a(m0, k0, k_end, tid, 0u, checked);
            if (QA == 2u) {
                next_a1 = fetch_a(m0, k0, k_end, tid, 1u, checked);
            }
            next_b0 = fetch_b(n0, k0, k_end, tid, 0u, checked);
            if (QB == 2u) {
                next_b1 = fetch_b(n0, k0, k_end, tid, 1u, checked);
            }
        }
        stash_a(0u, tid, 0u, next_a0);
        if (QA == 2u) {
            stash_a(0u, tid, 1u, next_a1);
        }
        stash_b(0u, tid, 0u, next_b0);
        if (QB == 2u) {
            stash_b(0u, tid, 1u, next_b1);
        }
        workgroupBarrier();
        let k_next = k0 + BK;
        if (PREFETCH && k_next < k_end) {
            next_a0 = fetch_a(m0, k_next, k_end, tid, 0u, checked);
            if (QA == 2u) {
                next_a1 = fetch_a(m0, k_next, k_end, tid, 1u, checked);
            }
            next_b0 = fetch_b(n0, k_next, k_end, tid, 0u, checked);
            if (QB == 2u) {
                next_b1 = fetch_b(n0, k_next, k_end, tid, 1u, checked);
            }
        }
        acc = slab_products(acc, 0u, tx, ty, whole);
        workgroupBarrier();
    }
    return acc;
}

// Raw sums or the epilogue of block c{i}{j} (see Sums), by the split-k or the plain path.
fn finish_sums(s: Sums, split: u32, r0: u32, c0: u32, step: vec2<u32>) {
    let dr = 4u * WG_Y;
    let dc = 4u * WG_X;
    if (params.splits > 1u) {
        store_partial_block(s.c00, split, r0, c0);
        if (TN >= 8u) {
            store_partial_block(s.c01, split, r0, c0 + dc);
        }
        if (TN == 16u) {
            store_partial_block(s.c02, split, r0, c0 + 2u * dc);
            store_partial_block(s.c03, split, r0, c0 + 3u * dc);
        }
        if (TM == 8u) {
            store_partial_block(s.c10, split, r0 + dr, c0);
            if (TN >= 8u) {
                store_partial_block(s.c11, split, r0 + dr, c0 + dc);
            }
            if (TN == 16u) {
                store_partial_block(s.c12, split, r0 + dr, c0 + 2u * dc);
                store_partial_block(s.c13, split, r0 + dr, c0 + 3u * dc);
            }
        }
        return;
    }
    finish_block(s.c00, r0, c0, step);
    if (TN >= 8u) {
        finish_block(s.c01, r0, c0 + dc, step);
    }
    if (TN == 16u) {
        finish_block(s.c02, r0, c0 + 2u * dc, step);
        finish_block(s.c03, r0, c0 + 3u * dc, step);
    }
    if (TM == 8u) {
        finish_block(s.c10, r0 + dr, c0, step);
        if (TN >= 8u) {
            finish_block(s.c11, r0 + dr, c0 + dc, step);
        }
        if (TN == 16u) {
            finish_block(s.c12, r0 + dr, c0 + 2u * dc, step);
            finish_block(s.c13, r0 + dr, c0 + 3u * dc, step);
        }
    }
}

@compute @workgroup_size(WG_X, WG_Y)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    // Workgroup g computes tile g % tiles_total over the k range of split g / tiles_total.
    let g = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    if (g >= params.tiles_total * params.splits + params.half_tasks / 2u) {
        return;
    }
    var tile = g % params.tiles_total;
    var split = g / params.tiles_total;
    // UPDATE with h = half_tasks > 0 (never split): below 2h, even tasks are the upper and
    // lower halves (BM/2 rows: c00 and c01 only) of the first h/2 tiles and odd tasks whole
    // tiles; from 2h on, the remaining whole tiles in order. Consecutive workgroups tend to
    // share an SM, so each SM starts one half task beside one whole tile: its two slots then
    // run half a tile out of phase, and one's epilogue (memory traffic) meets the other's
    // k loop (arithmetic) instead of coinciding. On an H100 the 4096 × 11008 fused gradient
    // took 1.432–1.440 ms against 1.477 (all half tasks first: 1.450–1.458).
    var half = 0u; // 0: whole tile; 1: its upper half; 2: its lower half
    if (UPDATE && params.half_tasks > 0u) {
        split = 0u;
        let h = params.half_tasks;
        if (g >= 2u * h) {
            tile = g - h / 2u;
        } else if (g % 2u == 1u) {
            tile = h / 2u + g / 2u;
        } else {
            tile = g / 4u;
            half = 1u + (g / 2u) % 2u;
        }
    }
    // Tile order: with group_rows = G > 1, tiles are taken G tile rows at a time, column by
    // column within the band (Triton's GROUP_M), so that the workgroups running at once
    // share their rows of A and columns of B in L2; the last band may be narrower.
    var tile_row = tile / params.tiles_n;
    var tile_col = tile % params.tiles_n;
    if (params.group_rows > 1u) {
        let tiles_m = params.tiles_total / params.tiles_n;
        let band = params.group_rows * params.tiles_n;
        let first = tile / band * params.group_rows;
        let rows = min(params.group_rows, tiles_m - first);
        let within = tile % band;
        tile_row = first + within % rows;
        tile_col = within / rows;
    }
    let whole = half == 0u;
    let k_begin = split * params.k_chunk;
    let k_end = min(params.k, k_begin + params.k_chunk);
    let m0 = tile_row * BM + select(0u, BM / 2u, half == 2u);
    let n0 = tile_col * BN;
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * WG_X + tx;

    // INTERIOR: a tile wholly inside the matrices, over whole k steps, takes a k loop without
    // bounds checks (each call of k_loop compiles to its own loop).
    let inside = INTERIOR && m0 + BM <= params.m && n0 + BN <= params.n && (k_end - k_begin) % BK == 0u;
    var sums: Sums;
    if (UPDATE && !whole) {
        sums = k_loop(m0, n0, k_begin, k_end, tid, tx, ty, false, true);
    } else if (inside) {
        sums = k_loop(m0, n0, k_begin, k_end, tid, tx, ty, true, false);
    } else {
        sums = k_loop(m0, n0, k_begin, k_end, tid, tx, ty, true, true);
    }

    let r0 = m0 + 4u * ty;
    let c0 = n0 + 4u * tx;
    if (UPDATE) {
        finish_update(sums.c00, sums.c01, sums.c10, sums.c11, r0, c0, tid, g, whole);
        return;
    }
    finish_sums(sums, split, r0, c0, add_u64(params.step, slot.step));
}

// Split-k's second pass: invocation t sums the splits' partials of C[r, c0 .. c0 + 4] in split
// order (deterministic) and applies the epilogue.
@compute @workgroup_size(256)
fn finish(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let t = ((wid.z * nwg.y + wid.y) * nwg.x + wid.x) * 256u + local;
    let quads = (params.n + 3u) / 4u;
    if (t >= params.m * quads) {
        return;
    }
    let r = t / quads;
    let c0 = (t % quads) * 4u;
    let lanes = min(4u, params.n - c0);
    let mn = params.m * params.n;
    var acc = vec4<f32>(0.0);
    for (var split = 0u; split < params.splits; split = split + 1u) {
        let at = split * mn + r * params.n + c0;
        acc = acc + load_partial(at, lanes);
    }
    finish_row(acc, r, c0, add_u64(params.step, slot.step));
}

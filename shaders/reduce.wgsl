// reduce.wgsl: deterministic f32 reductions for the device-resident training loop and the
// evaluators. WGSL has no f64, so every sum is f32 in a fixed order (below) and the results
// are bit-reproducible on one device; they differ from the CPU's f64 sums by the f32
// rounding of the terms and of O(log n) tree levels: ~1e-7 to 1e-6 relative for sums of
// positive terms (squares, means), max exact.
//
// Shared bindings (each entry point uses the subset it names):
//   0 params (uniform ReduceParams), 1 src_a (read), 2 src_b (read), 3 src_c (read),
//   4 dst (rw). All f32 arrays.
//
// Two-pass scheme for long vectors: a partial_* pass, workgroup 256, G = min(ceil(n / 2048),
// 4096) workgroups, each owning `span` consecutive elements (span = ceil(n / G) rounded up to
// a multiple of 256, host-computed; thread t takes span·g + t + 256 k, k = 0, 1, .., summed
// in k order; then the fixed binary tree scratch[t] ⊕= scratch[t + s], s = 128 .. 1, of
// common.wgsl, appended by src/gpu/shader.rs with softplus) writes one value per workgroup to
// dst[g]; a finish_* pass (one workgroup; thread t takes items t, t + 256, .. in order, then
// the same tree) folds those partials into dst[slot].
//
// Entry points:
//   column_means        src_a rows × width → dst[c] = Σ_r a[r, c] / rows. Workgroup
//                       (8 columns, 32 row lanes), grid ceil(width / 8). Lane l sums rows
//                       [l·ch, l·ch + ch), ch = ceil(rows / 32), in four interleaved
//                       accumulators (row start + 4m + q into q; rows past the last full
//                       four into the first), combined as (a0 + a1) + (a2 + a3); the 32 lane
//                       sums then by the tree lane[l] += lane[l + s], s = 16 .. 1
//                       (common.wgsl's, with the workgroup's 8 columns).
//   partial_sum_sq_diff Σ (a[k] − b[k])² over k < n → dst[g].
//   partial_max_abs     max |a[k]| over k < n → dst[g].
//   finish_sum          Σ a[k], k < n → dst[slot] (flags bit 0: dst[slot] += instead of =).
//   finish_max          max a[k], k < n → dst[slot] (flags bit 0: max with dst[slot]).
//   free_energy         one workgroup per case r (case x + 65535·y when the grid is folded
//                       to (65535, y) past 65,535 cases), n = n_hidden, width = n_visible;
//                       thread t sums units t, t + 256, .. then the tree as above;
//                       src_a visible rows × nv, src_b hidden inputs
//                       x = v·W + c (rows × nh), src_c visible bias b (nv). flags bit 1:
//                       Gaussian visible units. dst[r] = visible term − Σ_j softplus(x_rj),
//                       visible term −Σ b·v (Bernoulli) or ½Σ (v − b)² (Gaussian); both
//                       terms tree-summed separately, then subtracted (as the CPU does).
//                       Sum the cases with finish_sum (src_a = these per-case values).

struct ReduceParams {
    n: u32,
    rows: u32,
    width: u32,
    flags: u32,
    slot: u32,
    span: u32,
    _pad0: u32,
    _pad1: u32,
}

const WG: u32 = 256u;
const COLS: u32 = 8u;
const LANES: u32 = 32u;
const ACCUMULATE: u32 = 1u;
const GAUSSIAN: u32 = 2u;

@group(0) @binding(0) var<uniform> params: ReduceParams;
@group(0) @binding(1) var<storage, read> src_a: array<f32>;
@group(0) @binding(2) var<storage, read> src_b: array<f32>;
@group(0) @binding(3) var<storage, read> src_c: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(8, 32)
fn column_means(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let col = wid.x * COLS + lid.x;
    let width = params.width;
    var a = vec4<f32>(0.0, 0.0, 0.0, 0.0);
    if (col < width) {
        let chunk = (params.rows + LANES - 1u) / LANES;
        let start = min(lid.y * chunk, params.rows);
        let end = min(start + chunk, params.rows);
        var r = start;
        for (; r + 4u <= end; r = r + 4u) {
            a = a + vec4<f32>(src_a[r * width + col], src_a[(r + 1u) * width + col], src_a[(r + 2u) * width + col], src_a[(r + 3u) * width + col]);
        }
        for (; r < end; r = r + 1u) {
            a.x = a.x + src_a[r * width + col];
        }
    }
    let total = workgroup_sum(lid.y * COLS + lid.x, COLS * LANES, COLS, (a.x + a.y) + (a.z + a.w));
    if (lid.y == 0u && col < width) {
        dst[col] = total / f32(params.rows);
    }
}

@compute @workgroup_size(256)
fn partial_sum_sq_diff(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = wid.x;
    let base = group * params.span;
    var s = 0.0f;
    for (var k = t; k < params.span; k = k + WG) {
        let e = base + k;
        if (e < params.n) {
            let d = src_a[e] - src_b[e];
            s = s + d * d;
        }
    }
    let total = workgroup_sum(t, WG, 1u, s);
    if (t == 0u) {
        dst[group] = total;
    }
}

@compute @workgroup_size(256)
fn partial_max_abs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let group = wid.x;
    let base = group * params.span;
    var m = 0.0f;
    for (var k = t; k < params.span; k = k + WG) {
        let e = base + k;
        if (e < params.n) {
            m = max(m, abs(src_a[e]));
        }
    }
    let total = workgroup_max(t, WG, 1u, m);
    if (t == 0u) {
        dst[group] = total;
    }
}

@compute @workgroup_size(256)
fn finish_sum(@builtin(local_invocation_index) t: u32) {
    var s = 0.0f;
    for (var k = t; k < params.n; k = k + WG) {
        s = s + src_a[k];
    }
    let total = workgroup_sum(t, WG, 1u, s);
    if (t == 0u) {
        if ((params.flags & ACCUMULATE) != 0u) {
            dst[params.slot] = dst[params.slot] + total;
        } else {
            dst[params.slot] = total;
        }
    }
}

@compute @workgroup_size(256)
fn finish_max(@builtin(local_invocation_index) t: u32) {
    var m = 0.0f;
    for (var k = t; k < params.n; k = k + WG) {
        m = max(m, src_a[k]);
    }
    let total = workgroup_max(t, WG, 1u, m);
    if (t == 0u) {
        if ((params.flags & ACCUMULATE) != 0u) {
            dst[params.slot] = max(dst[params.slot], total);
        } else {
            dst[params.slot] = total;
        }
    }
}

@compute @workgroup_size(256)
fn free_energy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let r = wid.x + wid.y * groups.x;
    let nv = params.width;
    let nh = params.n;
    let gaussian = (params.flags & GAUSSIAN) != 0u;
    var visible = 0.0f;
    var hidden = 0.0f;
    if (r < params.rows) {
        for (var i = t; i < nv; i = i + WG) {
            let v = src_a[r * nv + i];
            let b = src_c[i];
            if (gaussian) {
                visible = visible + 0.5f * (v - b) * (v - b);
            } else {
                visible = visible - b * v;
            }
        }
        for (var j = t; j < nh; j = j + WG) {
            hidden = hidden + softplus(src_b[r * nh + j]);
        }
    }
    let total = workgroup_sum2(t, WG, 1u, vec2<f32>(visible, hidden));
    if (t == 0u && r < params.rows) {
        dst[r] = total.x - total.y;
    }
}

// lbfgs.wgsl: the vector work of L-BFGS on the device (issue 17). The algorithm itself
// (src/autoencoder/lbfgs.rs, minFunc's L-BFGS and strong-Wolfe line search) runs on the host
// on scalars; src/gpu/lbfgs.rs records these kernels for it, so that the point, the gradient,
// the direction and the correction pairs never leave the device:
//
//   combine          out = a + c·b (flag HAS_A), or out = c·b        (x + t·d, y = g₊ − g, t·d, −g)
//   update           out = out + c·a, or out = c·out (flag SCALE); with flag REDUCE also the
//                    partial sums of b·out (the new out): one step of the two-loop recursion
//                    fused with the dot product of the next
//   reduce_partials  per workgroup: (Σ aᵢbᵢ, #non-finite aᵢ, Σ|aᵢ|, max|aᵢ|)
//   reduce_finish    one workgroup folds the partials and writes the results into scalars
//
// Buffers (all f32; one bind-group layout for every entry point, unused bindings get a dummy):
//   0 op        uniform Op (below), bound with a dynamic offset: one 256-byte entry per
//               distinct operation, written once and reused
//   1 a, 2 b    read: vectors of n values
//   3 out       rw: a vector of n values (never a or b)
//   4 scalars   rw: the scalars the kernels share with the host: ρₖ and αₖ of pair k, γ, β,
//               the host's constants (a trial's step t, −1, …) and the results read back. Op
//               names the slots; NONE (0xFFFFFFFF) is none
//   5 partials  rw: vec4 per workgroup of the last reduce_partials or update (REDUCE)
//
// A coefficient is c = ±(scalars[c_slot] − scalars[c_minus_slot]) (no subtraction where
// c_minus_slot is NONE; − with flag NEGATE): αᵢ, γ, αᵢ − β and the host's t come from the
// scalars buffer, so the two-loop recursion runs with no read-back.
//
// Workgroups (256 invocations): the elementwise and partial passes run G = min(⌈n / 2048⌉,
// 4096) workgroups (host-computed, src/gpu/reduce.rs's split); workgroup g owns elements
// [g·span, g·span + span) ∩ [0, n) (span a multiple of 256), invocation t takes
// g·span + t + 256i in order. reduce_finish is one workgroup: invocation t takes partials
// t, t + 256, … in order, then common.wgsl's tree.
//
// Precision and order: WGSL has no f64. The vectors are f32 (the device's θ already is), and
// every reduction is an f32 sum in an order fixed by n alone (sequential within an
// invocation, common.wgsl's tree within a workgroup, the partials in index order), so a run
// is bit-reproducible on one device. Against the host's f64 L-BFGS: each vector entry carries
// f32 rounding (relative 6e-8 per operation; x accumulates its steps in f32, so a step below
// x's ulp is lost), and a dot product of n terms is off by ~(log₂ 256 + n / (256·G) +
// log₂ G)·6e-8 relative to Σ|aᵢbᵢ| at worst (~1e-6 at n = 67M), far less in practice. A sum
// over non-finite entries is NaN (their count is kept from their bits: a compiler may assume
// floats are finite).

struct Op {
    n: u32,
    span: u32,
    groups: u32,
    flags: u32,
    c_slot: u32,
    c_minus_slot: u32,
    scale_slot: u32,
    dot_slot: u32,
    bad_slot: u32,
    l1_slot: u32,
    max_slot: u32,
    _pad: u32,
}

const WG: u32 = 256u;
const NONE: u32 = 0xFFFFFFFFu;
const HAS_A: u32 = 1u;
const NEGATE: u32 = 2u;
const SCALE: u32 = 4u;
const REDUCE: u32 = 8u;

@group(0) @binding(0) var<uniform> op: Op;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec4<f32>>;

// Exponent bits all ones: ±∞ or NaN.
fn non_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7F800000u) == 0x7F800000u;
}

// A quiet NaN, built at run time: Tint refuses a NaN const-expression (`bitcast<f32>` of a
// literal), which would fail the module's creation in a browser.
fn nan() -> f32 {
    var bits = 0x7FC00000u;
    return bitcast<f32>(bits);
}

fn coefficient() -> f32 {
    var c = scalars[op.c_slot];
    if (op.c_minus_slot != NONE) {
        c = c - scalars[op.c_minus_slot];
    }
    if ((op.flags & NEGATE) != 0u) {
        c = -c;
    }
    return c;
}

@compute @workgroup_size(256)
fn combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let c = coefficient();
    let base = wid.x * op.span;
    let has_a = (op.flags & HAS_A) != 0u;
    for (var k = t; k < op.span; k = k + WG) {
        let e = base + k;
        if (e < op.n) {
            // The host's order: a + (c·b).
            var v = c * b[e];
            if (has_a) {
                v = a[e] + v;
            }
            out[e] = v;
        }
    }
}

@compute @workgroup_size(256)
fn update(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let c = coefficient();
    let base = wid.x * op.span;
    let scale = (op.flags & SCALE) != 0u;
    let reduce = (op.flags & REDUCE) != 0u;
    var s = 0.0f;
    for (var k = t; k < op.span; k = k + WG) {
        let e = base + k;
        if (e < op.n) {
            var v: f32;
            if (scale) {
                v = c * out[e];
            } else {
                v = out[e] + c * a[e];
            }
            out[e] = v;
            if (reduce) {
                s = s + b[e] * v;
            }
        }
    }
    if (reduce) {
        let total = workgroup_sum(t, WG, 1u, s);
        if (t == 0u) {
            partials[wid.x] = vec4<f32>(total, 0.0f, 0.0f, 0.0f);
        }
    }
}

@compute @workgroup_size(256)
fn reduce_partials(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wid.x * op.span;
    var dot = 0.0f;
    var bad = 0.0f;
    var l1 = 0.0f;
    var largest = 0.0f;
    for (var k = t; k < op.span; k = k + WG) {
        let e = base + k;
        if (e < op.n) {
            let x = a[e];
            if (non_finite(x)) {
                bad = bad + 1.0f;
            } else {
                dot = dot + x * b[e];
                l1 = l1 + abs(x);
                largest = max(largest, abs(x));
            }
        }
    }
    let total = workgroup_sum_max(t, WG, 1u, vec4<f32>(dot, bad, l1, largest));
    if (t == 0u) {
        partials[wid.x] = total;
    }
}

@compute @workgroup_size(256)
fn reduce_finish(@builtin(local_invocation_index) t: u32) {
    var acc = vec4<f32>(0.0f, 0.0f, 0.0f, 0.0f);
    for (var k = t; k < op.groups; k = k + WG) {
        let p = partials[k];
        acc = vec4<f32>(acc.xyz + p.xyz, max(acc.w, p.w));
    }
    let total = workgroup_sum_max(t, WG, 1u, acc);
    if (t == 0u) {
        var dot = total.x;
        var l1 = total.z;
        var largest = total.w;
        if (total.y > 0.0f) {
            dot = nan();
            l1 = nan();
            largest = nan();
        }
        if (op.scale_slot != NONE) {
            dot = scalars[op.scale_slot] * dot;
        }
        if (op.dot_slot != NONE) {
            scalars[op.dot_slot] = dot;
        }
        if (op.bad_slot != NONE) {
            scalars[op.bad_slot] = total.y;
        }
        if (op.l1_slot != NONE) {
            scalars[op.l1_slot] = l1;
        }
        if (op.max_slot != NONE) {
            scalars[op.max_slot] = largest;
        }
    }
}

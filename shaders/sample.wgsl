// sample.wgsl: standalone sampling of unit states from the Philox stream (shaders/philox.wgsl,
// appended by src/gpu/shader.rs).
//
// bernoulli:      out[k] = (uniform(index_base + k) < probabilities[k]) ? 1 : 0
//                 == CpuBackend::bernoulli (bit for bit, given the same probabilities).
//                 One invocation per Philox block: invocation t covers stream indices
//                 4·((index_base >> 2) + t) + 0..3.
// gaussian_noise: values[k] += sqrt(-2 ln u1) · cos(2π u2),
//                 u1 = max(uniform(2E), 2⁻²⁴), u2 = uniform(2E + 1), E = index_base + k
//                 == Backend::add_gaussian_noise's default method (for index_base = 0).
//                 One invocation per Philox block = two elements. ln and cos are evaluated
//                 with Cephes' single-precision polynomials rather than WGSL's builtins, whose
//                 required accuracy is loose (cos: 2⁻¹¹ absolute): the result agrees with the
//                 CPU's libm to a few ulp (tests allow 1e-4 absolute; ~1e-6 is typical).
//
// Layout: flat f32 arrays; `in_offset`/`out_offset` are element offsets into the bound
// windows. The step of the stream is params.step + slot.step (see gemm.wgsl's Slot).
// Grid: invocation id = ((wid.z · nwg.y + wid.y) · nwg.x + wid.x) · 256 + local index.

struct Params {
    len: u32,
    in_offset: u32,
    out_offset: u32,
    purpose: u32,
    key: vec2<u32>,
    step: vec2<u32>,
    index_base: vec2<u32>,
    invocations: u32,
    _pad: u32,
}

struct Slot {
    step: vec2<u32>,
    row_shift: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> slot: Slot;
@group(0) @binding(2) var<storage, read> input: array<f32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;

const WORKGROUP: u32 = 256u;

fn invocation(wid: vec3<u32>, nwg: vec3<u32>, local: u32) -> u32 {
    return ((wid.z * nwg.y + wid.y) * nwg.x + wid.x) * WORKGROUP + local;
}

@compute @workgroup_size(256)
fn bernoulli(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let t = invocation(wid, nwg, local);
    if (t >= params.invocations) {
        return;
    }
    let step = add_u64(params.step, slot.step);
    let base = params.index_base;
    let group = add_u64(vec2<u32>((base.x >> 2u) | (base.y << 30u), base.y >> 2u), vec2<u32>(t, 0u));
    let block = philox_block(params.key, step.x, step.y, params.purpose, group.x, group.y);
    let skip = base.x & 3u; // stream index 4·group + lane is element 4t + lane - skip
    for (var lane = 0u; lane < 4u; lane = lane + 1u) {
        let at = 4u * t + lane;
        if (at < skip || at - skip >= params.len) {
            continue;
        }
        let k = at - skip;
        let p = input[params.in_offset + k];
        output[params.out_offset + k] = select(0.0, 1.0, lane_to_uniform(block[lane]) < p);
    }
}

// ln(x) for normal x > 0 (Cephes logf: x = m·2^e with m in [√½, √2), polynomial in m − 1).
fn ln_accurate(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    var e = f32(i32((bits >> 23u) & 0xFFu) - 126);
    var m = bitcast<f32>((bits & 0x807FFFFFu) | 0x3F000000u); // in [0.5, 1)
    if (m < 0.70710678118654752440) {
        e = e - 1.0;
        m = m + m - 1.0;
    } else {
        m = m - 1.0;
    }
    let z = m * m;
    var y = 7.0376836292e-2;
    y = y * m - 1.1514610310e-1;
    y = y * m + 1.1676998740e-1;
    y = y * m - 1.2420140846e-1;
    y = y * m + 1.4249322787e-1;
    y = y * m - 1.6668057665e-1;
    y = y * m + 2.0000714765e-1;
    y = y * m - 2.4999993993e-1;
    y = y * m + 3.3333331174e-1;
    y = y * m * z;
    y = y - 2.12194440e-4 * e;
    y = y - 0.5 * z;
    return m + y + 0.693359375 * e;
}

// cos(2π·u) for u in [0, 1): u = q/4 + t with |t| ≤ 1/8 (exact for 24-bit u), then Cephes'
// sinf/cosf polynomials on θ = 2π·t in [−π/4, π/4] and the quadrant q.
fn cos_turns(u: f32) -> f32 {
    let q = floor(4.0 * u + 0.5);
    let t = u - 0.25 * q;
    let x = 6.28318530717958647692 * t;
    let z = x * x;
    let c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * x + x;
    switch (u32(q) & 3u) {
        case 0u: { return c; }
        case 1u: { return -s; }
        case 2u: { return -c; }
        default: { return s; }
    }
}

@compute @workgroup_size(256)
fn gaussian_noise(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let t = invocation(wid, nwg, local);
    if (t >= params.invocations) {
        return;
    }
    let step = add_u64(params.step, slot.step);
    let base = params.index_base;
    // Element E uses stream indices 2E and 2E + 1: lanes 2·(E & 1) and 2·(E & 1) + 1 of block
    // E >> 1. Invocation t covers block (base >> 1) + t, i.e. elements k = 2t + j − (base & 1).
    let group = add_u64(vec2<u32>((base.x >> 1u) | (base.y << 31u), base.y >> 1u), vec2<u32>(t, 0u));
    let block = philox_block(params.key, step.x, step.y, params.purpose, group.x, group.y);
    let skip = base.x & 1u;
    for (var j = 0u; j < 2u; j = j + 1u) {
        let at = 2u * t + j;
        if (at < skip || at - skip >= params.len) {
            continue;
        }
        let k = at - skip;
        let u1 = max(lane_to_uniform(block[2u * j]), 1.0 / 16777216.0);
        let u2 = lane_to_uniform(block[2u * j + 1u]);
        let noise = sqrt(-2.0 * ln_accurate(u1)) * cos_turns(u2);
        output[params.out_offset + k] = output[params.out_offset + k] + noise;
    }
}

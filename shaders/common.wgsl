// common.wgsl: the shader math that must agree bit for bit across kernels, written once.
//
// A snippet, not a module: src/gpu/shader.rs (`assemble`) appends it to every kernel, so its
// names are taken in all of them. Each function's CPU twin stays the ground truth (the
// tests/gpu_*.rs files compare the kernels against it):
//
//   softplus(x)         ln(1 + eˣ) without overflow       eval::softplus (f64)
//   sigmoid(x)          1 / (1 + e⁻ˣ)                     backend::sigmoid
//   sigmoid_clamped(x)  the same on a vec4, e's argument  CpuBackend's sigmoid, whose exp
//                       clamped to [−87, 88] (the GEMM    clamps the same way
//                       epilogue's activation)            (src/backend/cpu.rs)
//   byte_to_unit(b)     b / 255 rounded to nearest        f32::from(b) / 255.0 (u8 pixels)
//
// and the fixed workgroup reduction tree. A workgroup of n invocations (n a power of two
// ≤ 256) numbered t = lane · columns + column (columns a power of two ≤ n; 1 for one total
// over the whole workgroup) puts slot[t] = x, then slot[t] ⊕= slot[t + s] for t < s, for
// s = n/2, n/4, .., columns, with a workgroup barrier after each level. Invocation c < columns
// (lane 0) then holds the total of column c, over the invocations t ≡ c (mod columns); the
// others get their own slot's partial value. The order depends only on n and columns, so a
// sum is bit-reproducible on a device whichever kernel takes it.
//
//   workgroup_sum(t, n, columns, x)      ⊕ = +, f32
//   workgroup_max(t, n, columns, x)      ⊕ = max, f32
//   workgroup_sum2(t, n, columns, x)     ⊕ = +, vec2<f32> (two sums in one tree)
//   workgroup_sum_max(t, n, columns, x)  ⊕ = + on xyz, max on w, vec4<f32>
//
// They hold barriers: every invocation calls them, from uniform control flow. Each invocation
// reads back only its own slot, so calls may follow each other with no barrier in between.
// The workgroup arrays below take memory only in the kernels that call these.
// schedule.wgsl (the update's vec4 partials and the error sum in one pass over both) and
// gemm_update.wgsl (in the GEMM's a_tile memory, to need no more workgroup memory than the
// GEMM itself) run the same tree inline.

// ln(1 + e^x) without overflow; log1p by its series where 1 + y would round.
fn softplus(x: f32) -> f32 {
    let y = exp(-abs(x));
    var l: f32;
    if (y < 1e-3f) {
        l = y * (1.0f - y * (0.5f - y * (1.0f / 3.0f - 0.25f * y)));
    } else {
        l = log(1.0f + y);
    }
    return max(x, 0.0f) + l;
}

fn sigmoid(x: f32) -> f32 {
    return 1.0f / (1.0f + exp(-x));
}

fn sigmoid_clamped(x: vec4<f32>) -> vec4<f32> {
    return 1.0 / (1.0 + exp(clamp(-x, vec4<f32>(-87.0), vec4<f32>(88.0))));
}

// byte / 255 rounded exactly like the CPU's `f32::from(b) / 255.0`, with integers only (float
// tricks are not safe: WGSL division may be off by 2.5 ulp, and Vulkan compilers may reassociate
// a residual correction away). In binary, b / 255 = 0.bbbbbbbb bbbbbbbb ... (the byte repeated),
// so the 24 significant bits start at the byte's leading one: rotate the byte to put that one
// first, repeat it, and round to nearest on the 25th bit (never a tie: the tail is nonzero).
fn byte_to_unit(byte: u32) -> f32 {
    if (byte == 0u || byte == 255u) {
        return f32(byte) / 255.0; // exactly 0 or 1
    }
    let lz = countLeadingZeros(byte) - 24u;
    let rotated = ((byte << lz) | (byte >> (8u - lz))) & 0xFFu;
    let window = rotated * 0x01010101u;
    let significand = (window >> 8u) + ((window >> 7u) & 1u);
    return bitcast<f32>(((126u - lz) << 23u) | (significand & 0x7FFFFFu));
}

var<workgroup> tree_f32: array<f32, 256>;
var<workgroup> tree_vec2: array<vec2<f32>, 256>;
var<workgroup> tree_vec4: array<vec4<f32>, 256>;

fn workgroup_sum(t: u32, n: u32, columns: u32, x: f32) -> f32 {
    tree_f32[t] = x;
    workgroupBarrier();
    for (var s = n / 2u; s >= columns; s = s >> 1u) {
        if (t < s) {
            tree_f32[t] = tree_f32[t] + tree_f32[t + s];
        }
        workgroupBarrier();
    }
    return tree_f32[t];
}

fn workgroup_max(t: u32, n: u32, columns: u32, x: f32) -> f32 {
    tree_f32[t] = x;
    workgroupBarrier();
    for (var s = n / 2u; s >= columns; s = s >> 1u) {
        if (t < s) {
            tree_f32[t] = max(tree_f32[t], tree_f32[t + s]);
        }
        workgroupBarrier();
    }
    return tree_f32[t];
}

fn workgroup_sum2(t: u32, n: u32, columns: u32, x: vec2<f32>) -> vec2<f32> {
    tree_vec2[t] = x;
    workgroupBarrier();
    for (var s = n / 2u; s >= columns; s = s >> 1u) {
        if (t < s) {
            tree_vec2[t] = tree_vec2[t] + tree_vec2[t + s];
        }
        workgroupBarrier();
    }
    return tree_vec2[t];
}

fn workgroup_sum_max(t: u32, n: u32, columns: u32, x: vec4<f32>) -> vec4<f32> {
    tree_vec4[t] = x;
    workgroupBarrier();
    for (var s = n / 2u; s >= columns; s = s >> 1u) {
        if (t < s) {
            let a = tree_vec4[t];
            let b = tree_vec4[t + s];
            tree_vec4[t] = vec4<f32>(a.xyz + b.xyz, max(a.w, b.w));
        }
        workgroupBarrier();
    }
    return tree_vec4[t];
}

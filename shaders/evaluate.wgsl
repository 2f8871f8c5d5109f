// evaluate.wgsl: the per-case and per-unit terms of the RBM evaluation measures
// (src/gpu/evaluate.rs), between the GEMMs that compute the linear parts. Each entry point
// handles one chunk of `rows` evaluated cases; per-case results go to dst[out_offset + r], so a
// whole evaluation leaves one value per case on the device, summed at the end by
// reduce.wgsl's finish_sum (fixed order, f32).
//
// Layout: row-major f32 matrices, one case per row; W is n_visible × n_hidden (row i = visible
// unit i). `data` holds a whole data set, u8 pixels packed 4 per u32 (flags IS_U8; value =
// byte / 255 through common.wgsl's byte_to_unit, as the GEMM converts them) or f32 bits.
// Workgroup-per-case kernels number cases wid.x + wid.y · nwg.x (grid folded past 65,535);
// thread t takes elements t, t + 256, .. in order, then common.wgsl's tree (as reduce.wgsl).
// softplus and sigmoid are common.wgsl's too (appended by src/gpu/shader.rs).
//
// Entry points and their CPU references (src/eval):
//   gather_cases  dst[r, c] = value(data, index[index_start + r] · width + c), set to 1 when
//                 > 0.5 and 0 otherwise with BINARIZE. == Dataset::gather_into (+ the
//                 binarisation of pseudo_log_likelihood). One invocation per element.
//   recon_terms   src_a = x (rows × width), src_b = visible input a = h·Wᵀ + b:
//                 dst[out + r] = Σ_i (x − σ(a))² (Σ (x − a)² with GAUSSIAN),
//                 dst2[out + r] = Σ_i softplus(a) − x·a. == metrics::reconstruction_errors.
//   pll_terms     src_a = binary v (rows × width), src_b = x = v·W + c (rows × n_hidden),
//                 src_c = W, src_d = visible bias b, index[index_start + r] = the flipped unit
//                 i: dst[out + r] = −width · softplus(F(v) − F(ṽ)), with
//                 F(v) − F(ṽ) = b_i·s − Σ_j [softplus(x_j) − softplus(x_j + s·W_ij)],
//                 s = 1 − 2·v_i. The CPU (metrics::pseudo_log_likelihood) runs a second GEMM
//                 for ṽ and subtracts two free energies; summing the differences term by term
//                 avoids the cancellation of two f32 sums of ~n_hidden·|x|.
//   unit_moments  src_a = hidden probabilities (rows × width). One invocation per unit c.
//                 First pass: dst[c] += Σ_r h. SECOND_PASS: with m = dst[c] / count,
//                 dst[width + c] += Σ_r (h − m)², dst[2·width + c] += Σ_r (h − m)³.
//                 == metrics::hidden_unit_statistics (which merges per-batch moments in f64).

struct Params {
    rows: u32,
    width: u32,
    n_hidden: u32,
    flags: u32,
    index_start: u32,
    out_offset: u32,
    count: f32,
    _pad: u32,
}

const WG: u32 = 256u;
const IS_U8: u32 = 1u;
const BINARIZE: u32 = 2u;
const GAUSSIAN: u32 = 4u;
const SECOND_PASS: u32 = 8u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> data: array<u32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read> src_a: array<f32>;
@group(0) @binding(4) var<storage, read> src_b: array<f32>;
@group(0) @binding(5) var<storage, read> src_c: array<f32>;
@group(0) @binding(6) var<storage, read> src_d: array<f32>;
@group(0) @binding(7) var<storage, read_write> dst: array<f32>;
@group(0) @binding(8) var<storage, read_write> dst2: array<f32>;

@compute @workgroup_size(256)
fn gather_cases(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= params.rows * params.width) {
        return;
    }
    let r = i / params.width;
    let c = i % params.width;
    let at = index[params.index_start + r] * params.width + c;
    var x: f32;
    if ((params.flags & IS_U8) != 0u) {
        x = byte_to_unit((data[at >> 2u] >> ((at & 3u) * 8u)) & 0xFFu);
    } else {
        x = bitcast<f32>(data[at]);
    }
    if ((params.flags & BINARIZE) != 0u) {
        x = select(0.0f, 1.0f, x > 0.5f);
    }
    dst[i] = x;
}

@compute @workgroup_size(256)
fn recon_terms(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let r = wid.x + wid.y * nwg.x;
    let gaussian = (params.flags & GAUSSIAN) != 0u;
    var acc = vec2<f32>(0.0f, 0.0f);
    if (r < params.rows) {
        let base = r * params.width;
        for (var i = t; i < params.width; i = i + WG) {
            let x = src_a[base + i];
            let a = src_b[base + i];
            if (gaussian) {
                acc.x = acc.x + (x - a) * (x - a);
            } else {
                let d = x - sigmoid(a);
                acc = acc + vec2<f32>(d * d, softplus(a) - x * a);
            }
        }
    }
    let total = workgroup_sum2(t, WG, 1u, acc);
    if (t == 0u && r < params.rows) {
        dst[params.out_offset + r] = total.x;
        dst2[params.out_offset + r] = total.y;
    }
}

@compute @workgroup_size(256)
fn pll_terms(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let r = wid.x + wid.y * nwg.x;
    let nv = params.width;
    let nh = params.n_hidden;
    var acc = 0.0f;
    var unit = 0u;
    var s = 0.0f;
    if (r < params.rows) {
        unit = index[params.index_start + r];
        s = 1.0f - 2.0f * src_a[r * nv + unit];
        for (var j = t; j < nh; j = j + WG) {
            let x = src_b[r * nh + j];
            acc = acc + (softplus(x) - softplus(x + s * src_c[unit * nh + j]));
        }
    }
    let total = workgroup_sum(t, WG, 1u, acc);
    if (t == 0u && r < params.rows) {
        let d = src_d[unit] * s - total;
        dst[params.out_offset + r] = -f32(nv) * softplus(d);
    }
}

@compute @workgroup_size(256)
fn unit_moments(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let width = params.width;
    if (c >= width) {
        return;
    }
    if ((params.flags & SECOND_PASS) == 0u) {
        var sum = 0.0f;
        for (var r = 0u; r < params.rows; r = r + 1u) {
            sum = sum + src_a[r * width + c];
        }
        dst[c] = dst[c] + sum;
    } else {
        let m = dst[c] / params.count;
        var m2 = 0.0f;
        var m3 = 0.0f;
        for (var r = 0u; r < params.rows; r = r + 1u) {
            let d = src_a[r * width + c] - m;
            m2 = m2 + d * d;
            m3 = m3 + d * d * d;
        }
        dst[width + c] = dst[width + c] + m2;
        dst[2u * width + c] = dst[2u * width + c] + m3;
    }
}

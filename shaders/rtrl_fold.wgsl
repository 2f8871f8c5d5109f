// rtrl_fold.wgsl: a tensor chunk folded into the gradient by a row (issue 20; the device's RTRL
// step, gpu::recurrent_step), optionally finishing the tensor on the way:
//
//   finish_fold:  t[j, c] = σ'[j] · ([accumulate] t[j, c] + [own] [j = p / block_cols] source[p % block_cols]),
//                 written back, p = col0 + c (what rtrl_sensitivity.wgsl's finish does after the
//                 GEMM left Σ_k w^{i,k} ξ^{·,k} in t), and
//   both:         gradient[offset + c] = [gradient_accumulate] gradient[offset + c] + Σ_j row[j] · t[j, c].
//
// fold reads t as it is (the standalone fold: a previous step's tensor, or the unfused path).
// The row is δ^yᵀ w^{y,k} (the output's tensor folded: ∂E/∂y · ξ^{·,y} = Σ_k (δ^yᵀ w^{y,k}) ξ^{·,k}
// plus the own term) or ∂E/∂y (the output's tensor formed); fold also forms δ^yᵀ w^{y,k} itself
// (row δ^y, t the weights w^{y,k} in place in the parameters, the result into its own buffer). CPU reference:
// gpu::recurrent_fold::finish_fold_reference (and recurrent::rtrl for the whole step).
// Layouts, f32 row-major: t rows × width (one column chunk of the block's P columns); deriv,
// row: rows from row_offset, t from tensor_offset (0 for a tensor chunk; in place where the
// buffer holds more); source: block_cols; gradient: the flat gradient, the chunk's columns at
// gradient_offset.
// Workgroup 32 columns × 8 row groups: a group's 32 invocations read 32 adjacent floats of a
// row (128 bytes, coalesced); each invocation takes the rows j ≡ group (mod 8), four loads in
// flight before their use (one tensor column per step would wait a memory latency per row);
// the 8 partial sums of a column are added in workgroup memory and one invocation writes the
// column's gradient, so no two invocations write the same entry.

struct FoldDims {
    rows: u32,
    width: u32,
    block_cols: u32,
    col0: u32,
    own: u32,
    accumulate: u32,
    gradient_accumulate: u32,
    gradient_offset: u32,
    row_offset: u32,
    tensor_offset: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> dims: FoldDims;
@group(0) @binding(1) var<storage, read> deriv: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;
@group(0) @binding(3) var<storage, read> row: array<f32>;
@group(0) @binding(4) var<storage, read_write> tensor: array<f32>;
@group(0) @binding(5) var<storage, read_write> gradient: array<f32>;

const COLS: u32 = 32u;
const GROUPS: u32 = 8u;
// Rows an invocation loads before using any (GROUPS apart).
const UNROLL: u32 = 4u;
var<workgroup> partial: array<f32, 256>;

fn column(local: vec3<u32>, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return ((wid.z * nwg.y + wid.y) * nwg.x + wid.x) * COLS + local.x;
}

// t[j, c], 0 past the last row.
fn tensor_at(j: u32, c: u32) -> f32 {
    if (j < dims.rows) {
        return tensor[dims.tensor_offset + j * dims.width + c];
    }
    return 0.0;
}

// What the GEMM left at t[j, c] (0 where the layer has no incoming term).
fn product_at(j: u32, c: u32) -> f32 {
    if (dims.accumulate != 0u) {
        return tensor_at(j, c);
    }
    return 0.0;
}

// Finishes t[j, c] from the product v, writes it, and returns row[j] · t[j, c] (0 past the last row).
fn finish(j: u32, c: u32, v: f32, own_row: u32, own_value: f32) -> f32 {
    if (j >= dims.rows) {
        return 0.0;
    }
    var x = v;
    if (j == own_row) {
        x += own_value;
    }
    x = deriv[j] * x;
    tensor[dims.tensor_offset + j * dims.width + c] = x;
    return row[dims.row_offset + j] * x;
}

// row[j] · v, 0 past the last row.
fn weighted(j: u32, v: f32) -> f32 {
    if (j < dims.rows) {
        return row[dims.row_offset + j] * v;
    }
    return 0.0;
}

// Adds the groups' partial sums of column c and writes its gradient (every invocation calls it).
fn write_gradient(local: vec3<u32>, c: u32, sum: f32) {
    partial[local.y * COLS + local.x] = sum;
    for (var stride = GROUPS / 2u; stride > 0u; stride = stride / 2u) {
        workgroupBarrier();
        if (local.y < stride) {
            partial[local.y * COLS + local.x] += partial[(local.y + stride) * COLS + local.x];
        }
    }
    if (local.y == 0u && c < dims.width) {
        let at = dims.gradient_offset + c;
        var g = partial[local.x];
        if (dims.gradient_accumulate != 0u) {
            g += gradient[at];
        }
        gradient[at] = g;
    }
}

@compute @workgroup_size(32, 8)
fn finish_fold(@builtin(local_invocation_id) local: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = column(local, wid, nwg);
    var sum = 0.0;
    if (c < dims.width) {
        // The Kronecker term δ_{i,m} δ_{j,s} a^n_t: one row of this column, s = p / block_cols.
        let p = dims.col0 + c;
        var own_row = 0xffffffffu;
        var own_value = 0.0;
        if (dims.own != 0u) {
            own_row = p / dims.block_cols;
            own_value = source[p % dims.block_cols];
        }
        for (var j = local.y; j < dims.rows; j += GROUPS * UNROLL) {
            let v0 = product_at(j, c);
            let v1 = product_at(j + GROUPS, c);
            let v2 = product_at(j + 2u * GROUPS, c);
            let v3 = product_at(j + 3u * GROUPS, c);
            sum += finish(j, c, v0, own_row, own_value);
            sum += finish(j + GROUPS, c, v1, own_row, own_value);
            sum += finish(j + 2u * GROUPS, c, v2, own_row, own_value);
            sum += finish(j + 3u * GROUPS, c, v3, own_row, own_value);
        }
    }
    write_gradient(local, c, sum);
}

@compute @workgroup_size(32, 8)
fn fold(@builtin(local_invocation_id) local: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = column(local, wid, nwg);
    var sum = 0.0;
    if (c < dims.width) {
        for (var j = local.y; j < dims.rows; j += GROUPS * UNROLL) {
            let v0 = tensor_at(j, c);
            let v1 = tensor_at(j + GROUPS, c);
            let v2 = tensor_at(j + 2u * GROUPS, c);
            let v3 = tensor_at(j + 3u * GROUPS, c);
            sum += weighted(j, v0) + weighted(j + GROUPS, v1) + weighted(j + 2u * GROUPS, v2) + weighted(j + 3u * GROUPS, v3);
        }
    }
    write_gradient(local, c, sum);
}

// rtrl_sensitivity.wgsl: one layer's RTRL sensitivity update (issue 20; Moore 2009, eqs. 3.7
// and 3.9), for one column chunk of one weight block's tensor:
//
//   out[j, c] = deriv[j] · ( Σ_l a[j, l] · b[l, c] + [own] [j = p / block_cols] source[p % block_cols] ),
//   p = col0 + c,
//
// the CPU reference being recurrent::rtrl::update_history. Layouts, all f32 row-major:
//   a      rows × k: the layer's incoming weight matrices side by side (w^{i,k} of every
//          feed-forward source and μ^{i,q} of every recurrent source with a tensor);
//   b      k × width: the sources' sensitivity tensors stacked in the same order (this step's
//          for feed-forward sources, the previous step's for recurrent ones), columns
//          col0 .. col0 + width of the block's P = rows_m × block_cols;
//   deriv  rows: σ'(net^i) = 1 − a^i²;
//   source block_cols: the block's own source (a^n(τ), a^n(τ − 1) or 1), read when own ≠ 0
//          (this layer is the block's destination: the Kronecker term δ_{i,m} δ_{j,s} a^n_t);
//   out    rows × width.
// Flags: accumulate adds the product to what out holds (one dispatch per incoming term, the
// resident step); finish applies the Kronecker term and the σ' scaling (the last term's
// dispatch, or a lone one with k = 0). The gradient ∂E/∂y · ξ^{·,y} is this kernel too: one
// row, a = ∂E/∂y, b = the output layer's tensor, deriv = 1, own = 0.
// Workgroup 16 × 16, one output element per invocation, k in slabs of 16 through workgroup
// memory. A chunk's b and out stay within the device's storage binding size (the host splits P).

struct Dims {
    rows: u32,
    k: u32,
    width: u32,
    block_cols: u32,
    col0: u32,
    own: u32,
    accumulate: u32,
    finish: u32,
}

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> deriv: array<f32>;
@group(0) @binding(4) var<storage, read> source: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const TILE: u32 = 16u;
var<workgroup> a_tile: array<f32, 256>;
var<workgroup> b_tile: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) local: vec3<u32>, @builtin(workgroup_id) group: vec3<u32>) {
    let col = group.x * TILE + local.x;
    let row = group.y * TILE + local.y;
    var sum = 0.0;
    let slabs = (dims.k + TILE - 1u) / TILE;
    for (var s = 0u; s < slabs; s++) {
        let ka = s * TILE + local.x;
        var av = 0.0;
        if (row < dims.rows && ka < dims.k) {
            av = a[row * dims.k + ka];
        }
        a_tile[local.y * TILE + local.x] = av;
        let kb = s * TILE + local.y;
        var bv = 0.0;
        if (kb < dims.k && col < dims.width) {
            bv = b[kb * dims.width + col];
        }
        b_tile[local.y * TILE + local.x] = bv;
        workgroupBarrier();
        for (var i = 0u; i < TILE; i++) {
            sum += a_tile[local.y * TILE + i] * b_tile[i * TILE + local.x];
        }
        workgroupBarrier();
    }
    if (row < dims.rows && col < dims.width) {
        let at = row * dims.width + col;
        if (dims.accumulate != 0u) {
            sum += out[at];
        }
        if (dims.finish != 0u) {
            let p = dims.col0 + col;
            if (dims.own != 0u && row == p / dims.block_cols) {
                sum += source[p % dims.block_cols];
            }
            sum = deriv[row] * sum;
        }
        out[at] = sum;
    }
}

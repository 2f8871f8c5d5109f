// local_rbm.wgsl: the passes of a local-patch RBM (Raina et al. 2009, §5), the twins of
// src/local_rbm/passes.rs (CPU reference).
//
//   up:             hidden[r, q, j] = sigmoid(c[bank(q), j] + sum_i visible[r, pixel(q, i)] * W[bank(q), i, j])
//   down_products:  products[r, q, i] = sum_j hidden[r, q, j] * W[bank(q), i, j]
//   gather:         visible[r, p] = act(b[p] + sum_{e in cover(p)} products[r, e])
//
// Layouts (row-major f32): visible cases x (rows * cols * channels), pixel (y, x) channel ch at
// (y * cols + x) * channels + ch; hidden cases x positions x units; products cases x positions
// x width (width = patch^2 * channels, offset (dr * patch + dc) * channels + ch); W banks x
// width x units (banks = positions, or 1 when tied); c banks x units; b per visible unit. The
// cover lists (CSR) hold, per visible unit, q * width + offset of the patches covering it in
// ascending q, so the gather has one writer per output and no atomics.
//
// up and down_products are 16 x 16 tiled products, one workgroup per (16 output columns, 16
// cases, position): grid (ceil(units or width / 16), ceil(cases / 16), positions). up gathers
// its A tile straight from the image (no im2col buffer). gather: workgroups of 64 along the
// visible units, grid (ceil(n_visible / 64), cases). `sigmoid` is common.wgsl's; `LocalDims`,
// `dims`, `bank_of` and `pixel_of` come from local_rbm_geometry.wgsl, prepended by the host.

@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> input: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
@group(0) @binding(5) var<storage, read> cover_starts: array<u32>;
@group(0) @binding(6) var<storage, read> cover_entries: array<u32>;

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let q = wg.z;
    let j = wg.x * TILE + lid.x;
    let r = wg.y * TILE + lid.y;
    let n_visible = dims.rows * dims.cols * dims.channels;
    let w_base = bank_of(q) * dims.width * dims.units;
    let steps = (dims.width + TILE - 1u) / TILE;
    var acc = 0.0;
    for (var s = 0u; s < steps; s = s + 1u) {
        let ka = s * TILE + lid.x;
        var a = 0.0;
        if (r < dims.cases && ka < dims.width) {
            a = input[r * n_visible + pixel_of(q, ka)];
        }
        tile_a[lid.y][lid.x] = a;
        let kb = s * TILE + lid.y;
        var b = 0.0;
        if (kb < dims.width && j < dims.units) {
            b = weights[w_base + kb * dims.units + j];
        }
        tile_b[lid.y][lid.x] = b;
        workgroupBarrier();
        for (var k = 0u; k < TILE; k = k + 1u) {
            acc = acc + tile_a[lid.y][k] * tile_b[k][lid.x];
        }
        workgroupBarrier();
    }
    if (r < dims.cases && j < dims.units) {
        output[(r * dims.positions + q) * dims.units + j] = sigmoid(acc + bias[bank_of(q) * dims.units + j]);
    }
}

@compute @workgroup_size(16, 16)
fn down_products(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let q = wg.z;
    let i = wg.x * TILE + lid.x;
    let r = wg.y * TILE + lid.y;
    let w_base = bank_of(q) * dims.width * dims.units;
    let steps = (dims.units + TILE - 1u) / TILE;
    var acc = 0.0;
    for (var s = 0u; s < steps; s = s + 1u) {
        let ka = s * TILE + lid.x;
        var a = 0.0;
        if (r < dims.cases && ka < dims.units) {
            a = input[(r * dims.positions + q) * dims.units + ka];
        }
        tile_a[lid.y][lid.x] = a;
        let kb = s * TILE + lid.y;
        // Row kb of Wᵀ is column kb of W; thread (lid.x, lid.y) reads W[i, kb].
        var b = 0.0;
        if (kb < dims.units && i < dims.width) {
            b = weights[w_base + i * dims.units + kb];
        }
        tile_b[lid.y][lid.x] = b;
        workgroupBarrier();
        for (var k = 0u; k < TILE; k = k + 1u) {
            acc = acc + tile_a[lid.y][k] * tile_b[k][lid.x];
        }
        workgroupBarrier();
    }
    if (r < dims.cases && i < dims.width) {
        output[(r * dims.positions + q) * dims.width + i] = acc;
    }
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x;
    let r = id.y;
    let n_visible = dims.rows * dims.cols * dims.channels;
    if (p >= n_visible || r >= dims.cases) {
        return;
    }
    let base = r * dims.positions * dims.width;
    var sum = 0.0;
    for (var e = cover_starts[p]; e < cover_starts[p + 1u]; e = e + 1u) {
        sum = sum + input[base + cover_entries[e]];
    }
    let x = sum + bias[p];
    output[r * n_visible + p] = select(x, sigmoid(x), dims.activation != 0u);
}

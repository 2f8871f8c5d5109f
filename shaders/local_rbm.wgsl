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
// up and down_products are tiled products, one workgroup of 16 x 16 per (64 output columns, 64
// cases, position), 4 x 4 outputs per invocation: grid (ceil(units or width / 64),
// ceil(cases / 64), positions). up gathers its A tile straight from the image (no im2col
// buffer). gather: workgroups of 64 along the
// visible units, grid (ceil(n_visible / 64), cases).
//
// Bank groups: where a layer's weights or products exceed a storage binding, the host splits
// the positions into groups (dims.first_position, dims.group_positions) and dispatches each
// group with its own weights buffer (its banks only; the one bank when tied) and a products
// buffer of its positions only (cases x group_positions x width); the gather runs once per
// group over that group's cover lists (entries (q - first) * width + offset), the first
// storing its partial sums, the next adding onto them (ascending positions, as the CPU), the
// last adding the bias and applying the activation. One group is the whole layer. `sigmoid` is common.wgsl's; `LocalDims`,
// `dims`, `bank_of` and `pixel_of` come from local_rbm_geometry.wgsl, prepended by the host.

@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> input: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
@group(0) @binding(5) var<storage, read> cover_starts: array<u32>;
@group(0) @binding(6) var<storage, read> cover_entries: array<u32>;

// A 64 x 64 block of the output per workgroup, 4 x 4 per invocation (rows ly + 16 i, columns
// lx + 16 j, so each step's workgroup-memory reads are consecutive across lx), k in steps of 16.
const BLOCK: u32 = 64u;
const STEP: u32 = 16u;
var<workgroup> block_a: array<f32, 1024>;
var<workgroup> block_b: array<f32, 1024>;

// acc[i] += a[i] * b for the step's 16 k, from block_a (k-major, 64 rows) and block_b (k-major,
// 64 columns).
fn multiply_step(lx: u32, ly: u32, acc: ptr<function, array<vec4<f32>, 4>>) {
    for (var k = 0u; k < STEP; k = k + 1u) {
        let a = vec4<f32>(block_a[k * BLOCK + ly], block_a[k * BLOCK + ly + 16u], block_a[k * BLOCK + ly + 32u], block_a[k * BLOCK + ly + 48u]);
        let b = vec4<f32>(block_b[k * BLOCK + lx], block_b[k * BLOCK + lx + 16u], block_b[k * BLOCK + lx + 32u], block_b[k * BLOCK + lx + 48u]);
        (*acc)[0] = (*acc)[0] + a.x * b;
        (*acc)[1] = (*acc)[1] + a.y * b;
        (*acc)[2] = (*acc)[2] + a.z * b;
        (*acc)[3] = (*acc)[3] + a.w * b;
    }
}

@compute @workgroup_size(16, 16)
fn up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let q = dims.first_position + wg.z;
    let r0 = wg.y * BLOCK;
    let j0 = wg.x * BLOCK;
    let t = lid.y * 16u + lid.x;
    let n_visible = dims.rows * dims.cols * dims.channels;
    let w_base = group_bank(q) * dims.width * dims.units;
    let steps = (dims.width + STEP - 1u) / STEP;
    var acc: array<vec4<f32>, 4>;
    for (var s = 0u; s < steps; s = s + 1u) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let e = t + 256u * u;
            // A: row m, k along the patch (a patch row's pixels are contiguous in the image).
            let m = e / STEP;
            let ka = e % STEP;
            let r = r0 + m;
            let k = s * STEP + ka;
            var a = 0.0;
            if (r < dims.cases && k < dims.width) {
                a = input[r * n_visible + pixel_of(q, k)];
            }
            block_a[ka * BLOCK + m] = a;
            // B: row kb of the bank, 64 consecutive units.
            let kb = e / BLOCK;
            let n = e % BLOCK;
            let kk = s * STEP + kb;
            var b = 0.0;
            if (kk < dims.width && j0 + n < dims.units) {
                b = weights[w_base + kk * dims.units + j0 + n];
            }
            block_b[kb * BLOCK + n] = b;
        }
        workgroupBarrier();
        multiply_step(lid.x, lid.y, &acc);
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = r0 + lid.y + 16u * i;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let j = j0 + lid.x + 16u * c;
            if (r < dims.cases && j < dims.units) {
                output[(r * dims.positions + q) * dims.units + j] = sigmoid(acc[i][c] + bias[bank_of(q) * dims.units + j]);
            }
        }
    }
}

@compute @workgroup_size(16, 16)
fn down_products(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let q = dims.first_position + wg.z;
    let r0 = wg.y * BLOCK;
    let i0 = wg.x * BLOCK;
    let t = lid.y * 16u + lid.x;
    let w_base = group_bank(q) * dims.width * dims.units;
    let steps = (dims.units + STEP - 1u) / STEP;
    var acc: array<vec4<f32>, 4>;
    for (var s = 0u; s < steps; s = s + 1u) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let e = t + 256u * u;
            let m = e / STEP;
            let ka = e % STEP;
            let r = r0 + m;
            let k = s * STEP + ka;
            var a = 0.0;
            if (r < dims.cases && k < dims.units) {
                a = input[(r * dims.positions + q) * dims.units + k];
            }
            block_a[ka * BLOCK + m] = a;
            // Wᵀ[k, n] = W[n, k]: consecutive invocations read consecutive units of row n.
            let n = e / STEP;
            let kb = e % STEP;
            let kk = s * STEP + kb;
            var b = 0.0;
            if (kk < dims.units && i0 + n < dims.width) {
                b = weights[w_base + (i0 + n) * dims.units + kk];
            }
            block_b[kb * BLOCK + n] = b;
        }
        workgroupBarrier();
        multiply_step(lid.x, lid.y, &acc);
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = r0 + lid.y + 16u * i;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let col = i0 + lid.x + 16u * c;
            if (r < dims.cases && col < dims.width) {
                output[(r * dims.group_positions + wg.z) * dims.width + col] = acc[i][c];
            }
        }
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
    let base = r * dims.group_positions * dims.width;
    var sum = 0.0;
    if ((dims.gather_flags & 1u) != 0u) {
        sum = output[r * n_visible + p];
    }
    for (var e = cover_starts[p]; e < cover_starts[p + 1u]; e = e + 1u) {
        sum = sum + input[base + cover_entries[e]];
    }
    if ((dims.gather_flags & 2u) != 0u) {
        let x = sum + bias[p];
        output[r * n_visible + p] = select(x, sigmoid(x), dims.activation != 0u);
    } else {
        output[r * n_visible + p] = sum;
    }
}

// column_sums: output[j] += sum_r input[r * n + j] over the cases, n = positions * units (a
// hidden map): a batch's share of the next layer's visible means when a stack propagates on the
// device. One invocation per column, workgroups of 64, grid (ceil(n / 64)).
@compute @workgroup_size(64)
fn column_sums(@builtin(global_invocation_id) id: vec3<u32>) {
    let n = dims.positions * dims.units;
    let j = id.x;
    if (j >= n) {
        return;
    }
    var sum = 0.0;
    for (var r = 0u; r < dims.cases; r = r + 1u) {
        sum = sum + input[r * n + j];
    }
    output[j] = output[j] + sum;
}

// gather.wgsl: copies one batch of cases, in shuffled order, from the resident data into a
// dense f32 matrix (the positive-phase visible batch the bias steps, the squared error and the
// gradient read).
//
//   out[r, c] = value(data, order[slot.row_shift + r] * width + c)
//
// Layout: `data` holds the whole training set, either u8 pixels packed 4 per u32 (is_u8 = 1;
// value = byte / 255 via common.wgsl's byte_to_unit, as the GEMM converts them) or f32 bits;
// `order` is the epoch's shuffled case index (n_cases entries); `out` is rows x width,
// row-major. One invocation per output element, workgroups of 256 folded into a 2-D grid.
// Rows past the data's end (the last, shorter batch) are not copied. CPU reference:
// Dataset::gather_into. Bindings 5..9, so that schedule.wgsl's schedule_and_gather can run
// the same copy (the next batch's) beside the schedule in one dispatch.
struct GatherParams { rows: u32, width: u32, is_u8: u32, n_cases: u32 }
struct Slot { step: vec2<u32>, row_shift: u32, _pad: u32 }
@group(0) @binding(5) var<uniform> gather_params: GatherParams;
@group(0) @binding(6) var<uniform> slot: Slot;
@group(0) @binding(7) var<storage, read> data: array<u32>;
@group(0) @binding(8) var<storage, read> order: array<u32>;
@group(0) @binding(9) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    gather_element(gid.x + gid.y * nwg.x * 256u, slot.row_shift);
}

// Element i of the batch whose first case is order[shift].
fn gather_element(i: u32, shift: u32) {
    let params = gather_params;
    let rows = min(params.rows, params.n_cases - min(shift, params.n_cases));
    if (i >= rows * params.width) {
        return;
    }
    let r = i / params.width;
    let c = i % params.width;
    let at = order[shift + r] * params.width + c;
    if (params.is_u8 != 0u) {
        out[i] = byte_to_unit((data[at >> 2u] >> ((at & 3u) * 8u)) & 0xFFu);
    } else {
        out[i] = bitcast<f32>(data[at]);
    }
}

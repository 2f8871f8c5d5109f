// schedule_gather.wgsl: the end of one CD batch and the start of the next in one dispatch.
// Workgroup 0 runs schedule.wgsl's step (schedule_batch); workgroups g = 1, 2, .. (grid folded
// as (wid.z · nwg.y + wid.y) · nwg.x + wid.x) copy elements (g − 1)·256 + t of the next batch,
// the cases order[slot.row_shift + rows ..], with gather.wgsl's gather_element (none past the
// data's end), so the gather costs no dispatch of its own. Assembled by src/gpu/trainer from
// schedule_state.wgsl, schedule.wgsl (bindings 0..4), gather.wgsl (bindings 5..9) and
// common.wgsl (byte_to_unit).

@compute @workgroup_size(256)
fn schedule_and_gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let g = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    if (g == 0u) {
        schedule_batch(t);
        return;
    }
    gather_element((g - 1u) * 256u + t, slot.row_shift + gather_params.rows);
}


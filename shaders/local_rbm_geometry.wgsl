// local_rbm_geometry.wgsl: a snippet, not a module. The local-patch RBM's geometry as the
// kernels of local_rbm.wgsl and local_rbm_train.wgsl read it (src/gpu/local_rbm.rs prepends it
// to both): the uniform `dims` at binding 0, the bank a position uses, and the visible index
// of input `offset` of the patch at position `q` (src/local_rbm/geometry.rs: Geometry::pixel_of).

struct LocalDims {
    rows: u32,
    cols: u32,
    channels: u32,
    patch_side: u32,
    stride: u32,
    units: u32,
    positions: u32,
    positions_cols: u32,
    width: u32,
    tied: u32,
    cases: u32,
    // gather: 0 linear (Gaussian visible units), 1 sigmoid.
    activation: u32,
    // The bank group a dispatch serves (weights split by bank where a layer's arrays exceed a
    // storage binding): its first position and its number of positions. The group's weights
    // buffer holds its banks only (untied), its products buffer its positions only.
    first_position: u32,
    group_positions: u32,
    // gather: bit 0 adds onto the sums earlier groups stored, bit 1 (the last group) adds the
    // bias and applies the activation.
    gather_flags: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> dims: LocalDims;

const TILE: u32 = 16u;

fn bank_of(q: u32) -> u32 {
    return select(q, 0u, dims.tied != 0u);
}

// The bank of position q within its group's weights buffer.
fn group_bank(q: u32) -> u32 {
    return select(q - dims.first_position, 0u, dims.tied != 0u);
}

fn pixel_of(q: u32, offset: u32) -> u32 {
    let pr = q / dims.positions_cols;
    let pc = q % dims.positions_cols;
    let ch = offset % dims.channels;
    let dc = (offset / dims.channels) % dims.patch_side;
    let dr = offset / (dims.channels * dims.patch_side);
    return ((pr * dims.stride + dr) * dims.cols + pc * dims.stride + dc) * dims.channels + ch;
}

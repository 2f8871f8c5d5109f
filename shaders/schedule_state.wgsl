// schedule_state.wgsl: the training state that lives on the device between batches.
// Prepended (by the host, with concat!) to update.wgsl and schedule.wgsl so both agree on it.
// Mirrored field by field by `TrainState` in src/gpu/schedule.rs (#[repr(C)], 96 bytes,
// 24 words of 4 bytes; word offsets below). The update kernels bind it as a uniform; the
// schedule kernel binds the same buffer as read_write storage and is the only device writer.
//
//  word  field                 meaning
//   0    learning_rate   f32   rate used by the next batch's updates
//   1    momentum        f32
//   2    weight_penalty  f32   constant (config)
//   3    sparsity_penalty f32  constant (config)
//   4    sparsity_target f32   constant (config)
//   5    adaptive        u32   1: Masters' adaptive schedule after each batch; 0: fixed
//   6    has_previous    u32   0: the next batch has no previous gradient (first batch,
//                              after a momentum reset); the schedule kernel sets it to 1
//   7    batch_index     u32   batches done this epoch = next slot of the batch log
//   8    cosine_sum      f32   epoch accumulators, zeroed by the host at each epoch start
//   9    cosine_count    u32     (batches that had a valid cosine)
//  10    rms_sum         f32
//  11    max_increment   f32     (max |velocity| over the epoch's weight updates)
//  12    squared_error   f32     (sum of squared reconstruction differences)
//  13    last_dot        f32   the last batch's finished scalars: sum g'·p
//  14    last_norm       f32     sum g'²
//  15    last_prev_norm  f32     sum p²
//  16    last_max_increment f32
//  17    last_cosine     f32     0 when not valid
//  18    last_cosine_valid u32
//  19    last_gradient_rms f32   sqrt(sum g'² / (n_visible·n_hidden))
//  20    last_squared_error f32
//  21-23 padding

struct TrainState {
    learning_rate: f32,
    momentum: f32,
    weight_penalty: f32,
    sparsity_penalty: f32,
    sparsity_target: f32,
    adaptive: u32,
    has_previous: u32,
    batch_index: u32,
    cosine_sum: f32,
    cosine_count: u32,
    rms_sum: f32,
    max_increment: f32,
    squared_error: f32,
    last_dot: f32,
    last_norm: f32,
    last_prev_norm: f32,
    last_max_increment: f32,
    last_cosine: f32,
    last_cosine_valid: u32,
    last_gradient_rms: f32,
    last_squared_error: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

//! Host side of `shaders/update.wgsl` (fused weight update) and `shaders/update_bias.wgsl`
//! (bias updates fused with the column means and the sparsity estimate).
//!
//! The rates come from the device's [`TrainState`](super::schedule::TrainState) buffer, bound
//! as a uniform here and updated by the schedule kernel after each batch, so a whole epoch
//! runs with no host read-back. Build each step once (per buffer set) and record it every
//! batch; for the gradient / previous-gradient ping-pong build two weight-update steps with
//! the two buffers swapped and alternate them.
//!
//! CPU references: `train::weights_update::{update_weights, update_bias}`,
//! `train::penalties::SparsityEstimate`, `train::contrastive_divergence::column_means`.

use super::reduce::{pipeline, split, uniform_of, Step, COLUMNS_PER_GROUP, MAX_GROUPS_PER_DIM};
use super::shader::assemble;

const UPDATE_SHADER: &str = concat!(include_str!("../../shaders/schedule_state.wgsl"), include_str!("../../shaders/update.wgsl"));
const BIAS_SHADER: &str = concat!(include_str!("../../shaders/schedule_state.wgsl"), include_str!("../../shaders/update_bias_one.wgsl"), include_str!("../../shaders/update_bias.wgsl"));
const BOTH_BIAS_SHADER: &str = concat!(include_str!("../../shaders/schedule_state.wgsl"), include_str!("../../shaders/update_bias_both.wgsl"), include_str!("../../shaders/update_bias.wgsl"));

/// The update modules as compiled: (label, source) of update.wgsl, update_bias.wgsl with one
/// side's bindings, and with both sides'.
pub(crate) fn sources() -> [(&'static str, String); 3] {
    [("update", assemble(UPDATE_SHADER, &[], false)), ("update_bias", assemble(BIAS_SHADER, &[], false)), ("update_bias_both", assemble(BOTH_BIAS_SHADER, &[], false))]
}

/// `struct UpdateDims` of update.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UpdateDims {
    pub n_visible: u32,
    pub n_hidden: u32,
    pub total: u32,
    pub span: u32,
}

/// `struct BiasDims` of update_bias.wgsl.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BiasDims {
    pub rows: u32,
    pub chains: u32,
    pub width: u32,
    /// bias_steps only: `width` is then the visible one.
    pub hidden_width: u32,
}

/// Storage buffers [`UpdateKernels::bias_steps`] binds.
pub const BIAS_STEPS_STORAGE_BUFFERS: u32 = 13;

/// Weights per workgroup of `update_weights` (256 threads × 4) while that makes at most
/// 4096 workgroups; larger layers get longer spans.
pub const UPDATE_SPAN: usize = 1024;

/// Partials (`vec4<f32>`: Σg'·p, Σg'², Σp², max|v|) the weight update writes: one per
/// workgroup, min(⌈nv·nh / 1024⌉, 4096) or a little fewer. The partials buffer needs 16 bytes
/// each.
pub fn update_partial_count(n_visible: usize, n_hidden: usize) -> u32 {
    split(n_visible * n_hidden, UPDATE_SPAN).0
}

/// Error partials [`UpdateKernels::visible_bias_error_step`] writes for `n_visible` columns.
pub fn bias_error_partial_count(n_visible: usize) -> u32 {
    n_visible.div_ceil(COLUMNS_PER_GROUP) as u32
}

/// Buffers of the weight update (all f32, row-major): of its own pass
/// ([`UpdateKernels::weight_update`]), or of the gradient product's epilogue
/// ([`GemmOp::fused_update`](crate::gpu::gemm::GemmOp::fused_update)).
#[derive(Clone, Copy, Debug)]
pub struct WeightUpdateBuffers<'a> {
    /// nv × nh, updated in place.
    pub weights: &'a wgpu::Buffer,
    /// nv × nh, updated in place.
    pub velocity: &'a wgpu::Buffer,
    /// nv × nh: the raw log-likelihood gradient estimate in, the penalised g' out (the next
    /// batch's `previous`).
    pub gradient: &'a wgpu::Buffer,
    /// nv × nh: the last batch's g'; not read while `TrainState::has_previous` is 0.
    pub previous: &'a wgpu::Buffer,
    /// nv: batch mean of each visible unit (written by the visible bias step).
    pub mean_input: &'a wgpu::Buffer,
    /// nh: sparsity penalty derivative (written by the hidden bias step).
    pub sparsity_derivative: &'a wgpu::Buffer,
    /// The `TrainState` buffer (needs UNIFORM usage).
    pub state: &'a wgpu::Buffer,
    /// ≥ 16 · [`update_partial_count`] bytes (fused: 16 ·
    /// [`fused_update_partials`](crate::gpu::gemm::fused_update_partials)).
    pub partials: &'a wgpu::Buffer,
}

/// Buffers of the visible bias step.
pub struct VisibleBiasBuffers<'a> {
    /// The batch v0, rows × nv.
    pub positive: &'a wgpu::Buffer,
    /// The negative-phase visible batch vk, chains × nv.
    pub negative: &'a wgpu::Buffer,
    pub bias: &'a wgpu::Buffer,
    pub velocity: &'a wgpu::Buffer,
    /// nv, written: mean(v0), the weight update's `mean_input`.
    pub mean_input: &'a wgpu::Buffer,
    pub state: &'a wgpu::Buffer,
}

/// Buffers of the hidden bias step.
pub struct HiddenBiasBuffers<'a> {
    /// The positive hidden probabilities h0, rows × nh.
    pub positive: &'a wgpu::Buffer,
    /// The negative-phase hidden probabilities hk, chains × nh.
    pub negative: &'a wgpu::Buffer,
    pub bias: &'a wgpu::Buffer,
    pub velocity: &'a wgpu::Buffer,
    /// nh, read and written: the smoothed sparsity estimate q (starts at 0.5).
    pub smoothed: &'a wgpu::Buffer,
    /// nh, written: the sparsity derivative d for the weight update.
    pub sparsity_derivative: &'a wgpu::Buffer,
    pub state: &'a wgpu::Buffer,
}

/// The compiled update pipelines. Build once per device.
pub struct UpdateKernels {
    weights: wgpu::ComputePipeline,
    visible_bias: wgpu::ComputePipeline,
    visible_bias_error: wgpu::ComputePipeline,
    hidden_bias: wgpu::ComputePipeline,
    /// Both bias steps in one dispatch, where the device offers [`BIAS_STEPS_STORAGE_BUFFERS`].
    both: Option<wgpu::ComputePipeline>,
}

impl UpdateKernels {
    pub fn new(device: &wgpu::Device) -> Self {
        let [(_, update), (_, bias), (_, both)] = sources();
        let update = super::shader::module(device, "update", update, super::shader::Checks::Bounded);
        let bias = super::shader::module(device, "update_bias", bias, super::shader::Checks::Bounded);
        UpdateKernels {
            weights: pipeline(device, &update, "update_weights"),
            visible_bias: pipeline(device, &bias, "visible_bias_step"),
            visible_bias_error: pipeline(device, &bias, "visible_bias_error_step"),
            hidden_bias: pipeline(device, &bias, "hidden_bias_step"),
            both: (device.limits().max_storage_buffers_per_shader_stage >= BIAS_STEPS_STORAGE_BUFFERS).then(|| {
                let both = super::shader::module(device, "update_bias_both", both, super::shader::Checks::Bounded);
                pipeline(device, &both, "bias_steps")
            }),
        }
    }

    /// The fused weight update over nv × nh weights (see `shaders/update.wgsl`).
    pub fn weight_update(&self, device: &wgpu::Device, n_visible: usize, n_hidden: usize, b: &WeightUpdateBuffers) -> Step {
        let total = n_visible * n_hidden;
        assert!(total > 0, "{n_visible} × {n_hidden} weights");
        let (groups, span) = split(total, UPDATE_SPAN);
        let dims = uniform_of(device, "update_dims", &UpdateDims { n_visible: n_visible as u32, n_hidden: n_hidden as u32, total: total as u32, span });
        Step::new(
            device,
            "update_weights",
            &self.weights,
            dims,
            &[(1, b.state), (2, b.weights), (3, b.velocity), (4, b.gradient), (5, b.previous), (6, b.mean_input), (7, b.sparsity_derivative), (8, b.partials)],
            (groups, 1),
        )
    }

    /// Visible biases: `mean_input ← mean(v0)`, `g = mean(v0) − mean(vk)`, momentum step.
    pub fn visible_bias_step(&self, device: &wgpu::Device, rows: usize, chains: usize, n_visible: usize, b: &VisibleBiasBuffers) -> Step {
        let dims = bias_dims(device, rows, chains, n_visible);
        let groups = n_visible.div_ceil(COLUMNS_PER_GROUP) as u32;
        Step::new(
            device,
            "visible_bias_step",
            &self.visible_bias,
            dims,
            &[(1, b.state), (2, b.positive), (3, b.negative), (4, b.bias), (5, b.velocity), (6, b.mean_input)],
            (groups, 1),
        )
    }

    /// [`Self::visible_bias_step`] that also writes the batch's squared reconstruction error
    /// Σ (v0 − `error_source`)² over rows × nv as [`bias_error_partial_count`] partials (one
    /// per workgroup, for the schedule kernel): the error needs no dispatch of its own.
    pub fn visible_bias_error_step(&self, device: &wgpu::Device, rows: usize, chains: usize, n_visible: usize, b: &VisibleBiasBuffers, error_source: &wgpu::Buffer, error_partials: &wgpu::Buffer) -> Step {
        let dims = bias_dims(device, rows, chains, n_visible);
        let groups = bias_error_partial_count(n_visible);
        Step::new(
            device,
            "visible_bias_error_step",
            &self.visible_bias_error,
            dims,
            &[(1, b.state), (2, b.positive), (3, b.negative), (4, b.bias), (5, b.velocity), (6, b.mean_input), (8, error_source), (9, error_partials)],
            (groups, 1),
        )
    }

    /// Hidden biases with the sparsity estimate: `q ← 0.95q + 0.05·mean(h0)`, `d = sparsity_derivative(q)`,
    /// `g = mean(h0) − mean(hk) − d`, momentum step.
    pub fn hidden_bias_step(&self, device: &wgpu::Device, rows: usize, chains: usize, n_hidden: usize, b: &HiddenBiasBuffers) -> Step {
        let dims = bias_dims(device, rows, chains, n_hidden);
        let groups = n_hidden.div_ceil(COLUMNS_PER_GROUP) as u32;
        Step::new(
            device,
            "hidden_bias_step",
            &self.hidden_bias,
            dims,
            &[(1, b.state), (2, b.positive), (3, b.negative), (4, b.bias), (5, b.velocity), (6, b.smoothed), (7, b.sparsity_derivative)],
            (groups, 1),
        )
    }
}

impl UpdateKernels {
    /// Whether this device runs [`Self::bias_steps`].
    pub fn supports_bias_steps(&self) -> bool {
        self.both.is_some()
    }

    /// [`Self::visible_bias_error_step`] and [`Self::hidden_bias_step`] as one dispatch (the
    /// same arithmetic in the same order, so the same results bit for bit), or `None` where the
    /// device offers fewer than [`BIAS_STEPS_STORAGE_BUFFERS`] storage buffers per stage.
    #[allow(clippy::too_many_arguments)]
    pub fn bias_steps(&self, device: &wgpu::Device, rows: usize, chains: usize, n_visible: usize, n_hidden: usize, visible: &VisibleBiasBuffers, hidden: &HiddenBiasBuffers, error_source: &wgpu::Buffer, error_partials: &wgpu::Buffer) -> Option<Step> {
        let pipeline = self.both.as_ref()?;
        assert!(rows > 0 && chains > 0 && n_visible > 0 && n_hidden > 0);
        let groups = bias_error_partial_count(n_visible) + n_hidden.div_ceil(COLUMNS_PER_GROUP) as u32;
        assert!(groups <= MAX_GROUPS_PER_DIM, "{n_visible} + {n_hidden} units in one bias dispatch");
        let dims = uniform_of(device, "bias_dims", &BiasDims { rows: rows as u32, chains: chains as u32, width: n_visible as u32, hidden_width: n_hidden as u32 });
        let resources = [
            (1, visible.state),
            (2, visible.positive),
            (3, visible.negative),
            (4, visible.bias),
            (5, visible.velocity),
            (6, visible.mean_input),
            (8, error_source),
            (9, error_partials),
            (10, hidden.positive),
            (11, hidden.negative),
            (12, hidden.bias),
            (13, hidden.velocity),
            (14, hidden.smoothed),
            (7, hidden.sparsity_derivative),
        ];
        Some(Step::new(device, "bias_steps", pipeline, dims, &resources, (groups, 1)))
    }
}

fn bias_dims(device: &wgpu::Device, rows: usize, chains: usize, width: usize) -> wgpu::Buffer {
    assert!(rows > 0 && chains > 0 && width > 0);
    assert!(width.div_ceil(COLUMNS_PER_GROUP) <= MAX_GROUPS_PER_DIM as usize, "{width} units in one bias dispatch");
    uniform_of(device, "bias_dims", &BiasDims { rows: rows as u32, chains: chains as u32, width: width as u32, hidden_width: 0 })
}

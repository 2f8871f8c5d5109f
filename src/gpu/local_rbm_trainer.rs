//! CD-1 of a local-patch RBM resident on the device: the parameters, their velocities, the
//! cover lists and one batch's intermediates stay in device buffers; a batch is eight
//! dispatches in one submission (up, sample, down products, gather, up, weight update, the two
//! bias updates) with the kernels of shaders/local_rbm.wgsl and local_rbm_train.wgsl. The CPU
//! twin is `local_rbm::LocalCdTrainer` (tests/gpu_local_rbm.rs compares a few batches).
//!
//! Limits: every array must fit one storage binding (WebGPU's default 128 MiB; native adapters
//! give more, see `buffers::context_with_adapter_limits`). Raina's 192² layer's weights are
//! 214 MB, so on the web it needs the weights split by bank (not done yet).

use super::buffers::{read_back, uniform_bytes, upload, zeros_f32};
use super::read_ranges;
use super::local_rbm::{dims, source, train_source, LocalDims, TrainParams};
use super::shader::{module, Checks};
use super::{GpuContext, GpuError};
use crate::local_rbm::{CoverLists, LocalCdSettings, LocalRbm, LocalVelocities};

/// Outputs per workgroup side of the products (local_rbm.wgsl's and local_rbm_train.wgsl's BLOCK).
const BLOCK: u32 = 64;
const MAX_GROUPS: u32 = 65_535;

struct Pipelines {
    up: wgpu::ComputePipeline,
    down_products: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
    sample_hidden: wgpu::ComputePipeline,
    weight_update: wgpu::ComputePipeline,
    visible_bias_update: wgpu::ComputePipeline,
    hidden_bias_update: wgpu::ComputePipeline,
    column_sums: wgpu::ComputePipeline,
}

pub struct GpuLocalTrainer {
    pub settings: LocalCdSettings,
    layer: LocalRbm,
    cases: usize,
    pipelines: Pipelines,
    dims: wgpu::Buffer,
    params: wgpu::Buffer,
    weights: wgpu::Buffer,
    velocity: wgpu::Buffer,
    hidden_bias: wgpu::Buffer,
    hidden_velocity: wgpu::Buffer,
    visible_bias: wgpu::Buffer,
    visible_velocity: wgpu::Buffer,
    cover_starts: wgpu::Buffer,
    cover_entries: wgpu::Buffer,
    hidden0: wgpu::Buffer,
    samples: wgpu::Buffer,
    products: wgpu::Buffer,
    visible1: wgpu::Buffer,
    hidden1: wgpu::Buffer,
    /// Batches trained: the sampling stream's step (as the CPU trainer's).
    pub step: u64,
    pub epoch: usize,
}

/// Whether a layer of `geometry` trained in batches of `cases` fits this device: every array
/// within one storage binding (splitting by bank is not done yet) and every dispatch within the
/// 65,535 workgroups a grid dimension allows. The error says which, naming the flags.
pub fn check_fit(ctx: &GpuContext, geometry: &crate::local_rbm::Geometry, cases: usize) -> Result<(), String> {
    let grids = [("patch positions (--stride)", geometry.positions()), ("visible units / 64 (--image-size)", geometry.n_visible().div_ceil(64)), ("cases / 16 (--batch)", cases.div_ceil(16))];
    for (what, groups) in grids {
        if groups > MAX_GROUPS as usize {
            return Err(format!("{what}: {groups} workgroups in one grid dimension, more than the {MAX_GROUPS} a dispatch allows; try --backend cpu"));
        }
    }
    let limits = ctx.device.limits();
    let largest = [geometry.weight_count(), cases * geometry.positions() * geometry.patch_inputs(), cases * geometry.n_hidden(), cases * geometry.n_visible()].into_iter().max().unwrap_or(0) as u64 * 4;
    if largest > limits.max_storage_buffer_binding_size {
        return Err(format!(
            "--batch / --hidden-per-patch / --image-size: a {largest}-byte array exceeds this device's storage binding limit of {} bytes (splitting by bank is not implemented yet); try --backend cpu",
            limits.max_storage_buffer_binding_size
        ));
    }
    Ok(())
}

fn pipeline(device: &wgpu::Device, shader: &wgpu::ShaderModule, entry: &str) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: shader, entry_point: Some(entry), compilation_options: Default::default(), cache: None })
}

impl GpuLocalTrainer {
    /// Uploads `layer` (momentum at rest) for batches of exactly `cases` cases.
    pub fn new(ctx: &GpuContext, layer: &LocalRbm, settings: LocalCdSettings, cases: usize) -> GpuLocalTrainer {
        let g = layer.geometry;
        let device = &ctx.device;
        let passes = module(device, "local_rbm", source(), Checks::Bounded);
        let train = module(device, "local_rbm_train", train_source(), Checks::Bounded);
        let pipelines = Pipelines {
            up: pipeline(device, &passes, "up"),
            down_products: pipeline(device, &passes, "down_products"),
            gather: pipeline(device, &passes, "gather"),
            sample_hidden: pipeline(device, &train, "sample_hidden"),
            weight_update: pipeline(device, &train, "weight_update"),
            visible_bias_update: pipeline(device, &train, "visible_bias_update"),
            hidden_bias_update: pipeline(device, &train, "hidden_bias_update"),
            column_sums: pipeline(device, &passes, "column_sums"),
        };
        let cover = CoverLists::new(&g);
        let d: LocalDims = dims(layer, cases);
        GpuLocalTrainer {
            dims: uniform_bytes(ctx, "local_dims", bytemuck::bytes_of(&d)),
            params: uniform_bytes(ctx, "local_train_params", &[0u8; std::mem::size_of::<TrainParams>()]),
            weights: upload(ctx, "local_weights", &layer.weights),
            velocity: zeros_f32(ctx, "local_velocity", layer.weights.len()),
            hidden_bias: upload(ctx, "local_hidden_bias", &layer.hidden_bias),
            hidden_velocity: zeros_f32(ctx, "local_hidden_velocity", layer.hidden_bias.len()),
            visible_bias: upload(ctx, "local_visible_bias", &layer.visible_bias),
            visible_velocity: zeros_f32(ctx, "local_visible_velocity", layer.visible_bias.len()),
            cover_starts: upload(ctx, "cover_starts", &cover.starts),
            cover_entries: upload(ctx, "cover_entries", &cover.entries),
            hidden0: zeros_f32(ctx, "local_hidden0", cases * g.n_hidden()),
            samples: zeros_f32(ctx, "local_samples", cases * g.n_hidden()),
            products: zeros_f32(ctx, "local_products", cases * g.positions() * g.patch_inputs()),
            visible1: zeros_f32(ctx, "local_visible1", cases * g.n_visible()),
            hidden1: zeros_f32(ctx, "local_hidden1", cases * g.n_hidden()),
            pipelines,
            layer: layer.clone(),
            cases,
            settings,
            step: 0,
            epoch: 0,
        }
    }

    /// A bind group of `entries` plus the dims at binding 0 (every entry point but
    /// `sample_hidden` reads them; auto layouts hold only the bindings a kernel uses).
    fn bind(&self, ctx: &GpuContext, pipeline: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let uses_dims = !std::ptr::eq(pipeline, &self.pipelines.sample_hidden);
        let mut all: Vec<wgpu::BindGroupEntry> = uses_dims.then(|| wgpu::BindGroupEntry { binding: 0, resource: self.dims.as_entire_binding() }).into_iter().collect();
        all.extend(entries.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }));
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &all })
    }

    /// One CD-1 update on `batch` (a device buffer of `cases × n_visible`), submitted; nothing
    /// is read back.
    pub fn train_batch(&mut self, ctx: &GpuContext, batch: &wgpu::Buffer) {
        let g = self.layer.geometry;
        let s = &self.settings;
        let momentum = if self.epoch < s.momentum_switch_epoch { s.initial_momentum } else { s.final_momentum };
        let count = self.cases * g.n_hidden();
        let params = TrainParams {
            key_lo: s.seed as u32,
            key_hi: (s.seed >> 32) as u32,
            step_lo: self.step as u32,
            step_hi: (self.step >> 32) as u32,
            count: count as u32,
            learning_rate: s.learning_rate,
            momentum,
            weight_penalty: s.weight_penalty,
            sparsity_penalty: s.sparsity_penalty,
            sparsity_target: s.sparsity_target,
            tied_scale: if g.tied { 1.0 / g.positions() as f32 } else { 1.0 },
            _pad: 0,
        };
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let p = &self.pipelines;
        let cases = self.cases as u32;
        let (units, width, positions) = (g.hidden_per_patch as u32, g.patch_inputs() as u32, g.positions() as u32);
        let sample_groups = (count as u32).div_ceil(256);
        let steps: Vec<(&wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32, u32))> = vec![
            (&p.up, self.bind(ctx, &p.up, &[(1, &self.weights), (2, &self.hidden_bias), (3, batch), (4, &self.hidden0)]), (units.div_ceil(BLOCK), cases.div_ceil(BLOCK), positions)),
            (&p.sample_hidden, self.bind(ctx, &p.sample_hidden, &[(1, &self.params), (6, &self.hidden0), (8, &self.samples)]), (sample_groups.min(MAX_GROUPS), sample_groups.div_ceil(MAX_GROUPS), 1)),
            (&p.down_products, self.bind(ctx, &p.down_products, &[(1, &self.weights), (3, &self.samples), (4, &self.products)]), (width.div_ceil(BLOCK), cases.div_ceil(BLOCK), positions)),
            (&p.gather, self.bind(ctx, &p.gather, &[(2, &self.visible_bias), (3, &self.products), (4, &self.visible1), (5, &self.cover_starts), (6, &self.cover_entries)]), ((g.n_visible() as u32).div_ceil(64), cases, 1)),
            (&p.up, self.bind(ctx, &p.up, &[(1, &self.weights), (2, &self.hidden_bias), (3, &self.visible1), (4, &self.hidden1)]), (units.div_ceil(BLOCK), cases.div_ceil(BLOCK), positions)),
            (
                &p.weight_update,
                self.bind(ctx, &p.weight_update, &[(1, &self.params), (2, &self.weights), (3, &self.velocity), (4, batch), (5, &self.visible1), (6, &self.hidden0), (7, &self.hidden1)]),
                (units.div_ceil(BLOCK), width.div_ceil(BLOCK), g.banks() as u32),
            ),
            (&p.visible_bias_update, self.bind(ctx, &p.visible_bias_update, &[(1, &self.params), (2, &self.visible_bias), (3, &self.visible_velocity), (4, batch), (5, &self.visible1)]), ((g.n_visible() as u32).div_ceil(64), 1, 1)),
            (
                &p.hidden_bias_update,
                self.bind(ctx, &p.hidden_bias_update, &[(1, &self.params), (2, &self.hidden_bias), (3, &self.hidden_velocity), (6, &self.hidden0), (7, &self.hidden1)]),
                ((g.hidden_bias_count() as u32).div_ceil(64), 1, 1),
            ),
        ];
        Self::submit(ctx, &steps);
        self.step += 1;
    }

    /// Runs `steps` (pipeline, bind group, grid) in one submission, one pass each (each reads
    /// what the previous one wrote).
    fn submit(ctx: &GpuContext, steps: &[(&wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32, u32))]) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        for (pipeline, bind_group, groups) in steps {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        }
        ctx.queue.submit([encoder.finish()]);
    }

    /// The next layer's input from `batch` (a device buffer of `cases × n_visible`): the hidden
    /// probabilities `σ(c + up(batch))` in a new buffer (`cases × n_hidden`, the feature map),
    /// and their column sums added into `sums` (`n_hidden` floats), all on the device.
    pub fn propagate(&self, ctx: &GpuContext, batch: &wgpu::Buffer, sums: &wgpu::Buffer) -> wgpu::Buffer {
        let g = self.layer.geometry;
        let p = &self.pipelines;
        let hidden = zeros_f32(ctx, "local_propagated", self.cases * g.n_hidden());
        let (units, cases, positions) = (g.hidden_per_patch as u32, self.cases as u32, g.positions() as u32);
        let steps = [
            (&p.up, self.bind(ctx, &p.up, &[(1, &self.weights), (2, &self.hidden_bias), (3, batch), (4, &hidden)]), (units.div_ceil(BLOCK), cases.div_ceil(BLOCK), positions)),
            (&p.column_sums, self.bind(ctx, &p.column_sums, &[(3, &hidden), (4, sums)]), ((g.n_hidden() as u32).div_ceil(64), 1, 1)),
        ];
        Self::submit(ctx, &steps);
        hidden
    }

    /// The model and its velocities (weights, hidden biases, visible biases) as they stand on
    /// the device, in one read-back: the state a lost device resumes from on the CPU.
    pub async fn state(&self, ctx: &GpuContext) -> Result<(LocalRbm, LocalVelocities), GpuError> {
        let bytes = |len: usize| (len * 4) as u64;
        let (nw, nh, nv) = (self.layer.weights.len(), self.layer.hidden_bias.len(), self.layer.visible_bias.len());
        let parts = read_ranges(
            ctx,
            &[
                (&self.weights, 0, bytes(nw)),
                (&self.hidden_bias, 0, bytes(nh)),
                (&self.visible_bias, 0, bytes(nv)),
                (&self.velocity, 0, bytes(nw)),
                (&self.hidden_velocity, 0, bytes(nh)),
                (&self.visible_velocity, 0, bytes(nv)),
            ],
        )
        .await?;
        let floats = |k: usize| bytemuck::pod_collect_to_vec::<u8, f32>(&parts[k]);
        let mut layer = self.layer.clone();
        (layer.weights, layer.hidden_bias, layer.visible_bias) = (floats(0), floats(1), floats(2));
        Ok((layer, LocalVelocities { weights: floats(3), hidden_bias: floats(4), visible_bias: floats(5) }))
    }

    /// The model as it stands on the device.
    pub async fn model(&self, ctx: &GpuContext) -> Result<LocalRbm, GpuError> {
        let mut layer = self.layer.clone();
        layer.weights = read_back(ctx, &self.weights, 0, layer.weights.len()).await?;
        layer.hidden_bias = read_back(ctx, &self.hidden_bias, 0, layer.hidden_bias.len()).await?;
        layer.visible_bias = read_back(ctx, &self.visible_bias, 0, layer.visible_bias.len()).await?;
        Ok(layer)
    }
}

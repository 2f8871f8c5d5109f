//! CD-1 of a local-patch RBM resident on the device: the parameters, their velocities, the
//! cover lists and one batch's intermediates stay in device buffers; a batch is one submission
//! (up, sample, then per bank group the down products and their gather, up, the weight update
//! per bank group, the two bias updates) with the kernels of shaders/local_rbm.wgsl and
//! local_rbm_train.wgsl. The CPU twin is `local_rbm::LocalCdTrainer` (tests/gpu_local_rbm.rs
//! compares a few batches, split and unsplit).
//!
//! Bank groups: where the weights (or the per-position products of a batch) would exceed one
//! storage binding (WebGPU's default 128 MiB; natively the adapter's limit, see
//! `buffers::context_with_adapter_limits`), the positions are split into consecutive groups,
//! each with its own weights and velocity buffers (its banks; a tied layer's one bank is shared)
//! and cover lists; one products buffer sized for the largest group serves them in turn.
//! Raina's 192² layer (214 MB of weights) runs in two groups on the web.
//!
//! The products run with the kernels of a [`LocalTiling`] (`DEEPBELIEF_LOCAL_TILING`, read
//! when the trainer is built; natively only). [`GpuLocalTrainer::profile`] times every
//! dispatch of a batch with GPU timestamps.

use super::buffers::{uniform_bytes, upload, zeros_f32};
use super::local_rbm::{dims, products_module, source, train_source, update_module, LocalDims, LocalTiling, TrainParams, GATHER_ACCUMULATE, GATHER_FINISH};
use super::read_ranges;
use super::shader::{module, Checks};
use super::{GpuContext, GpuError};
use crate::local_rbm::{CoverLists, Geometry, LocalCdSettings, LocalRbm, LocalVelocities};
use serde::Serialize;

const MAX_GROUPS: u32 = 65_535;
/// wgpu's cap on queries in one set.
const MAX_QUERIES: usize = 4096;

/// One dispatch of a batch (or of `propagate`, `reconstruct`), named for the profile.
struct Step {
    label: String,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: (u32, u32, u32),
    /// A product's floating-point operations (2 per multiply-add); 0 for the other kernels.
    flop: f64,
}

/// One dispatch's mean time in [`LocalProfile`].
#[derive(Clone, Debug, Serialize)]
pub struct LocalDispatchTime {
    pub label: String,
    pub microseconds: f64,
    /// A product's GFLOP (0 for the other kernels), so its rate is `gflop / microseconds · 1e3` TFLOP/s.
    pub gflop: f64,
}

/// Where a CD-1 batch's time goes on the device ([`GpuLocalTrainer::profile`]).
#[derive(Clone, Debug, Serialize)]
pub struct LocalProfile {
    /// The products' kernels (`LocalTiling::describe`).
    pub tiling: String,
    /// Batches timed; each figure is their mean.
    pub batches: usize,
    pub bank_groups: usize,
    pub dispatches: Vec<LocalDispatchTime>,
    /// Σ of the dispatches' own times per batch (each in its own pass).
    pub dispatch_sum_us: f64,
    /// From the first dispatch's start to the last one's end, per batch: the sum plus the gaps
    /// between passes.
    pub batch_span_us: f64,
    /// The products' GFLOP per batch.
    pub gflop: f64,
}

struct Pipelines {
    tiling: LocalTiling,
    up: wgpu::ComputePipeline,
    down_products: wgpu::ComputePipeline,
    gather: wgpu::ComputePipeline,
    sample_hidden: wgpu::ComputePipeline,
    weight_update: wgpu::ComputePipeline,
    visible_bias_update: wgpu::ComputePipeline,
    hidden_bias_update: wgpu::ComputePipeline,
    column_sums: wgpu::ComputePipeline,
}

/// Consecutive positions whose banks (untied) live in one weights buffer.
struct BankGroup {
    positions: usize,
    /// The layer's dims with this group's positions and gather flags.
    dims: wgpu::Buffer,
    /// The group's banks (untied) or the one shared bank (tied: the same buffer in every group).
    weights: wgpu::Buffer,
    velocity: wgpu::Buffer,
    /// The cover lists of this group's positions, entries `(q − first) · width + offset`.
    cover_starts: wgpu::Buffer,
    cover_entries: wgpu::Buffer,
}

pub struct GpuLocalTrainer {
    pub settings: LocalCdSettings,
    layer: LocalRbm,
    cases: usize,
    pipelines: Pipelines,
    /// The whole layer's dims (one group): the sampling, bias updates and a tied weight update.
    dims: wgpu::Buffer,
    params: wgpu::Buffer,
    groups: Vec<BankGroup>,
    hidden_bias: wgpu::Buffer,
    hidden_velocity: wgpu::Buffer,
    visible_bias: wgpu::Buffer,
    visible_velocity: wgpu::Buffer,
    hidden0: wgpu::Buffer,
    samples: wgpu::Buffer,
    products: wgpu::Buffer,
    visible1: wgpu::Buffer,
    hidden1: wgpu::Buffer,
    /// Each batch buffer's dispatches, made on its first batch.
    batch_steps: std::collections::HashMap<wgpu::Buffer, Vec<Step>>,
    /// Batches trained: the sampling stream's step (as the CPU trainer's).
    pub step: u64,
    pub epoch: usize,
}

/// The positions of each bank group, `(first, count)`, when no buffer may hold more than
/// `limit` bytes: as many positions per group as both a group's banks (untied) and its
/// products for `cases` cases allow; `None` when one position alone does not fit.
pub fn bank_groups(geometry: &Geometry, cases: usize, limit: u64) -> Option<Vec<(usize, usize)>> {
    let bank_bytes = (geometry.patch_inputs() * geometry.hidden_per_patch * 4) as u64;
    let products_bytes = (cases * geometry.patch_inputs() * 4) as u64;
    let by_weights = if geometry.tied { u64::MAX } else { limit / bank_bytes.max(1) };
    let per_group = by_weights.min(limit / products_bytes.max(1)).min(geometry.positions() as u64) as usize;
    if per_group == 0 || bank_bytes > limit {
        return None;
    }
    let positions = geometry.positions();
    Some((0..positions.div_ceil(per_group)).map(|k| (k * per_group, per_group.min(positions - k * per_group))).collect())
}

/// Whether a layer of `geometry` trained in batches of `cases` fits this device: every array
/// but the weights and products (split into bank groups) within one storage binding, one bank
/// and one position's products too, and every dispatch within the 65,535 workgroups a grid
/// dimension allows. The error says which, naming the flags; a bad `DEEPBELIEF_LOCAL_TILING`
/// is refused here too (the trainer reads it).
pub fn check_fit(ctx: &GpuContext, geometry: &Geometry, cases: usize) -> Result<(), String> {
    LocalTiling::from_env()?;
    let grids = [
        ("patch positions (--stride)", geometry.positions()),
        ("visible units / 64 (--image-size)", geometry.n_visible().div_ceil(64)),
        ("hidden units / 64 (--image-size, --hidden-per-patch)", geometry.n_hidden().div_ceil(64)),
        ("cases / 16 (--batch)", cases.div_ceil(16)),
    ];
    for (what, groups) in grids {
        if groups > MAX_GROUPS as usize {
            return Err(format!("{what}: {groups} workgroups in one grid dimension, more than the {MAX_GROUPS} a dispatch allows; try --backend cpu"));
        }
    }
    let limit = ctx.device.limits().max_storage_buffer_binding_size;
    let largest = [cases * geometry.n_hidden(), cases * geometry.n_visible()].into_iter().max().unwrap_or(0) as u64 * 4;
    if largest > limit || bank_groups(geometry, cases, limit).is_none() {
        return Err(format!(
            "--batch / --hidden-per-patch / --image-size: a {}-byte array exceeds this device's storage binding limit of {limit} bytes even with the weights split by bank; try --backend cpu",
            largest.max((geometry.patch_inputs() * geometry.hidden_per_patch.max(cases) * 4) as u64)
        ));
    }
    Ok(())
}

/// The bytes one bank group's buffers may take: the device's storage binding limit, or less
/// where `DEEPBELIEF_LOCAL_BINDING_LIMIT_MIB` asks (an A/B switch for the device: whether
/// buffers past some size run slower there). A value that does not parse is ignored.
pub fn binding_limit(ctx: &GpuContext) -> u64 {
    let device = ctx.device.limits().max_storage_buffer_binding_size;
    let asked = std::env::var("DEEPBELIEF_LOCAL_BINDING_LIMIT_MIB").ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|&m| m > 0);
    asked.map_or(device, |mib| device.min(mib << 20))
}

/// The cover lists of positions `first .. first + count`, entries rebased to the group's
/// products (`(q − first) · width + offset`), in the full lists' (ascending position) order.
fn group_cover(cover: &CoverLists, width: usize, first: usize, count: usize) -> CoverLists {
    let (low, high) = ((first * width) as u32, ((first + count) * width) as u32);
    let mut starts = Vec::with_capacity(cover.starts.len());
    let mut entries = Vec::new();
    starts.push(0);
    for pixel in 0..cover.starts.len() - 1 {
        entries.extend(cover.covering(pixel).iter().filter(|&&e| e >= low && e < high).map(|&e| e - low));
        starts.push(entries.len() as u32);
    }
    CoverLists { starts, entries }
}

fn pipeline(device: &wgpu::Device, shader: &wgpu::ShaderModule, entry: &str) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: shader, entry_point: Some(entry), compilation_options: Default::default(), cache: None })
}

impl GpuLocalTrainer {
    /// Uploads `layer` (momentum at rest) for batches of exactly `cases` cases, its banks split
    /// into groups under the device's storage binding limit, with the products of the tiling
    /// `DEEPBELIEF_LOCAL_TILING` picks (panics on a bad value: `check_fit` refuses it first).
    pub fn new(ctx: &GpuContext, layer: &LocalRbm, settings: LocalCdSettings, cases: usize) -> GpuLocalTrainer {
        Self::with_binding_limit(ctx, layer, settings, cases, binding_limit(ctx))
    }

    /// As `new`, with bank groups of at most `limit` bytes (tests force small groups). Panics
    /// where one bank or one position's products exceed it (`check_fit` refuses those first).
    pub fn with_binding_limit(ctx: &GpuContext, layer: &LocalRbm, settings: LocalCdSettings, cases: usize, limit: u64) -> GpuLocalTrainer {
        let tiling = LocalTiling::from_env().unwrap_or_else(|e| panic!("{e}"));
        Self::with_tiling(ctx, layer, settings, cases, limit, tiling)
    }

    /// As `with_binding_limit`, with the products of `tiling`.
    pub fn with_tiling(ctx: &GpuContext, layer: &LocalRbm, settings: LocalCdSettings, cases: usize, limit: u64, tiling: LocalTiling) -> GpuLocalTrainer {
        let g = layer.geometry;
        let device = &ctx.device;
        let passes = module(device, "local_rbm", source(), Checks::Bounded);
        let train = module(device, "local_rbm_train", train_source(), Checks::Bounded);
        let (products, update) = match tiling {
            LocalTiling::Old => (passes.clone(), train.clone()),
            _ => (products_module(device, tiling), update_module(device, tiling)),
        };
        let pipelines = Pipelines {
            tiling,
            up: pipeline(device, &products, "up"),
            down_products: pipeline(device, &products, "down_products"),
            gather: pipeline(device, &passes, "gather"),
            sample_hidden: pipeline(device, &train, "sample_hidden"),
            weight_update: pipeline(device, &update, "weight_update"),
            visible_bias_update: pipeline(device, &train, "visible_bias_update"),
            hidden_bias_update: pipeline(device, &train, "hidden_bias_update"),
            column_sums: pipeline(device, &passes, "column_sums"),
        };
        let plan = bank_groups(&g, cases, limit).expect("a bank and a position's products within the binding limit (check_fit)");
        let cover = CoverLists::new(&g);
        let bank_size = g.patch_inputs() * g.hidden_per_patch;
        let shared = g.tied.then(|| (upload(ctx, "local_weights", &layer.weights), zeros_f32(ctx, "local_velocity", layer.weights.len())));
        let last = plan.len() - 1;
        let groups = plan
            .iter()
            .enumerate()
            .map(|(k, &(first, positions))| {
                let mut d: LocalDims = dims(layer, cases);
                d.first_position = first as u32;
                d.group_positions = positions as u32;
                d.gather_flags = if k > 0 { GATHER_ACCUMULATE } else { 0 } | if k == last { GATHER_FINISH } else { 0 };
                let (weights, velocity) = match &shared {
                    Some((w, v)) => (w.clone(), v.clone()),
                    None => (upload(ctx, "local_weights", &layer.weights[first * bank_size..(first + positions) * bank_size]), zeros_f32(ctx, "local_velocity", positions * bank_size)),
                };
                let lists = if plan.len() == 1 { CoverLists { starts: cover.starts.clone(), entries: cover.entries.clone() } } else { group_cover(&cover, g.patch_inputs(), first, positions) };
                BankGroup {
                    positions,
                    dims: uniform_bytes(ctx, "local_group_dims", bytemuck::bytes_of(&d)),
                    weights,
                    velocity,
                    cover_starts: upload(ctx, "cover_starts", &lists.starts),
                    // An empty binding is not allowed: a group covering nothing keeps one entry.
                    cover_entries: upload(ctx, "cover_entries", if lists.entries.is_empty() { &[0u32][..] } else { &lists.entries }),
                }
            })
            .collect::<Vec<_>>();
        let largest = groups.iter().map(|gr| gr.positions).max().unwrap_or(0);
        GpuLocalTrainer {
            dims: uniform_bytes(ctx, "local_dims", bytemuck::bytes_of(&dims(layer, cases))),
            params: uniform_bytes(ctx, "local_train_params", &[0u8; std::mem::size_of::<TrainParams>()]),
            groups,
            hidden_bias: upload(ctx, "local_hidden_bias", &layer.hidden_bias),
            hidden_velocity: zeros_f32(ctx, "local_hidden_velocity", layer.hidden_bias.len()),
            visible_bias: upload(ctx, "local_visible_bias", &layer.visible_bias),
            visible_velocity: zeros_f32(ctx, "local_visible_velocity", layer.visible_bias.len()),
            hidden0: zeros_f32(ctx, "local_hidden0", cases * g.n_hidden()),
            samples: zeros_f32(ctx, "local_samples", cases * g.n_hidden()),
            products: zeros_f32(ctx, "local_products", cases * largest * g.patch_inputs()),
            visible1: zeros_f32(ctx, "local_visible1", cases * g.n_visible()),
            hidden1: zeros_f32(ctx, "local_hidden1", cases * g.n_hidden()),
            batch_steps: std::collections::HashMap::new(),
            pipelines,
            // Geometry and units only: the parameters live on the device.
            layer: LocalRbm { geometry: g, visible_units: layer.visible_units, weights: Vec::new(), hidden_bias: Vec::new(), visible_bias: Vec::new() },
            cases,
            settings,
            step: 0,
            epoch: 0,
        }
    }

    /// Bank groups the layer runs in (1 where everything fits one binding).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The products' kernels.
    pub fn tiling(&self) -> LocalTiling {
        self.pipelines.tiling
    }

    /// A bind group of `entries` plus the dims at binding 0 (every entry point but
    /// `sample_hidden` reads them; auto layouts hold only the bindings a kernel uses).
    fn bind(&self, ctx: &GpuContext, pipeline: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        self.bind_with(ctx, pipeline, &self.dims, entries)
    }

    /// `bind` with a group's dims.
    fn bind_with(&self, ctx: &GpuContext, pipeline: &wgpu::ComputePipeline, dims: &wgpu::Buffer, entries: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let uses_dims = !std::ptr::eq(pipeline, &self.pipelines.sample_hidden);
        let mut all: Vec<wgpu::BindGroupEntry> = uses_dims.then(|| wgpu::BindGroupEntry { binding: 0, resource: dims.as_entire_binding() }).into_iter().collect();
        all.extend(entries.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }));
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &all })
    }

    /// One CD-1 update on `batch` (a device buffer of `cases × n_visible`), submitted; nothing
    /// is read back.
    pub fn train_batch(&mut self, ctx: &GpuContext, batch: &wgpu::Buffer) {
        self.submit_batch(ctx, batch, None);
    }

    /// The batch's parameters written, its dispatches submitted (one pass each: each reads what
    /// the previous one wrote), the sampling step moved on. With `timestamps` (a query set and
    /// its first index), each pass writes its start and end there.
    fn submit_batch(&mut self, ctx: &GpuContext, batch: &wgpu::Buffer, timestamps: Option<(&wgpu::QuerySet, u32)>) {
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
        if !self.batch_steps.contains_key(batch) {
            let steps = self.steps_for(ctx, batch);
            self.batch_steps.insert(batch.clone(), steps);
        }
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record(&mut encoder, &self.batch_steps[batch], timestamps);
        ctx.queue.submit([encoder.finish()]);
        self.step += 1;
    }

    /// A CD-1 batch's dispatches on `batch`, in order: the bind groups depend only on the
    /// buffers (the parameters of the step are in `params`), so they are made once per batch
    /// buffer and kept (`batch_steps`).
    fn steps_for(&self, ctx: &GpuContext, batch: &wgpu::Buffer) -> Vec<Step> {
        let g = self.layer.geometry;
        let count = self.cases * g.n_hidden();
        let p = &self.pipelines;
        let sample_groups = (count as u32).div_ceil(256);
        let mut steps = Vec::new();
        self.push_up(ctx, "up (data)", batch, &self.hidden0, &mut steps);
        steps.push(step("sample_hidden", &p.sample_hidden, self.bind(ctx, &p.sample_hidden, &[(1, &self.params), (6, &self.hidden0), (8, &self.samples)]), (sample_groups.min(MAX_GROUPS), sample_groups.div_ceil(MAX_GROUPS), 1), 0.0));
        self.push_down(ctx, &self.samples, &mut steps);
        self.push_up(ctx, "up (reconstruction)", &self.visible1, &self.hidden1, &mut steps);
        // Tied: the one bank's gradient runs over every position, with the whole layer's dims.
        let updates: Vec<(&wgpu::Buffer, &BankGroup, usize)> = if g.tied { vec![(&self.dims, &self.groups[0], 1)] } else { self.groups.iter().map(|gr| (&gr.dims, gr, gr.positions)).collect() };
        let (rows, columns) = p.tiling.block();
        let (units, width) = (g.hidden_per_patch as u32, g.patch_inputs() as u32);
        // Per bank: [X0; X1]ᵀ [H0; −H1] over 2 · cases (· positions when tied) rows.
        let depth = 2 * self.cases * if g.tied { g.positions() } else { 1 };
        for (k, (dims, group, banks)) in updates.into_iter().enumerate() {
            steps.push(step(
                &self.group_label("weight_update", k),
                &p.weight_update,
                self.bind_with(ctx, &p.weight_update, dims, &[(1, &self.params), (2, &group.weights), (3, &group.velocity), (4, batch), (5, &self.visible1), (6, &self.hidden0), (7, &self.hidden1)]),
                (units.div_ceil(columns), width.div_ceil(rows), banks as u32),
                2.0 * (depth * g.patch_inputs() * g.hidden_per_patch * banks) as f64,
            ));
        }
        steps.push(step("visible_bias_update", &p.visible_bias_update, self.bind(ctx, &p.visible_bias_update, &[(1, &self.params), (2, &self.visible_bias), (3, &self.visible_velocity), (4, batch), (5, &self.visible1)]), ((g.n_visible() as u32).div_ceil(64), 1, 1), 0.0));
        steps.push(step(
            "hidden_bias_update",
            &p.hidden_bias_update,
            self.bind(ctx, &p.hidden_bias_update, &[(1, &self.params), (2, &self.hidden_bias), (3, &self.hidden_velocity), (6, &self.hidden0), (7, &self.hidden1)]),
            ((g.hidden_bias_count() as u32).div_ceil(64), 1, 1),
            0.0,
        ));
        steps
    }

    /// `name`, with the bank group where there are several.
    fn group_label(&self, name: &str, k: usize) -> String {
        if self.groups.len() > 1 && !(name == "weight_update" && self.layer.geometry.tied) {
            format!("{name} (group {} of {})", k + 1, self.groups.len())
        } else {
            name.to_string()
        }
    }

    /// The up pass `output = σ(c + up(input))`, one dispatch per bank group.
    fn push_up(&self, ctx: &GpuContext, name: &str, input: &wgpu::Buffer, output: &wgpu::Buffer, steps: &mut Vec<Step>) {
        let g = self.layer.geometry;
        let (units, cases) = (g.hidden_per_patch as u32, self.cases as u32);
        let (rows, columns) = self.pipelines.tiling.block();
        for (k, group) in self.groups.iter().enumerate() {
            let bind = self.bind_with(ctx, &self.pipelines.up, &group.dims, &[(1, &group.weights), (2, &self.hidden_bias), (3, input), (4, output)]);
            let flop = 2.0 * (self.cases * g.patch_inputs() * g.hidden_per_patch * group.positions) as f64;
            steps.push(step(&self.group_label(name, k), &self.pipelines.up, bind, (units.div_ceil(columns), cases.div_ceil(rows), group.positions as u32), flop));
        }
    }

    /// The down pass from `hidden` into `visible1`: per bank group its products, then its
    /// share of the gather.
    fn push_down(&self, ctx: &GpuContext, hidden: &wgpu::Buffer, steps: &mut Vec<Step>) {
        let g = self.layer.geometry;
        let p = &self.pipelines;
        let (cases, width) = (self.cases as u32, g.patch_inputs() as u32);
        let (rows, columns) = p.tiling.block();
        for (k, group) in self.groups.iter().enumerate() {
            let flop = 2.0 * (self.cases * g.patch_inputs() * g.hidden_per_patch * group.positions) as f64;
            let bind = self.bind_with(ctx, &p.down_products, &group.dims, &[(1, &group.weights), (3, hidden), (4, &self.products)]);
            steps.push(step(&self.group_label("down_products", k), &p.down_products, bind, (width.div_ceil(columns), cases.div_ceil(rows), group.positions as u32), flop));
            let bind = self.bind_with(ctx, &p.gather, &group.dims, &[(2, &self.visible_bias), (3, &self.products), (4, &self.visible1), (5, &group.cover_starts), (6, &group.cover_entries)]);
            steps.push(step(&self.group_label("gather", k), &p.gather, bind, ((g.n_visible() as u32).div_ceil(64), cases, 1), 0.0));
        }
    }

    /// Runs `steps` in one submission, one pass each (each reads what the previous one wrote).
    fn submit(ctx: &GpuContext, steps: &[Step]) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record(&mut encoder, steps, None);
        ctx.queue.submit([encoder.finish()]);
    }

    /// The next layer's input from `batch` (a device buffer of `cases × n_visible`): the hidden
    /// probabilities `σ(c + up(batch))` in a new buffer (`cases × n_hidden`, the feature map),
    /// and their column sums added into `sums` (`n_hidden` floats), all on the device.
    pub fn propagate(&self, ctx: &GpuContext, batch: &wgpu::Buffer, sums: &wgpu::Buffer) -> wgpu::Buffer {
        let g = self.layer.geometry;
        let p = &self.pipelines;
        let hidden = zeros_f32(ctx, "local_propagated", self.cases * g.n_hidden());
        let mut steps = Vec::new();
        self.push_up(ctx, "up", batch, &hidden, &mut steps);
        steps.push(step("column_sums", &p.column_sums, self.bind(ctx, &p.column_sums, &[(3, &hidden), (4, sums)]), ((g.n_hidden() as u32).div_ceil(64), 1, 1), 0.0));
        Self::submit(ctx, &steps);
        hidden
    }

    /// The mean-field reconstruction of `batch` (`cases × n_visible`) by the model as it
    /// stands: `E[v | h]` with `h = σ(c + up(batch))` (the CPU's `reconstruction_error`'s
    /// reconstruction), read back. Uses the batch's intermediates (`hidden0`, `products`,
    /// `visible1`): call it between batches, not during one.
    pub async fn reconstruct(&self, ctx: &GpuContext, batch: &wgpu::Buffer) -> Result<Vec<f32>, GpuError> {
        let g = self.layer.geometry;
        let mut steps = Vec::new();
        self.push_up(ctx, "up", batch, &self.hidden0, &mut steps);
        self.push_down(ctx, &self.hidden0, &mut steps);
        Self::submit(ctx, &steps);
        let parts = read_ranges(ctx, &[(&self.visible1, 0, (self.cases * g.n_visible() * 4) as u64)]).await?;
        Ok(bytemuck::pod_collect_to_vec::<u8, f32>(&parts[0]))
    }

    /// Where a batch's time goes: GPU timestamps around every dispatch of `batches` CD-1
    /// batches on `batch` (each dispatch in its own pass, as training records them), each
    /// dispatch's mean, their sum and the batch's span. Trains those batches (the model moves:
    /// use a spare trainer). Needs the adapter's `TIMESTAMP_QUERY` feature.
    pub async fn profile(&mut self, ctx: &GpuContext, batch: &wgpu::Buffer, batches: usize) -> Result<LocalProfile, GpuError> {
        if !ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err(GpuError(format!("{} ({:?}) offers no timestamp queries (wgpu::Features::TIMESTAMP_QUERY), so the batch cannot be profiled", ctx.adapter_info.name, ctx.adapter_info.backend)));
        }
        if !self.batch_steps.contains_key(batch) {
            let steps = self.steps_for(ctx, batch);
            self.batch_steps.insert(batch.clone(), steps);
        }
        let per_batch = self.batch_steps[batch].len();
        let batches = batches.clamp(1, MAX_QUERIES / (2 * per_batch));
        let count = (2 * per_batch * batches) as u32;
        let device = &ctx.device;
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("local_rbm_profile"), ty: wgpu::QueryType::Timestamp, count });
        let resolved = device.create_buffer(&wgpu::BufferDescriptor { label: Some("local_rbm_profile_ticks"), size: 8 * count as u64, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        for b in 0..batches {
            self.submit_batch(ctx, batch, Some((&queries, (2 * per_batch * b) as u32)));
        }
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("local_rbm_profile") });
        encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
        ctx.queue.submit([encoder.finish()]);
        let bytes = read_ranges(ctx, &[(&resolved, 0, 8 * count as u64)]).await?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes[0]);
        let us_per_tick = ctx.queue.get_timestamp_period() as f64 / 1000.0;
        let between = |from: usize, to: usize| ticks[to].saturating_sub(ticks[from]) as f64 * us_per_tick;
        let mean = |f: &dyn Fn(usize) -> f64| (0..batches).map(f).sum::<f64>() / batches as f64;
        let steps = &self.batch_steps[batch];
        let dispatches: Vec<LocalDispatchTime> = steps
            .iter()
            .enumerate()
            .map(|(i, st)| LocalDispatchTime { label: st.label.clone(), microseconds: mean(&|b| between(2 * (per_batch * b + i), 2 * (per_batch * b + i) + 1)), gflop: st.flop / 1e9 })
            .collect();
        Ok(LocalProfile {
            tiling: self.pipelines.tiling.describe(),
            batches,
            bank_groups: self.groups.len(),
            dispatch_sum_us: dispatches.iter().map(|d| d.microseconds).sum(),
            batch_span_us: mean(&|b| between(2 * per_batch * b, 2 * per_batch * (b + 1) - 1)),
            gflop: steps.iter().map(|st| st.flop).sum::<f64>() / 1e9,
            dispatches,
        })
    }

    /// The model and its velocities (weights, hidden biases, visible biases) as they stand on
    /// the device: the state a lost device resumes from on the CPU. One read-back per bank
    /// group's weights and velocities (a staging buffer holds no more than a binding), one for
    /// the biases.
    pub async fn state(&self, ctx: &GpuContext) -> Result<(LocalRbm, LocalVelocities), GpuError> {
        let floats = |bytes: &[u8]| bytemuck::pod_collect_to_vec::<u8, f32>(bytes);
        let g = self.layer.geometry;
        let (nh, nv) = (g.hidden_bias_count(), g.n_visible());
        let mut weights = Vec::with_capacity(g.weight_count());
        let mut velocity = Vec::with_capacity(g.weight_count());
        let shared = if g.tied { &self.groups[..1] } else { &self.groups[..] };
        for group in shared {
            let size = group.weights.size().min((g.weight_count() * 4) as u64);
            for (buffer, out) in [(&group.weights, &mut weights), (&group.velocity, &mut velocity)] {
                let parts = read_ranges(ctx, &[(buffer, 0, size)]).await?;
                out.extend(floats(&parts[0]));
            }
        }
        let bytes = |len: usize| (len * 4) as u64;
        let parts = read_ranges(
            ctx,
            &[
                (&self.hidden_bias, 0, bytes(nh)),
                (&self.visible_bias, 0, bytes(nv)),
                (&self.hidden_velocity, 0, bytes(nh)),
                (&self.visible_velocity, 0, bytes(nv)),
            ],
        )
        .await?;
        let layer = LocalRbm { geometry: g, visible_units: self.layer.visible_units, weights, hidden_bias: floats(&parts[0]), visible_bias: floats(&parts[1]) };
        Ok((layer, LocalVelocities { weights: velocity, hidden_bias: floats(&parts[2]), visible_bias: floats(&parts[3]) }))
    }

    /// The model as it stands on the device.
    pub async fn model(&self, ctx: &GpuContext) -> Result<LocalRbm, GpuError> {
        Ok(self.state(ctx).await?.0)
    }
}

fn step(label: &str, pipeline: &wgpu::ComputePipeline, bind_group: wgpu::BindGroup, groups: (u32, u32, u32), flop: f64) -> Step {
    Step { label: label.to_string(), pipeline: pipeline.clone(), bind_group, groups, flop }
}

/// `steps` into `encoder`, one compute pass each; with `timestamps` (a query set and the first
/// index), pass i writes its start at index + 2i and its end at index + 2i + 1.
fn record(encoder: &mut wgpu::CommandEncoder, steps: &[Step], timestamps: Option<(&wgpu::QuerySet, u32)>) {
    for (i, st) in steps.iter().enumerate() {
        let writes = timestamps.map(|(query_set, first)| {
            let at = first + 2 * i as u32;
            wgpu::ComputePassTimestampWrites { query_set, beginning_of_pass_write_index: Some(at), end_of_pass_write_index: Some(at + 1) }
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&st.label), timestamp_writes: writes });
        pass.set_pipeline(&st.pipeline);
        pass.set_bind_group(0, &st.bind_group, &[]);
        pass.dispatch_workgroups(st.groups.0, st.groups.1, st.groups.2);
    }
}

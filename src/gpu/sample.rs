//! Host side of `shaders/sample.wgsl`: Bernoulli samples of a probability buffer and Gaussian
//! noise added in place, on device buffers, from the Philox stream of `src/rng.rs`.
//!
//! Parity with the CPU reference:
//! - [`SampleOp::bernoulli`] equals `CpuBackend::bernoulli` bit for bit on the same
//!   probabilities (integer Philox, exact 24-bit uniforms, one comparison);
//! - [`SampleOp::gaussian_noise`] equals `Backend::add_gaussian_noise` to about 1e-6 absolute
//!   (ln and cos from polynomials on the GPU, libm on the CPU); the tests allow 1e-4.
//!
//! Also here: [`philox_blocks`] and [`uniforms`], which run the WGSL Philox on given inputs and
//! read the result back, for the parity tests and self-checks.

use super::buffers::{self, window, StepTable};
use super::gemm::VecRef;
use super::shader::{self, PipelineCache, SlotDispatch};
use super::{GpuContext, GpuError};
use crate::rng::RngStream;
use bytemuck::{Pod, Zeroable};

const SOURCE: &str = include_str!("../../shaders/sample.wgsl");
const WORKGROUP: u32 = 256;

#[derive(Clone, Copy, Debug)]
pub enum SampleKind<'a> {
    /// `out[k] = uniform(index_base + k) < probabilities[k] ? 1 : 0`.
    Bernoulli { probabilities: VecRef<'a> },
    /// `out[k] += N(0, 1)` from uniforms `2E`, `2E + 1`, `E = index_base + k` (Box–Muller).
    GaussianNoise,
}

/// One sampling pass over `len` elements of `out`.
#[derive(Clone, Copy, Debug)]
pub struct SampleOp<'a> {
    pub kind: SampleKind<'a>,
    pub out: VecRef<'a>,
    pub len: u32,
    /// Step: `stream.step + slot.step`.
    pub stream: RngStream,
    /// Stream index of element 0 (0 reproduces the CPU calls on a whole buffer).
    pub index_base: u64,
    pub slots: Option<&'a StepTable>,
}

impl<'a> SampleOp<'a> {
    pub fn bernoulli(probabilities: &'a wgpu::Buffer, out: &'a wgpu::Buffer, len: u32, stream: RngStream) -> Self {
        SampleOp { kind: SampleKind::Bernoulli { probabilities: VecRef::new(probabilities) }, out: VecRef::new(out), len, stream, index_base: 0, slots: None }
    }

    pub fn gaussian_noise(values: &'a wgpu::Buffer, len: u32, stream: RngStream) -> Self {
        SampleOp { kind: SampleKind::GaussianNoise, out: VecRef::new(values), len, stream, index_base: 0, slots: None }
    }

    pub fn slots(mut self, slots: &'a StepTable) -> Self {
        self.slots = Some(slots);
        self
    }
}

/// `struct Params` of sample.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Params {
    pub len: u32,
    pub in_offset: u32,
    pub out_offset: u32,
    pub purpose: u32,
    pub key: [u32; 2],
    pub step: [u32; 2],
    pub index_base: [u32; 2],
    pub invocations: u32,
    pub _pad: u32,
}

/// sample.wgsl as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SOURCE, &[], true)
}

/// The Philox check kernel ([`philox_blocks`], [`uniforms`]) as compiled.
pub(crate) fn probe_source() -> String {
    shader::assemble(PROBE, &[], true)
}

pub struct SampleKernels {
    layout: wgpu::BindGroupLayout,
    pipelines: PipelineCache,
    unused_read: wgpu::Buffer,
    zero_slot: StepTable,
}

/// A prepared sampling pass (see [`super::gemm::GemmCall`]).
pub struct SampleCall(SlotDispatch);

impl SampleCall {
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        self.0.record(pass, slot);
    }
}

impl SampleKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sample"),
            entries: &[
                shader::buffer_entry(0, Uniform, false),
                shader::buffer_entry(1, Uniform, true),
                shader::buffer_entry(2, Storage { read_only: true }, false),
                shader::buffer_entry(3, Storage { read_only: false }, false),
            ],
        });
        let pipelines = PipelineCache::new(&ctx.device, "sample", &layout);
        SampleKernels {
            pipelines,
            layout,
            unused_read: buffers::zeros(ctx, "sample_unused_read", 16),
            zero_slot: StepTable::new(ctx, &[buffers::StepSlot::default()]),
        }
    }

    pub fn prepare(&self, ctx: &GpuContext, op: &SampleOp) -> Result<SampleCall, GpuError> {
        let len = op.len as u64;
        let (entry, input, per_invocation, base_skip) = match op.kind {
            SampleKind::Bernoulli { probabilities } => {
                if probabilities.buffer == op.out.buffer {
                    return Err(GpuError("bernoulli: probabilities and samples must be different buffers".into()));
                }
                ("bernoulli", Some(probabilities), 4, op.index_base & 3)
            }
            SampleKind::GaussianNoise => ("gaussian_noise", None, 2, op.index_base & 1),
        };
        let pipeline = self.pipelines.get(&ctx.device, "sample", entry, source);
        let in_window = match input {
            Some(p) if len > 0 => Some(window(ctx, p.buffer, p.offset * 4, Some(len * 4), "sample input")?),
            _ => None,
        };
        let out_window = window(ctx, op.out.buffer, op.out.offset * 4, Some(len * 4), "sample output")?;
        let invocations = u32::try_from((len + base_skip).div_ceil(per_invocation)).expect("len < 2^32");
        let params = Params {
            len: op.len,
            in_offset: in_window.as_ref().map_or(0, |w| (w.residual / 4) as u32),
            out_offset: (out_window.residual / 4) as u32,
            purpose: op.stream.purpose as u32,
            key: op.stream.key,
            step: [op.stream.step as u32, (op.stream.step >> 32) as u32],
            index_base: [op.index_base as u32, (op.index_base >> 32) as u32],
            invocations,
            _pad: 0,
        };
        let params = crate::gpu::buffers::uniform_bytes(ctx, "sample_params", bytemuck::bytes_of(&params));
        let slots = op.slots.unwrap_or(&self.zero_slot);
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sample"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: slots.binding() },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: match in_window {
                        Some(w) => wgpu::BindingResource::Buffer(w.binding),
                        None => self.unused_read.as_entire_binding(),
                    },
                },
                wgpu::BindGroupEntry { binding: 3, resource: wgpu::BindingResource::Buffer(out_window.binding) },
            ],
        });
        Ok(SampleCall(SlotDispatch::new(pipeline, bind_group, if len == 0 { (0, 0, 0) } else { shader::grid(invocations.div_ceil(WORKGROUP)) }, slots)))
    }

    /// Prepares `op` and records it as one compute pass of `encoder` (slot 0).
    pub fn record(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder, op: &SampleOp) -> Result<(), GpuError> {
        let call = self.prepare(ctx, op)?;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sample"), timestamp_writes: None });
        call.dispatch(&mut pass, 0);
        Ok(())
    }
}

/// A check kernel: runs the WGSL Philox on inputs read from a buffer.
const PROBE: &str = r#"
@group(0) @binding(0) var<storage, read> cases: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> results: array<vec4<u32>>;

// Case t: cases[2t] = counter, cases[2t + 1].xy = key -> results[t] = the Philox block.
@compute @workgroup_size(64)
fn blocks(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = id.x;
    if (2u * t + 1u >= arrayLength(&cases)) {
        return;
    }
    results[t] = philox4x32_10(cases[2u * t], cases[2u * t + 1u].xy);
}

// Case t: cases[2t] = (key0, key1, step_lo, step_hi), cases[2t + 1] = (purpose, index_lo,
// index_hi, _) -> results[t].x = the uniform's f32 bits.
@compute @workgroup_size(64)
fn uniforms(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = id.x;
    if (2u * t + 1u >= arrayLength(&cases)) {
        return;
    }
    let a = cases[2u * t];
    let b = cases[2u * t + 1u];
    results[t] = vec4<u32>(bitcast<u32>(rng_uniform(a.xy, a.z, a.w, b.x, b.y, b.z)), 0u, 0u, 0u);
}
"#;

async fn run_probe(ctx: &GpuContext, entry: &str, cases: &[[u32; 4]]) -> Result<Vec<[u32; 4]>, GpuError> {
    let count = cases.len() / 2;
    if count == 0 {
        return Ok(Vec::new());
    }
    let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("philox_probe"),
        source: wgpu::ShaderSource::Wgsl(probe_source().into()),
    });
    let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("philox_probe"),
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    });
    let input = buffers::upload(ctx, "probe_cases", cases);
    let output = buffers::zeros(ctx, "probe_results", 16 * count as u64);
    let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("philox_probe"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
        ],
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        let groups = (count as u32).div_ceil(64);
        let (x, y, z) = shader::grid(groups);
        assert!(y == 1 && z == 1, "at most 65,535 × 64 probe cases");
        pass.dispatch_workgroups(x, y, z);
    }
    ctx.queue.submit([encoder.finish()]);
    buffers::read_back::<[u32; 4]>(ctx, &output, 0, count).await
}

/// `philox4x32_10(counter, key)` computed by the WGSL snippet, for each case.
pub async fn philox_blocks(ctx: &GpuContext, cases: &[([u32; 4], [u32; 2])]) -> Result<Vec<[u32; 4]>, GpuError> {
    let input: Vec<[u32; 4]> = cases.iter().flat_map(|(c, k)| [*c, [k[0], k[1], 0, 0]]).collect();
    run_probe(ctx, "blocks", &input).await
}

/// `stream.uniform(index)` computed by the WGSL snippet's `rng_uniform`, for each case.
pub async fn uniforms(ctx: &GpuContext, cases: &[(RngStream, u64)]) -> Result<Vec<f32>, GpuError> {
    let input: Vec<[u32; 4]> = cases
        .iter()
        .flat_map(|(s, i)| [[s.key[0], s.key[1], s.step as u32, (s.step >> 32) as u32], [s.purpose as u32, *i as u32, (*i >> 32) as u32, 0]])
        .collect();
    Ok(run_probe(ctx, "uniforms", &input).await?.into_iter().map(|r| f32::from_bits(r[0])).collect())
}

//! Host side of `shaders/rtrl_sensitivity.wgsl` (issue 20): one layer's RTRL sensitivity update
//! for one weight block, `deriv ⊙ (Σ_t A_t · B_t + the Kronecker term)`, on the device, the
//! CPU reference being `recurrent::rtrl`'s `update_history` (`tests/gpu_rtrl.rs` compares them).
//!
//! The terms' matrices go side by side (`A = [A_1 | A_2 | …]`, `rows × K`) and their tensors are
//! stacked (`B = [B_1; B_2; …]`, `K × P`), so the sum is one product. `P` is cut into column
//! chunks whose `B` and output each fit the device's storage binding size (WebGPU's default is
//! 128 MiB; a 256-unit layer's tensor for a 256 × 256 matrix is 64 MiB, its stacked sources more),
//! one dispatch per chunk.
//!
//! This is the kernel and its parity with the CPU, one call at a time with uploads and a
//! read-back; the resident RTRL step (tensors kept on the device across steps, the engine's
//! entry and fall-back) is not built yet (docs/RECURRENT.md).

use super::{GpuContext, GpuError};
use crate::recurrent::products::Term;
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/rtrl_sensitivity.wgsl");
const TILE: u32 = 16;

/// `struct Dims` of rtrl_sensitivity.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SensitivityDims {
    pub rows: u32,
    pub k: u32,
    pub width: u32,
    pub block_cols: u32,
    pub col0: u32,
    pub own: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// The kernel as compiled.
pub(crate) fn source() -> String {
    super::shader::assemble(SHADER, &[], false)
}

/// The Kronecker term of the block's destination layer: the block's width and its source.
#[derive(Clone, Copy)]
pub struct OwnTerm<'a> {
    pub block_cols: usize,
    pub source: &'a [f32],
}

/// Columns per chunk so that `k × width` and `rows × width` f32 each fit `binding_bytes`.
pub fn chunk_width(rows: usize, k: usize, p: usize, binding_bytes: u64) -> Result<usize, GpuError> {
    let widest = rows.max(k).max(1) as u64 * 4;
    let width = (binding_bytes / widest).min(p as u64) as usize;
    if width == 0 {
        return Err(GpuError(format!("a sensitivity column of {} values exceeds the storage binding size of {binding_bytes} bytes", rows.max(k))));
    }
    Ok(width)
}

/// `out (rows × p) = deriv ⊙ (Σ terms + own)`, on the device; `binding_bytes` caps each chunk's
/// buffers (the device's limit when `None`).
pub async fn sensitivity_update(ctx: &GpuContext, rows: usize, p: usize, terms: &[Term<'_>], deriv: &[f32], own: Option<OwnTerm<'_>>, binding_bytes: Option<u64>) -> Result<Vec<f32>, GpuError> {
    assert_eq!(deriv.len(), rows);
    let k: usize = terms.iter().map(|t| t.k).sum();
    for t in terms {
        assert!(t.a.len() == rows * t.k && t.b.len() == t.k * p, "term sizes");
    }
    let limits = ctx.device.limits();
    let binding = binding_bytes.unwrap_or(limits.max_storage_buffer_binding_size.min(limits.max_buffer_size));
    let width = chunk_width(rows, k, p, binding)?;
    // A = [A_1 | A_2 | …], rows × K.
    let mut a = Vec::with_capacity(rows * k);
    for j in 0..rows {
        for t in terms {
            a.extend_from_slice(&t.a[j * t.k..(j + 1) * t.k]);
        }
    }
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_sensitivity"), source: wgpu::ShaderSource::Wgsl(source().into()) });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("rtrl_sensitivity"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    // Bindings may not be empty: a layer with no incoming tensors binds one zero.
    let storage = |label, data: &[f32]| {
        let data = if data.is_empty() { &[0.0f32][..] } else { data };
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(data), usage: wgpu::BufferUsages::STORAGE })
    };
    let (a_buffer, deriv_buffer) = (storage("a", &a), storage("deriv", deriv));
    let source_buffer = storage("source", own.map(|o| o.source).unwrap_or(&[]));
    let mut out = vec![0.0f32; rows * p];
    let mut col0 = 0;
    while col0 < p {
        let w = width.min(p - col0);
        let mut b = Vec::with_capacity(k * w);
        for t in terms {
            for l in 0..t.k {
                b.extend_from_slice(&t.b[l * p + col0..l * p + col0 + w]);
            }
        }
        let dims = SensitivityDims {
            rows: rows as u32,
            k: k as u32,
            width: w as u32,
            block_cols: own.map_or(1, |o| o.block_cols) as u32,
            col0: col0 as u32,
            own: own.is_some() as u32,
            _pad0: 0,
            _pad1: 0,
        };
        let dims = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
        let b_buffer = storage("b", &b);
        let output = device.create_buffer(&wgpu::BufferDescriptor { label: Some("out"), size: (rows * w * 4) as u64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("rtrl_sensitivity"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: dims.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: deriv_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: source_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: output.as_entire_binding() },
            ],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups((w as u32).div_ceil(TILE), (rows as u32).div_ceil(TILE), 1);
        }
        ctx.queue.submit([encoder.finish()]);
        let chunk = ctx.read_back(&output, rows * w).await?;
        for j in 0..rows {
            out[j * p + col0..j * p + col0 + w].copy_from_slice(&chunk[j * w..(j + 1) * w]);
        }
        col0 += w;
    }
    Ok(out)
}

//! Device buffers for the kernels: uploads, zero-filled buffers, read-back of any element type,
//! waiting for the queue, the per-batch [`StepTable`], and binding windows.
//!
//! Buffers made here carry `STORAGE | COPY_SRC | COPY_DST`, so any of them can be a kernel
//! operand, be read back, or be rewritten with `queue.write_buffer`.

use super::{GpuContext, GpuError};
use bytemuck::{Pod, Zeroable};

/// Usage of every buffer made here.
pub const STORAGE_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// `create_buffer_init` without its panic: on a lost device the new buffer is invalid and
/// mapping it fails, which here leaves it unwritten; the failure reaches the caller through
/// the device's recorded error at the next read-back (GpuContext::failure), so training falls
/// back to the CPU instead of aborting.
pub fn buffer_with(device: &wgpu::Device, label: &str, contents: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    let size = (contents.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(wgpu::COPY_BUFFER_ALIGNMENT);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: true });
    if let Ok(mut view) = buffer.slice(..).get_mapped_range_mut() {
        view.slice(..contents.len()).copy_from_slice(contents);
    }
    buffer.unmap();
    buffer
}

/// A uniform buffer holding `contents`, written through the queue. Plans are rebuilt whenever
/// k changes, possibly on a device already lost, where `create_buffer_init`'s mapping panics;
/// a write to a lost device only records the failure that the next read-back reports.
pub fn uniform_bytes(ctx: &GpuContext, label: &str, contents: &[u8]) -> wgpu::Buffer {
    let size = (contents.len() as u64).next_multiple_of(4).max(4);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
    let mut padded = contents.to_vec();
    padded.resize(size as usize, 0);
    ctx.queue.write_buffer(&buffer, 0, &padded);
    buffer
}

/// A storage buffer holding `data` (4-byte elements: f32, u32).
pub fn upload<T: Pod>(ctx: &GpuContext, label: &str, data: &[T]) -> wgpu::Buffer {
    assert_eq!(std::mem::size_of::<T>() % 4, 0, "storage elements are 4-byte multiples");
    if data.is_empty() {
        return zeros(ctx, label, 4);
    }
    buffer_with(&ctx.device, label, bytemuck::cast_slice(data), STORAGE_USAGE)
}

/// A storage buffer holding `bytes` packed 4 per u32 (little-endian), zero-padded to a multiple
/// of 4 bytes: u8 pixels as the GEMM's `Element::U8` operand reads them.
pub fn upload_bytes(ctx: &GpuContext, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().next_multiple_of(4).max(4), 0);
    buffer_with(&ctx.device, label, &padded, STORAGE_USAGE)
}

/// A zero-filled storage buffer of `bytes` bytes (rounded up to a multiple of 4).
pub fn zeros(ctx: &GpuContext, label: &str, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.next_multiple_of(4).max(4), usage: STORAGE_USAGE, mapped_at_creation: false })
}

/// A zero-filled storage buffer of `len` f32.
pub fn zeros_f32(ctx: &GpuContext, label: &str, len: usize) -> wgpu::Buffer {
    zeros(ctx, label, 4 * len as u64)
}

/// Resolves once the GPU has finished everything submitted so far.
pub async fn wait_idle(ctx: &GpuContext) -> Result<(), GpuError> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    ctx.queue.on_submitted_work_done(move || {
        let _ = sender.send(());
    });
    #[cfg(not(target_arch = "wasm32"))]
    ctx.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| GpuError(format!("device lost while waiting ({e})")))?;
    receiver.await.map_err(|_| GpuError("the device dropped the completion callback".into()))
}

/// Copies `len` elements of `source` starting at element `offset` back to the host. A single
/// submission of its own; never call it inside a training step.
pub async fn read_back<T: Pod>(ctx: &GpuContext, source: &wgpu::Buffer, offset: u64, len: usize) -> Result<Vec<T>, GpuError> {
    let size = std::mem::size_of::<T>() as u64;
    let bytes = len as u64 * size;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let (start, copy) = ((offset * size) & !3, (bytes + (offset * size) % 4).next_multiple_of(4));
    let parts = super::read_ranges(ctx, &[(source, start, copy)]).await?;
    let skip = ((offset * size) % 4) as usize;
    let mut values = vec![T::zeroed(); len];
    bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(&parts[0][skip..skip + bytes as usize]);
    Ok(values)
}

/// Per-batch values of a prepared kernel call, picked at dispatch time with a dynamic offset:
/// the RNG step (added to the call's stream step) and a row shift (added to a gathered
/// operand's start in its order buffer). One call prepared once then serves every batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepSlot {
    pub step: u64,
    pub row_shift: u32,
}

/// One [`StepSlot`] as the shaders read it: `struct Slot` of gemm.wgsl, sample.wgsl and
/// gather.wgsl (tests/gpu_uniform_layout.rs compares them).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct SlotRaw {
    pub step: [u32; 2],
    pub row_shift: u32,
    pub _pad: u32,
}

/// Size of one slot as the shaders read it (`struct Slot` in gemm.wgsl / sample.wgsl).
pub const SLOT_BYTES: u64 = 16;

/// A uniform buffer of [`StepSlot`]s, one per `min_uniform_buffer_offset_alignment` (256 bytes
/// by default). A trainer writes a whole epoch's slots once, prepares its calls with the
/// table, and dispatches batch `b` as slot `b`.
#[derive(Debug)]
pub struct StepTable {
    buffer: wgpu::Buffer,
    stride: u32,
    len: u32,
}

impl StepTable {
    pub fn new(ctx: &GpuContext, slots: &[StepSlot]) -> Self {
        let stride = ctx.device.limits().min_uniform_buffer_offset_alignment.max(SLOT_BYTES as u32);
        let len = slots.len().max(1) as u32;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step_table"),
            size: stride as u64 * len as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let table = StepTable { buffer, stride, len };
        table.write(&ctx.queue, 0, slots);
        table
    }

    /// Overwrites slots `first..first + slots.len()` (takes effect at the next submission:
    /// do not rewrite a slot that commands of the same submission still read).
    pub fn write(&self, queue: &wgpu::Queue, first: u32, slots: &[StepSlot]) {
        assert!(first as usize + slots.len() <= self.len as usize, "step table has {} slots", self.len);
        if slots.is_empty() {
            return;
        }
        let mut bytes = vec![0u8; self.stride as usize * slots.len()];
        for (chunk, slot) in bytes.chunks_mut(self.stride as usize).zip(slots) {
            let raw = SlotRaw { step: [slot.step as u32, (slot.step >> 32) as u32], row_shift: slot.row_shift, _pad: 0 };
            chunk[..SLOT_BYTES as usize].copy_from_slice(bytemuck::bytes_of(&raw));
        }
        queue.write_buffer(&self.buffer, first as u64 * self.stride as u64, &bytes);
    }

    /// The dynamic offset of slot `index`.
    pub fn offset(&self, index: u32) -> u32 {
        assert!(index < self.len, "slot {index} of a {}-slot step table", self.len);
        index * self.stride
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub(crate) fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &self.buffer, offset: 0, size: wgpu::BufferSize::new(SLOT_BYTES) })
    }
}

/// A part of a buffer bound to a kernel: the binding starts at an allowed offset at or before the
/// operand, and the kernel adds `residual` (in bytes) to its indices.
pub(crate) struct Window<'a> {
    pub binding: wgpu::BufferBinding<'a>,
    pub residual: u64,
}

/// Binds bytes `offset..offset + len` of `buffer` (or, for `len = None`, up to its end).
pub(crate) fn window<'a>(ctx: &GpuContext, buffer: &'a wgpu::Buffer, offset: u64, len: Option<u64>, what: &str) -> Result<Window<'a>, GpuError> {
    let limits = ctx.device.limits();
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let end = match len {
        Some(len) => offset + len,
        None => buffer.size(),
    };
    if end > buffer.size() || offset > end {
        return Err(GpuError(format!("{what}: bytes {offset}..{end} lie outside its {}-byte buffer", buffer.size())));
    }
    let start = offset / align * align;
    let size = (end - start).next_multiple_of(4).max(4).min(buffer.size() - start);
    if size > limits.max_storage_buffer_binding_size {
        return Err(GpuError(format!(
            "{what}: {size} bytes exceed this device's storage binding limit of {} bytes; split the operand, or use a device with larger limits",
            limits.max_storage_buffer_binding_size
        )));
    }
    Ok(Window { binding: wgpu::BufferBinding { buffer, offset: start, size: wgpu::BufferSize::new(size) }, residual: offset - start })
}

/// A device with the adapter's own limits instead of WebGPU's defaults (e.g. storage bindings
/// over 128 MiB for an 8192² f32 matrix). For benchmarks; the page keeps the defaults.
pub async fn context_with_adapter_limits() -> Result<GpuContext, GpuError> {
    GpuContext::with(|adapter| wgpu::DeviceDescriptor {
        label: Some("deepbelief (adapter limits)"),
        required_limits: adapter.limits(),
        // Timestamps let `deepbelief bench --profile` see each dispatch; only where offered.
        required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
        ..Default::default()
    })
    .await
}

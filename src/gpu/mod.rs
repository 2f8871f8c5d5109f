//! The wgpu backend. This first slice holds device creation and one kernel
//! (`shaders/affine_sigmoid.wgsl`), checked against the CPU reference on lavapipe natively
//! and on WebGPU in headless Chromium. Each kernel family gets its own file here.

pub mod affine_sigmoid;
pub mod autoencoder;
#[cfg(not(target_arch = "wasm32"))]
pub mod blocking_backend;
pub mod ais;
pub mod buffers;
pub mod chains;
pub mod epoch_monitor;
pub mod evaluate;
pub mod gemm;
pub mod lbfgs;
pub mod local_rbm;
pub mod local_rbm_trainer;
pub mod mlp;
pub mod recurrent;
pub mod recurrent_fold;
pub mod recurrent_step;
pub mod sample;
pub mod shader;
pub mod sparse_coding;
pub mod reduce;
pub mod schedule;
pub mod trainer;
pub mod update;

use serde::Serialize;

#[derive(Debug)]
pub struct GpuError(pub String);

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "GPU: {}", self.0)
    }
}

impl std::error::Error for GpuError {}

#[derive(Clone)]
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_info: wgpu::AdapterInfo,
    /// The first uncaptured error or the loss of the device, once one happened.
    failure: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

#[derive(Serialize, Clone, Debug)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
}

impl GpuContext {
    /// Wraps a device so that its failures become errors of the next read-back instead of
    /// panics (wgpu's default for uncaptured errors): a lost or destroyed device, or work that
    /// failed validation, must let training fall back to the CPU with its state intact.
    pub fn from_parts(device: wgpu::Device, queue: wgpu::Queue, adapter_info: wgpu::AdapterInfo) -> Self {
        let failure = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let record = |slot: &std::sync::Arc<std::sync::Mutex<Option<String>>>, message: String| {
            if let Ok(mut slot) = slot.lock() {
                slot.get_or_insert(message);
            }
        };
        let on_error = failure.clone();
        device.on_uncaptured_error(std::sync::Arc::new(move |e: wgpu::Error| record(&on_error, format!("GPU error: {e}"))));
        let on_lost = failure.clone();
        device.set_device_lost_callback(move |reason, message| record(&on_lost, format!("the GPU device was lost ({reason:?}: {message})")));
        GpuContext { device, queue, adapter_info, failure }
    }

    /// The first failure of this device, if any: once set, results from it cannot be trusted.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Asks for a high-performance adapter with WebGPU's default limits, raised to what the
    /// adapter offers for buffer sizes (large layers need more than 128 MiB in one binding) and
    /// storage buffers per stage (up to 13, for the fused kernels; see `buffer_limits`).
    /// Natively the backend can be pinned with `WGPU_BACKEND` (CI pins Vulkan on Mesa lavapipe).
    pub async fn new() -> Result<Self, GpuError> {
        Self::with(|adapter| wgpu::DeviceDescriptor { label: Some("deepbelief"), required_limits: buffer_limits(&adapter.limits()), ..Default::default() }).await
    }

    /// The high-performance adapter's device, as `describe` asks for it given the adapter.
    pub async fn with(describe: impl FnOnce(&wgpu::Adapter) -> wgpu::DeviceDescriptor<'static>) -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() })
            .await
            .map_err(|e| GpuError(format!("no GPU adapter available ({e})")))?;
        let adapter_info = adapter.get_info();
        let (device, queue) = adapter.request_device(&describe(&adapter)).await.map_err(|e| GpuError(format!("the adapter {} refused a device ({e})", adapter_info.name)))?;
        Ok(GpuContext::from_parts(device, queue, adapter_info))
    }

    pub fn summary(&self) -> AdapterSummary {
        let info = &self.adapter_info;
        AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
        }
    }

    /// Copies the first `len` f32 values of a storage buffer back to the host.
    pub async fn read_back(&self, source: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, GpuError> {
        let parts = read_ranges(self, &[(source, 0, (len * 4) as u64)]).await?;
        Ok(bytemuck::pod_collect_to_vec(&parts[0]))
    }
}

/// WebGPU's default limits with the adapter's buffer-size limits, where those are larger, and
/// the storage buffers per stage that the fused weight update (11) and the one-dispatch bias
/// steps (13) bind, as far as the adapter has them.
fn buffer_limits(adapter: &wgpu::Limits) -> wgpu::Limits {
    let defaults = wgpu::Limits::default();
    let wanted = gemm::FUSED_UPDATE_STORAGE_BUFFERS.max(update::BIAS_STEPS_STORAGE_BUFFERS);
    let storage_buffers = adapter.max_storage_buffers_per_shader_stage.min(wanted);
    wgpu::Limits {
        max_storage_buffer_binding_size: defaults.max_storage_buffer_binding_size.max(adapter.max_storage_buffer_binding_size),
        max_buffer_size: defaults.max_buffer_size.max(adapter.max_buffer_size),
        max_storage_buffers_per_shader_stage: defaults.max_storage_buffers_per_shader_stage.max(storage_buffers),
        ..defaults
    }
}

/// Maps `staging` (after the submission that fills it) and returns its mapped bytes; the caller
/// drops them and unmaps. A failed device, before or during, is an error, never stale bytes.
/// On the web the map callback only fires once control returns to the event loop: awaited,
/// never spun on.
pub(crate) async fn map_staging(ctx: &GpuContext, staging: &wgpu::Buffer) -> Result<wgpu::BufferView, GpuError> {
    let slice = staging.slice(..);
    let (sender, receiver) = futures_channel::oneshot::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    #[cfg(not(target_arch = "wasm32"))]
    ctx.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| GpuError(format!("device lost while waiting ({e})")))?;
    receiver
        .await
        .map_err(|_| GpuError("the device dropped the read-back request".into()))?
        .map_err(|e| GpuError(format!("read-back failed ({e})")))?;
    if let Some(failure) = ctx.failure() {
        staging.unmap();
        return Err(GpuError(failure));
    }
    slice.get_mapped_range().map_err(|e| {
        staging.unmap();
        GpuError(format!("read-back mapping failed ({e:?})"))
    })
}

/// Copies byte ranges `(buffer, offset, size)` (multiples of 4) of several buffers into one
/// staging buffer with one submission and one map: the once-per-epoch read.
/// On the web the map callback only fires once control returns to the event loop, so this
/// must be awaited, never spun on.
pub async fn read_ranges(ctx: &GpuContext, ranges: &[(&wgpu::Buffer, u64, u64)]) -> Result<Vec<Vec<u8>>, GpuError> {
    if let Some(failure) = ctx.failure() {
        return Err(GpuError(failure));
    }
    let total: u64 = ranges.iter().map(|r| r.2).sum::<u64>().max(4);
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read_ranges"),
        size: total.next_multiple_of(8),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let mut at = 0;
    for &(buffer, offset, size) in ranges {
        if size > 0 {
            encoder.copy_buffer_to_buffer(buffer, offset, &staging, at, size);
        }
        at += size;
    }
    ctx.queue.submit([encoder.finish()]);
    let parts = {
        let view = map_staging(ctx, &staging).await?;
        let mut at = 0usize;
        ranges
            .iter()
            .map(|r| {
                let part = view[at..at + r.2 as usize].to_vec();
                at += r.2 as usize;
                part
            })
            .collect()
    };
    staging.unmap();
    // Work that failed (e.g. on a device lost mid-epoch) leaves stale bytes behind: refuse them.
    if let Some(failure) = ctx.failure() {
        return Err(GpuError(failure));
    }
    Ok(parts)
}

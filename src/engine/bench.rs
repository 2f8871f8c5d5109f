//! The GPU benchmarks of `crate::bench` on the engine's device, for `deepbelief bench` and
//! `www/bench.html` (the CPU benchmark needs no device: `bench::bench_cpu_epoch`), and the
//! sparse autoencoder's sweep and the sparse coding replica on either engine (`bench::autoencoder`,
//! `bench::sparse_coding`).

use super::Engine;
use crate::bench::autoencoder::{self, AutoencoderBenchRow, AutoencoderBenchSettings};
use crate::bench::rtrl::{self as rtrl, RtrlBenchRow, RtrlBenchSettings};
use crate::bench::sparse_coding::{self as sparse_coding, SparseCodingBenchRow, SparseCodingBenchSettings};
use crate::bench::{self, GpuBenchReport, SweepRow};
use crate::data::Dataset;
use crate::gpu::GpuContext;

impl Engine {
    fn device(&self) -> Result<&GpuContext, String> {
        self.context().ok_or_else(|| "the GPU benchmark needs a GPU device".to_string())
    }

    /// CD-1 epochs over `data`, the GEMM kernels of a batch and (with `raina`) Raina et al.'s
    /// shapes; per-dispatch profiles with `profile` (see `bench::bench_gpu_profiled`).
    #[allow(clippy::too_many_arguments)]
    pub async fn bench_gpu(&self, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize, raina: bool, raina_batches: usize, profile: bool) -> Result<GpuBenchReport, String> {
        bench::bench_gpu_profiled(self.device()?, data, n_hidden, batch_size, repeats, raina, raina_batches, profile).await.map_err(|e| e.to_string())
    }

    /// The page's benchmark: no Raina shapes, GEMMs timed by wall time (`bench::bench_gpu_web`).
    pub async fn bench_gpu_web(&self, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize) -> Result<(GpuBenchReport, Vec<u32>), String> {
        bench::bench_gpu_web(self.device()?, data, n_hidden, batch_size, repeats).await.map_err(|e| e.to_string())
    }

    /// Every tiling and split-k factor of the products of [`bench::sweep_shapes`].
    pub async fn gemm_sweep(&self, batch: u32, n_visible: u32, n_hidden: u32, splits: &[u32]) -> Result<Vec<SweepRow>, String> {
        bench::gemm_sweep(self.device()?, &bench::sweep_shapes(batch, n_visible, n_hidden), splits).await.map_err(|e| e.to_string())
    }

    /// Issue 17's sweep: one full-batch sparse-autoencoder cost and gradient per `v × v/2` size,
    /// on the CPU reference or the device (the `resident` and `upload_download` rows); `on_row`
    /// sees each row as it is measured.
    pub async fn bench_autoencoder(&self, sizes: &[usize], settings: &AutoencoderBenchSettings, on_row: impl FnMut(&AutoencoderBenchRow)) -> Result<Vec<AutoencoderBenchRow>, String> {
        match self {
            Engine::Cpu => autoencoder::bench_cpu_sweep(sizes, settings, on_row),
            Engine::Gpu(ctx) => autoencoder::bench_gpu_sweep(ctx, sizes, settings, on_row).await,
        }
    }

    /// Issue 20's sweep: microseconds per online RTRL step on Moore's n-bit adder, on the CPU
    /// reference or with the tensors resident on the device (`gpu::recurrent::GpuRtrl`).
    pub async fn bench_rtrl(&self, sizes: &[usize], settings: &RtrlBenchSettings, on_row: impl FnMut(&RtrlBenchRow)) -> Result<Vec<RtrlBenchRow>, String> {
        match self {
            Engine::Cpu => rtrl::bench_rtrl(sizes, settings, on_row).map_err(|e| format!("--{e}")),
            Engine::Gpu(ctx) => rtrl::bench_gpu(ctx, sizes, settings, on_row).await,
        }
    }

    /// Issue 18's Table 4 replica on `data` (the patches): Raina's solver on the device on a GPU
    /// engine (other solvers' rows on the CPU), everything on the CPU reference otherwise;
    /// `on_row` sees each row as it is measured.
    pub async fn bench_sparse_coding(&self, data: &[f32], settings: &SparseCodingBenchSettings, data_name: &str, on_row: impl FnMut(&SparseCodingBenchRow)) -> Result<Vec<SparseCodingBenchRow>, String> {
        match self {
            Engine::Cpu => sparse_coding::bench_cpu(data, settings, data_name, on_row),
            Engine::Gpu(ctx) => sparse_coding::bench_gpu(ctx, data, settings, data_name, on_row).await,
        }
    }
}

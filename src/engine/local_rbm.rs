//! The engine's entry for local-patch RBMs (issue 19): a layer trained epoch by epoch on the
//! CPU reference or the device-resident trainer (`gpu::local_rbm_trainer`), and the Table 3
//! benchmark on either; the training itself is in `local_stack` (stacks, checkpoints, the
//! fall-back to the CPU).

use super::Engine;
use crate::local_rbm::bench::{bench_cpu, bench_gpu, LocalBenchRow};

impl Engine {
    /// Seconds per million examples of CD-1 (batches of 192, 24×24 patches 8 apart, 192 hidden
    /// each) for each image side in `sizes`; `on_row` sees each row as it is measured.
    pub async fn bench_local_rbm(&self, sizes: &[usize], warmups: usize, batches: usize, mut on_row: impl FnMut(&LocalBenchRow)) -> Result<Vec<LocalBenchRow>, String> {
        let mut rows = Vec::with_capacity(sizes.len());
        for &size in sizes {
            let row = match self {
                Engine::Cpu => bench_cpu(size, warmups, batches, 1)?,
                Engine::Gpu(ctx) => bench_gpu(ctx, size, warmups, batches, 1).await?,
            };
            on_row(&row);
            rows.push(row);
        }
        Ok(rows)
    }
}

//! AIS parity: `Engine::ais_log_partition` from the base-rate model.
//!
//! - Run for run: on a 300 × 40 RBM with a short schedule the device's runs follow the CPU's draw for draw (same
//!   Philox uniforms; a near-tie flip is rare in 20 × 20 steps), so log Z must agree to 1e-5
//!   relative and the log weights' spread to 1e-4.
//! - Against the truth: on a 20 × 8 RBM, log Z by enumeration; 200 runs of 300 steps must come
//!   within 0.05 nats of it on every engine, the CPU included (there the runs no longer follow
//!   each other, so this bounds the estimator, not the rounding).

use super::close;
use crate::engine_suite::Harness;
use crate::support::gpu_eval::{random_rbm, stroke_bytes};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::eval::{ais_log_partition, base_rate_visible_bias, exact_log_partition, AisConfig, AisSchedule};
use deepbelief::model::VisibleUnits;

pub async fn ais_follows_cpu_run_for_run<H: Harness>(h: &H) -> Result<String, String> {
    // 300 visible units: more than a workgroup's 256 lanes.
    let data = stroke_bytes(200, 300, 9);
    let rbm = random_rbm(300, 40, 7, 0.05, VisibleUnits::Bernoulli);
    let base = base_rate_visible_bias(&data.input_means());
    let mut report = Vec::new();
    for (schedule, seed) in [(AisSchedule::Linear, 3u64), (AisSchedule::Paper, 4)] {
        let config = AisConfig { runs: 20, betas: 20, schedule, seed };
        let estimate = h.engine().ais_log_partition(&rbm, &base, &config).await?;
        let cpu = ais_log_partition(&CpuBackend, &rbm, &base, &config).map_err(|e| e.to_string())?;
        ensure!(close(estimate.log_z, cpu.log_z, 1e-5), "{schedule:?}: log Z {} vs CPU {}", estimate.log_z, cpu.log_z);
        ensure!(close(estimate.log_weights_std, cpu.log_weights_std, 1e-4), "{schedule:?}: log-weight sd {} vs CPU {}", estimate.log_weights_std, cpu.log_weights_std);
        ensure!(cpu.log_weights_std > 1e-3, "{schedule:?}: the runs do not vary (sd {})", cpu.log_weights_std);
        ensure!((estimate.runs, estimate.betas, estimate.schedule) == (20, 20, schedule), "{schedule:?}: settings not reported back");
        report.push(format!("{schedule:?}: log Z {:.5} (CPU {:.5})", estimate.log_z, cpu.log_z));
    }
    let one_run = AisConfig { runs: 1, betas: 20, schedule: AisSchedule::Linear, seed: 1 };
    ensure!(h.engine().ais_log_partition(&rbm, &base, &one_run).await.is_err(), "one run must be refused");
    Ok(report.join("; "))
}

pub async fn ais_estimates_the_exact_log_z<H: Harness>(h: &H) -> Result<String, String> {
    let data = stroke_bytes(200, 20, 10);
    let rbm = random_rbm(20, 8, 8, 0.6, VisibleUnits::Bernoulli);
    let exact = exact_log_partition(&rbm).map_err(|e| e.to_string())?;
    let base = base_rate_visible_bias(&data.input_means());
    let mut report = Vec::new();
    for (schedule, seed) in [(AisSchedule::Linear, 11u64), (AisSchedule::Paper, 12)] {
        let config = AisConfig { runs: 200, betas: 300, schedule, seed };
        let estimate = h.engine().ais_log_partition(&rbm, &base, &config).await?;
        let error = estimate.log_z - exact;
        ensure!(error.abs() <= 0.05, "{schedule:?}: log Z {} vs exact {exact} (error {error:+.4})", estimate.log_z);
        ensure!(estimate.log_z_low <= estimate.log_z && estimate.log_z <= estimate.log_z_high, "{schedule:?}: log Z outside its own interval");
        report.push(format!("{schedule:?}: {:.4} ({error:+.4})", estimate.log_z));
    }
    Ok(format!("exact log Z {exact:.4}; {}", report.join(", ")))
}

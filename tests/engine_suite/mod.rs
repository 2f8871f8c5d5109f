//! The engine-neutral suite (burn's backend tests, for the whole engine): every check is an
//! `async fn` written once against [`Harness`] — the engine (`Engine`, `StackRun` and its
//! `LayerTrainer`, `engine::evaluate`, `engine::chains`) and, where it has one of its own, its
//! per-operation `Backend` — and [`engine_suite!`] instantiates all of them for one backend:
//!
//! - tests/engine_suite_native.rs: the CPU reference, and native wgpu (Mesa lavapipe in CI;
//!   skipped with a message where no adapter exists);
//! - tests/web_engine_suite.rs: WebGPU in headless Chromium (`wasm-pack test`).
//!
//! A GPU is compared with the CPU reference run in the same check; every check also compares
//! with a reference fixed outside the engine (plain loops in f64, exact enumeration of a tiny
//! model, figures blessed from the CPU), so the CPU instance is not compared with itself only.
//! The data are synthetic digit-like strokes (no files in the browser), small enough for a CPU
//! rasteriser.

pub mod checks;

use deepbelief::backend::Backend;
use deepbelief::engine::Engine;

/// One backend the suite runs on.
#[allow(async_fn_in_trait)]
pub trait Harness: Sized {
    /// Opened afresh for every check (a check may destroy its device); `Err` says why this
    /// machine cannot run it, and the check is skipped with that message.
    async fn open() -> Result<Self, String>;

    fn engine(&self) -> &Engine;

    /// The engine's own per-operation `Backend`; `None` where it has none (WebGPU: a browser
    /// cannot block on the device, so `Engine::backend` is the CPU's there; tests/web_gpu_gemm.rs
    /// and web_gpu_update.rs check those kernels in the browser).
    fn operations(&self) -> Option<&dyn Backend>;

    /// Whether every per-operation call ran where it should (the blocking GPU backend moves to
    /// the CPU after a failure, which would make a parity check pass vacuously).
    fn operations_stayed(&self) -> bool {
        true
    }
}

/// Opens `H` and runs `check` on it: the check's one-line report (or why it was skipped), or
/// its failure.
pub async fn run<H: Harness, F>(name: &str, check: impl FnOnce(H) -> F) -> Result<String, String>
where
    F: std::future::Future<Output = Result<String, String>>,
{
    match H::open().await {
        Ok(harness) => check(harness).await.map(|report| format!("{name}: {report}")).map_err(|why| format!("{name}: {why}")),
        Err(why) => Ok(format!("{name}: skipped: {why}")),
    }
}

/// `engine_suite!(Harness; module::check, ...)`: one test per check on `Harness`, a plain
/// `#[test]` blocked on with pollster natively, a `#[wasm_bindgen_test]` in the browser.
#[cfg(not(target_arch = "wasm32"))]
macro_rules! engine_suite {
    ($harness:ty; $($module:ident :: $check:ident),+ $(,)?) => {$(
        #[test]
        fn $check() {
            let outcome = pollster::block_on($crate::engine_suite::run::<$harness, _>(stringify!($check), |h| async move {
                $crate::engine_suite::checks::$module::$check(&h).await
            }));
            $crate::support::check::check(outcome);
        }
    )+};
}

#[cfg(target_arch = "wasm32")]
macro_rules! engine_suite {
    ($harness:ty; $($module:ident :: $check:ident),+ $(,)?) => {$(
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $check() {
            let outcome = $crate::engine_suite::run::<$harness, _>(stringify!($check), |h| async move {
                $crate::engine_suite::checks::$module::$check(&h).await
            })
            .await;
            $crate::support::check::check(outcome);
        }
    )+};
}

pub(crate) use engine_suite;

/// Every check of the suite, for [`engine_suite!`]; the instances list them through this
/// macro so a new check runs on every backend.
macro_rules! all_engine_checks {
    ($harness:ty) => {
        $crate::engine_suite::engine_suite!($harness;
            operations::visible_to_hidden_matches_loops,
            operations::hidden_to_visible_matches_loops,
            operations::accumulate_outer_matches_loops,
            operations::bernoulli_follows_its_stream,
            operations::cd_epoch_matches_cpu,
            operations::supervised_gradient_matches_cpu,
            trainer::layer_matches_cpu_and_blessed_figures,
            trainer::device_loss_resumes_on_cpu_like_an_all_cpu_run,
            evaluate::stack_figures_match_loops_and_cpu,
            chains::chains_follow_cpu_draw_for_draw,
            chains::chains_sample_the_exact_marginals,
            ais::ais_follows_cpu_run_for_run,
            ais::ais_estimates_the_exact_log_z,
            autoencoder::autoencoder_cost_matches_loops_and_cpu,
            autoencoder::autoencoder_lbfgs_follows_cpu_and_minimise,
            autoencoder::autoencoder_device_loss_resumes_on_cpu,
            sparse_coding::sparse_coding_codes_match_cpu_and_optimum,
            sparse_coding::sparse_coding_basis_step_matches_cpu_and_closed_form,
            sparse_coding::sparse_coding_session_follows_fit,
            sparse_coding::sparse_coding_device_loss_resumes_on_cpu,
            local_rbm::local_rbm_stack_matches_cpu_and_loops,
            local_rbm::local_rbm_device_loss_resumes_on_cpu,
            recurrent::recurrent_session_follows_cpu,
            recurrent::recurrent_device_loss_resumes_on_cpu,
            mlp::mlp_adaptive_rule_follows_cpu_epoch_by_epoch,
        );
    };
}

pub(crate) use all_engine_checks;

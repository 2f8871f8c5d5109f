//! The optimisers' seam to an evaluator that may have to wait: a browser cannot block on the
//! device, so the page's L-BFGS awaits each read-back of `J` and its gradient, while the CLI's
//! evaluators (the CPU cost, the device cost natively) answer at once.
//!
//! The L-BFGS and its line search are written once, as async code over [`AsyncObjective`]
//! ([`Lbfgs`](super::lbfgs::Lbfgs), [`search_async`](super::wolfe::search_async)); every sync
//! [`Objective`] becomes one through [`Blocking`], and the sync entry points
//! ([`lbfgs::minimise`](super::lbfgs::minimise), [`wolfe::search`](super::wolfe::search)) run
//! the same futures to completion with [`block_on`]. A sync objective never makes them wait,
//! so natively nothing changes but the stack frames.

use std::future::Future;

use crate::supervised::conjugate_gradient::Objective;

/// A function to minimise whose evaluations may have to wait (a device's read-back).
#[allow(async_fn_in_trait)]
pub trait AsyncObjective {
    async fn value(&mut self, x: &[f64]) -> f64;
    /// The value and the gradient (written into `gradient`).
    async fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64;
    /// Whether the evaluator can no longer evaluate at all (a lost device): the optimiser then
    /// abandons the iteration in progress, its state as it was before that iteration, so that it
    /// can resume with another evaluator. An evaluation that is merely NaN is not this.
    fn interrupted(&self) -> bool {
        false
    }
}

/// A sync [`Objective`] as an [`AsyncObjective`] (its futures are ready at once).
pub struct Blocking<'a>(pub &'a mut dyn Objective);

impl AsyncObjective for Blocking<'_> {
    async fn value(&mut self, x: &[f64]) -> f64 {
        self.0.value(x)
    }

    async fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        self.0.value_and_gradient(x, gradient)
    }
}

/// Runs `future` to completion on this thread: natively with pollster (which parks the thread
/// while a device works); in wasm, where nothing may block, it must be ready at once (the sync
/// entry points over a [`Blocking`] objective always are), and a future that is not panics.
pub fn block_on<F: Future>(future: F) -> F::Output {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pollster::block_on(future)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("autoencoder::stepwise::block_on: the future waited, and a browser cannot block (await it instead)"),
        }
    }
}

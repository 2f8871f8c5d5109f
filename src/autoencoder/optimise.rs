//! Training a sparse autoencoder on a batch of cases: full-batch L-BFGS (the UFLDL
//! exercise), full-batch conjugate gradient (the crate's Polak–Ribière minimiser from
//! `supervised`), or mini-batch SGD with momentum.

use std::fmt;

use super::cost::{cost, cost_and_gradient, Cost, CostError, CostSettings, Workspace};
use super::lbfgs::{self, LbfgsSettings};
use super::model::Autoencoder;
use super::sgd::{self, SgdSettings};
use crate::backend::Backend;
use crate::supervised::conjugate_gradient::{self, CgSettings, Objective};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    Lbfgs(LbfgsSettings),
    ConjugateGradient(CgSettings),
    Sgd(SgdSettings),
}

/// How a run went.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainReport {
    /// L-BFGS or CG iterations, or SGD epochs.
    pub iterations: usize,
    /// Cost evaluations (for SGD: mini-batch steps).
    pub evaluations: usize,
    /// Why it stopped, in the optimiser's words (`max_iterations`, `optimal`, …).
    pub stop: String,
    pub initial: Cost,
    pub last: Cost,
    /// `J` after each iteration (for SGD: the mean mini-batch `J` of each epoch).
    pub history: Vec<f64>,
    /// The first non-finite cost met at a trial point, which the line search backed away
    /// from; none when every evaluation was finite.
    pub non_finite_trial: Option<CostError>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TrainError {
    /// The settings, the data's shape, or the starting point.
    Cost(CostError),
    /// The cost became NaN or infinite at `iteration` (the error names where).
    Diverged { iteration: usize, error: CostError },
}

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            TrainError::Cost(error) => write!(f, "{error}"),
            TrainError::Diverged { iteration, error } => write!(f, "training diverged at iteration {iteration}: {error}"),
        }
    }
}

impl std::error::Error for TrainError {}

/// The cost as a function of the flat parameter vector, for L-BFGS and CG. A cost error
/// becomes a NaN value (which both line searches back away from), and is kept.
pub struct CostObjective<'a> {
    backend: &'a dyn Backend,
    model: &'a mut Autoencoder,
    data: &'a [f32],
    settings: CostSettings,
    work: Workspace,
    gradient: Autoencoder,
    pub evaluations: usize,
    pub first_error: Option<CostError>,
    pub last_error: Option<CostError>,
}

impl<'a> CostObjective<'a> {
    pub fn new(backend: &'a dyn Backend, model: &'a mut Autoencoder, data: &'a [f32], settings: CostSettings) -> Self {
        let gradient = Autoencoder::zeros(model.n_visible, model.n_hidden);
        CostObjective { backend, model, data, settings, work: Workspace::new(), gradient, evaluations: 0, first_error: None, last_error: None }
    }

    fn record(&mut self, result: Result<Cost, CostError>) -> f64 {
        record_evaluation(&mut self.evaluations, &mut self.first_error, &mut self.last_error, result.map(|cost| cost.total))
    }
}

/// Counts one evaluation of an objective (on the CPU or the device) and answers its J, or NaN
/// for an error, which both line searches back away from; the first error is kept for the
/// report, the latest until an evaluation works again.
pub(crate) fn record_evaluation<E: Clone>(evaluations: &mut usize, first_error: &mut Option<E>, last_error: &mut Option<E>, result: Result<f64, E>) -> f64 {
    *evaluations += 1;
    match result {
        Ok(total) => {
            *last_error = None;
            total
        }
        Err(error) => {
            first_error.get_or_insert_with(|| error.clone());
            *last_error = Some(error);
            f64::NAN
        }
    }
}

impl Objective for CostObjective<'_> {
    fn value(&mut self, x: &[f64]) -> f64 {
        self.model.set_params(x);
        let result = cost(self.backend, self.model, self.data, &self.settings, &mut self.work);
        self.record(result)
    }

    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        self.model.set_params(x);
        let result = cost_and_gradient(self.backend, self.model, self.data, &self.settings, &mut self.work, &mut self.gradient);
        if result.is_ok() {
            self.gradient.write_params(gradient);
        } else {
            gradient.fill(f64::NAN);
        }
        self.record(result)
    }
}

/// Trains `model` on `data` (rows × n_visible) by `method`; the model ends with the last
/// accepted parameters. `on_iteration(iteration, J)` runs after each iteration (SGD: epoch);
/// returning `false` stops.
pub fn train(backend: &dyn Backend, model: &mut Autoencoder, data: &[f32], settings: &CostSettings, method: &Method, on_iteration: &mut dyn FnMut(usize, f64) -> bool) -> Result<TrainReport, TrainError> {
    let mut work = Workspace::new();
    let initial = cost(backend, model, data, settings, &mut work).map_err(TrainError::Cost)?;
    let mut history = Vec::new();
    let mut record = |iteration: usize, value: f64| {
        history.push(value);
        on_iteration(iteration, value)
    };
    let (iterations, evaluations, stop, non_finite_trial) = match method {
        Method::Lbfgs(lbfgs_settings) => {
            let mut params = model.to_params();
            let mut objective = CostObjective::new(backend, model, data, *settings);
            let outcome = lbfgs::minimise(&mut objective, &mut params, lbfgs_settings, &mut record);
            let first_error = objective.first_error.take();
            model.set_params(&params);
            let outcome = outcome.map_err(|_| TrainError::Cost(first_error.clone().unwrap_or(CostError::NonFinite { what: "J at the starting point".into() })))?;
            (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop), first_error)
        }
        Method::ConjugateGradient(cg_settings) => {
            let mut params = model.to_params();
            let mut objective = CostObjective::new(backend, model, data, *settings);
            let outcome = conjugate_gradient::minimise(&mut objective, &mut params, *cg_settings, &mut record);
            let (first_error, evaluations) = (objective.first_error.take(), objective.evaluations);
            let last_error = objective.last_error.take();
            model.set_params(&params);
            match outcome {
                Ok(outcome) => (outcome.iterations, evaluations, stop_name(&outcome.stop), first_error),
                Err(failure) => {
                    let error = last_error.or(first_error).unwrap_or(CostError::NonFinite { what: "J".into() });
                    return Err(TrainError::Diverged { iteration: failure.iteration, error });
                }
            }
        }
        Method::Sgd(sgd_settings) => {
            let outcome = sgd::train(backend, model, data, settings, sgd_settings, &mut record)
                .map_err(|failure| TrainError::Diverged { iteration: failure.epoch, error: failure.error })?;
            let rows = data.len() / model.n_visible;
            let steps = outcome.epoch_costs.len() * rows.div_ceil(sgd_settings.batch_size.clamp(1, rows.max(1)));
            let stop = if outcome.cancelled { "cancelled" } else { "max_iterations" };
            (outcome.epoch_costs.len(), steps, stop.to_string(), None)
        }
    };
    let last = cost(backend, model, data, settings, &mut work).map_err(|error| TrainError::Diverged { iteration: iterations, error })?;
    Ok(TrainReport { iterations, evaluations, stop, initial, last, history, non_finite_trial })
}

fn stop_name(stop: &impl serde::Serialize) -> String {
    serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

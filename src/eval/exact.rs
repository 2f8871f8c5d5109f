//! Exact log partition function, log-likelihood and log-likelihood gradient of small RBMs.
//!
//! `Z = Σ_v Σ_h exp(−E(v, h))` has 2^(n_visible + n_hidden) terms, but the units of one side
//! are independent given the other, so one side sums out in closed form and only the other
//! needs enumerating. With the hidden side enumerated:
//!
//! - Bernoulli visible: `log Z = logsumexp_h [c·h + Σ_i softplus(b_i + (W h)_i)]`;
//! - Gaussian visible:  `log Z = logsumexp_h [c·h + Σ_i ½(b_i + (W h)_i)²] − ½|b|² + (n/2)·ln 2π`
//!   (the Gaussian integral `∫ exp(−½|v − b|² + v·Wh) dv`).
//!
//! With the visible side enumerated (Bernoulli only): `log Z = logsumexp_v [b·v + Σ_j softplus(c_j + (vW)_j)]`.
//!
//! States are visited in Gray-code order, so each step flips one unit and updates the other
//! side's inputs with one row of W (O(n) instead of O(n·m) per state). The 2^n states are cut
//! into at most 64 fixed chunks that rayon walks in parallel; the chunks' partial sums are
//! combined in chunk order, so the result does not depend on the number of threads.

use super::free_energy::{free_energy_f64, softplus};
use super::{EvalError, LogSumExp};
use crate::data::Dataset;
use crate::model::{Rbm, VisibleUnits};
use rayon::prelude::*;
use serde::Serialize;

/// The most units exact evaluation enumerates: 2^20 ≈ one million states, seconds of work for
/// a 784-pixel model.
pub const MAX_ENUMERATED_UNITS: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnumeratedSide {
    Visible,
    Hidden,
}

impl EnumeratedSide {
    /// The smaller side (hidden on a tie); always the hidden side for Gaussian visible units,
    /// whose visible states are continuous.
    pub fn for_rbm(rbm: &Rbm) -> Result<EnumeratedSide, EvalError> {
        let side = if rbm.visible_units == VisibleUnits::Bernoulli && rbm.n_visible < rbm.n_hidden {
            EnumeratedSide::Visible
        } else {
            EnumeratedSide::Hidden
        };
        Enumeration::check(rbm, side).map(|_| side)
    }
}

/// `∂ mean log p(v) / ∂θ` over the data cases, laid out like the model's parameters
/// (`weights` is n_visible × n_hidden, row-major).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogLikelihoodGradient {
    pub weights: Vec<f64>,
    pub visible_bias: Vec<f64>,
    pub hidden_bias: Vec<f64>,
}

/// `log Z`, enumerating the side `EnumeratedSide::for_rbm` picks.
pub fn exact_log_partition(rbm: &Rbm) -> Result<f64, EvalError> {
    log_partition_by_enumerating(rbm, EnumeratedSide::for_rbm(rbm)?)
}

/// `log Z`, enumerating the given side (both must agree; tests check that they do).
pub fn log_partition_by_enumerating(rbm: &Rbm, side: EnumeratedSide) -> Result<f64, EvalError> {
    Ok(Enumeration::new(rbm, side)?.log_partition())
}

/// Mean log-likelihood of the data cases, `mean(−F(v)) − log Z` (a log density for Gaussian
/// visible units). Uses every case.
pub fn exact_log_likelihood(rbm: &Rbm, data: &Dataset) -> Result<f64, EvalError> {
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let log_z = exact_log_partition(rbm)?;
    let mut case = vec![0.0; rbm.n_visible];
    let mut total = 0.0;
    for k in 0..data.n_cases {
        data.case_into(k, &mut case);
        total -= free_energy_f64(rbm, &case);
    }
    Ok(total / data.n_cases.max(1) as f64 - log_z)
}

/// The exact gradient of the mean log-likelihood: the data expectation `⟨v_i h_j⟩_data`
/// (with `h_j` replaced by `p(h_j = 1 | v)`) minus the model expectation `⟨v_i h_j⟩_model`,
/// and likewise for the biases. Contrastive divergence approximates the model term with short
/// Gibbs chains; this is what it approximates.
pub fn exact_gradient(rbm: &Rbm, data: &Dataset) -> Result<LogLikelihoodGradient, EvalError> {
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let enumeration = Enumeration::new(rbm, EnumeratedSide::for_rbm(rbm)?)?;
    let model = enumeration.model_moments();
    let data_moments = data_moments(rbm, data);
    let difference = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<f64>>();
    Ok(LogLikelihoodGradient {
        weights: difference(&data_moments.weights, &model.weights),
        visible_bias: difference(&data_moments.visible_bias, &model.visible_bias),
        hidden_bias: difference(&data_moments.hidden_bias, &model.hidden_bias),
    })
}

/// `⟨v_i p_j⟩`, `⟨v_i⟩`, `⟨p_j⟩` over the data, with `p_j = p(h_j = 1 | v)`; the same layout as
/// the gradient.
fn data_moments(rbm: &Rbm, data: &Dataset) -> LogLikelihoodGradient {
    let (nv, nh) = (rbm.n_visible, rbm.n_hidden);
    let mut moments = LogLikelihoodGradient { weights: vec![0.0; nv * nh], visible_bias: vec![0.0; nv], hidden_bias: vec![0.0; nh] };
    let mut case = vec![0.0f32; nv];
    let mut hidden = vec![0.0f64; nh];
    for k in 0..data.n_cases {
        data.case_into(k, &mut case);
        for (p, &c) in hidden.iter_mut().zip(&rbm.hidden_bias) {
            *p = c as f64;
        }
        for (&v, row) in case.iter().zip(rbm.weights.chunks_exact(nh)) {
            for (p, &w) in hidden.iter_mut().zip(row) {
                *p += v as f64 * w as f64;
            }
        }
        for p in hidden.iter_mut() {
            *p = sigmoid(*p);
        }
        for (i, &v) in case.iter().enumerate() {
            moments.visible_bias[i] += v as f64;
            for (m, &p) in moments.weights[i * nh..(i + 1) * nh].iter_mut().zip(&hidden) {
                *m += v as f64 * p;
            }
        }
        for (m, &p) in moments.hidden_bias.iter_mut().zip(&hidden) {
            *m += p;
        }
    }
    let scale = 1.0 / data.n_cases.max(1) as f64;
    for m in moments.weights.iter_mut().chain(&mut moments.visible_bias).chain(&mut moments.hidden_bias) {
        *m *= scale;
    }
    moments
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// One side of the RBM enumerated ("states"), the other summed out in closed form.
struct Enumeration {
    side: EnumeratedSide,
    n_enumerated: usize,
    n_summed: usize,
    /// n_enumerated × n_summed: row `a` holds enumerated unit `a`'s weights to the summed side.
    coupling: Vec<f64>,
    enumerated_bias: Vec<f64>,
    summed_bias: Vec<f64>,
    /// The summed-out side is Gaussian (visible units of a Gaussian RBM) rather than binary.
    summed_gaussian: bool,
    /// The part of the summed side's log partition that does not depend on the state:
    /// `(n/2)·ln 2π − ½|b|²` for Gaussian units, 0 for binary ones.
    summed_constant: f64,
}

/// Sums, over a set of states, of `p(state)` times statistics of the state.
struct Moments {
    /// n_enumerated × n_summed: `Σ p · s_a · E[summed_o | s]`.
    pairs: Vec<f64>,
    /// `Σ p · s_a`.
    enumerated: Vec<f64>,
    /// `Σ p · E[summed_o | s]`.
    summed: Vec<f64>,
}

impl Enumeration {
    fn check(rbm: &Rbm, side: EnumeratedSide) -> Result<(), EvalError> {
        assert!(rbm.n_visible > 0 && rbm.n_hidden > 0, "an RBM needs units on both sides");
        let n_enumerated = match side {
            EnumeratedSide::Visible => rbm.n_visible,
            EnumeratedSide::Hidden => rbm.n_hidden,
        };
        if side == EnumeratedSide::Visible && rbm.visible_units == VisibleUnits::Gaussian {
            return Err(EvalError::GaussianVisibleUnits { measure: "enumerating the visible states" });
        }
        if n_enumerated > MAX_ENUMERATED_UNITS {
            return Err(EvalError::TooManyStates { n_visible: rbm.n_visible, n_hidden: rbm.n_hidden, max_enumerated: MAX_ENUMERATED_UNITS });
        }
        Ok(())
    }

    fn new(rbm: &Rbm, side: EnumeratedSide) -> Result<Self, EvalError> {
        Self::check(rbm, side)?;
        let (nv, nh) = (rbm.n_visible, rbm.n_hidden);
        let to_f64 = |x: &[f32]| x.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let (n_enumerated, n_summed, coupling, enumerated_bias, summed_bias) = match side {
            EnumeratedSide::Visible => (nv, nh, to_f64(&rbm.weights), to_f64(&rbm.visible_bias), to_f64(&rbm.hidden_bias)),
            EnumeratedSide::Hidden => {
                let transposed = (0..nh * nv).map(|k| rbm.weights[(k % nv) * nh + k / nv] as f64).collect();
                (nh, nv, transposed, to_f64(&rbm.hidden_bias), to_f64(&rbm.visible_bias))
            }
        };
        let summed_gaussian = side == EnumeratedSide::Hidden && rbm.visible_units == VisibleUnits::Gaussian;
        let summed_constant = if summed_gaussian {
            0.5 * n_summed as f64 * (2.0 * std::f64::consts::PI).ln() - 0.5 * summed_bias.iter().map(|b| b * b).sum::<f64>()
        } else {
            0.0
        };
        Ok(Enumeration { side, n_enumerated, n_summed, coupling, enumerated_bias, summed_bias, summed_gaussian, summed_constant })
    }

    /// `log Σ_{summed side} exp(−E)` for one enumerated state, from the state's bias term
    /// (`bias · s`) and the summed units' total inputs.
    fn log_weight(&self, bias_term: f64, summed_input: &[f64]) -> f64 {
        let summed: f64 = if self.summed_gaussian {
            summed_input.iter().map(|x| 0.5 * x * x).sum()
        } else {
            summed_input.iter().map(|&x| softplus(x)).sum()
        };
        bias_term + summed + self.summed_constant
    }

    fn expected_summed(&self, input: f64) -> f64 {
        if self.summed_gaussian {
            input
        } else {
            sigmoid(input)
        }
    }

    /// Chunk size 2^chunk_bits: at most 64 chunks, a function of the model only.
    fn chunk_bits(&self) -> usize {
        self.n_enumerated.saturating_sub(6)
    }

    fn n_chunks(&self) -> usize {
        1 << (self.n_enumerated - self.chunk_bits())
    }

    /// Calls `visit(state, summed_input, log_weight)` for every state of chunk `chunk`.
    /// State `k` of the whole enumeration is the Gray code `k ^ (k >> 1)`; consecutive codes
    /// differ in bit `trailing_zeros(k)`, so one row of the coupling updates the inputs.
    fn walk_chunk(&self, chunk: usize, mut visit: impl FnMut(&[f64], &[f64], f64)) {
        let first = chunk << self.chunk_bits();
        let gray = first ^ (first >> 1);
        let mut state: Vec<f64> = (0..self.n_enumerated).map(|a| ((gray >> a) & 1) as f64).collect();
        let mut input = self.summed_bias.clone();
        let mut bias_term = 0.0;
        for a in (0..self.n_enumerated).filter(|&a| state[a] == 1.0) {
            self.flip_into(a, 1.0, &mut bias_term, &mut input);
        }
        visit(&state, &input, self.log_weight(bias_term, &input));
        for k in first + 1..first + (1 << self.chunk_bits()) {
            let a = k.trailing_zeros() as usize;
            let sign = 1.0 - 2.0 * state[a];
            state[a] = 1.0 - state[a];
            self.flip_into(a, sign, &mut bias_term, &mut input);
            visit(&state, &input, self.log_weight(bias_term, &input));
        }
    }

    /// Adds (`sign` = 1) or removes (`sign` = −1) enumerated unit `a`'s contributions.
    fn flip_into(&self, a: usize, sign: f64, bias_term: &mut f64, input: &mut [f64]) {
        *bias_term += sign * self.enumerated_bias[a];
        let row = &self.coupling[a * self.n_summed..(a + 1) * self.n_summed];
        for (x, &w) in input.iter_mut().zip(row) {
            *x += sign * w;
        }
    }

    fn log_partition(&self) -> f64 {
        let partials: Vec<LogSumExp> = (0..self.n_chunks())
            .into_par_iter()
            .map(|chunk| {
                let mut partial = LogSumExp::new();
                self.walk_chunk(chunk, |_, _, log_weight| partial.add(log_weight));
                partial
            })
            .collect();
        let mut total = LogSumExp::new();
        for partial in partials {
            total.merge(partial);
        }
        total.value()
    }

    /// The model's expectations `⟨v_i h_j⟩`, `⟨v_i⟩`, `⟨h_j⟩`, in the gradient's layout.
    /// The summed side enters through its conditional expectation given the state.
    fn model_moments(&self) -> LogLikelihoodGradient {
        let log_z = self.log_partition();
        let (ne, ns) = (self.n_enumerated, self.n_summed);
        let partials: Vec<Moments> = (0..self.n_chunks())
            .into_par_iter()
            .map(|chunk| {
                let mut sums = Moments { pairs: vec![0.0; ne * ns], enumerated: vec![0.0; ne], summed: vec![0.0; ns] };
                let mut expected = vec![0.0; ns];
                self.walk_chunk(chunk, |state, input, log_weight| {
                    let p = (log_weight - log_z).exp();
                    for (e, &x) in expected.iter_mut().zip(input) {
                        *e = p * self.expected_summed(x);
                    }
                    for (s, &e) in sums.summed.iter_mut().zip(&expected) {
                        *s += e;
                    }
                    for a in (0..ne).filter(|&a| state[a] == 1.0) {
                        sums.enumerated[a] += p;
                        for (s, &e) in sums.pairs[a * ns..(a + 1) * ns].iter_mut().zip(&expected) {
                            *s += e;
                        }
                    }
                });
                sums
            })
            .collect();
        let mut total = Moments { pairs: vec![0.0; ne * ns], enumerated: vec![0.0; ne], summed: vec![0.0; ns] };
        for partial in partials {
            let add = |into: &mut [f64], from: &[f64]| into.iter_mut().zip(from).for_each(|(t, f)| *t += f);
            add(&mut total.pairs, &partial.pairs);
            add(&mut total.enumerated, &partial.enumerated);
            add(&mut total.summed, &partial.summed);
        }
        match self.side {
            EnumeratedSide::Visible => LogLikelihoodGradient { weights: total.pairs, visible_bias: total.enumerated, hidden_bias: total.summed },
            EnumeratedSide::Hidden => {
                // pairs is hidden × visible here; the gradient is visible × hidden.
                let (nh, nv) = (ne, ns);
                let weights = (0..nv * nh).map(|k| total.pairs[(k % nh) * nv + k / nh]).collect();
                LogLikelihoodGradient { weights, visible_bias: total.summed, hidden_bias: total.enumerated }
            }
        }
    }
}

//! Standardisation of Gaussian inputs: each input's mean and spread over the training data,
//! fitted once, applied to every data set the model sees, and saved with the model.

use super::{CaseValues, Dataset};
use serde::Serialize;

/// Per-input standardisation `z = (x − mean) / sd`; an input with `sd == 0` was constant in
/// the training data and always maps to 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Standardisation {
    pub mean: Vec<f32>,
    pub sd: Vec<f32>,
}

impl Standardisation {
    /// Mean and population standard deviation of each input over all cases, by Welford's
    /// running update in f64: the sum-of-squares formula `E[x²] − E[x]²` cancels badly
    /// when the mean is large next to the spread.
    pub fn fit(data: &Dataset) -> Standardisation {
        let n = data.n_inputs;
        let (mut mean, mut squares) = (vec![0.0f64; n], vec![0.0f64; n]);
        let mut case = vec![0.0f32; n];
        for k in 0..data.n_cases {
            data.case_into(k, &mut case);
            let count = (k + 1) as f64;
            for ((m, q), &x) in mean.iter_mut().zip(&mut squares).zip(&case) {
                let x = f64::from(x);
                let before = x - *m;
                *m += before / count;
                *q += before * (x - *m);
            }
        }
        let cases = data.n_cases.max(1) as f64;
        let sd = squares
            .iter()
            .map(|q| {
                let variance = (q / cases).max(0.0);
                // Rounding leaves a constant input a tiny variance; treat it as constant.
                if variance < 1e-12 {
                    0.0
                } else {
                    variance.sqrt() as f32
                }
            })
            .collect();
        Standardisation { mean: mean.into_iter().map(|m| m as f32).collect(), sd }
    }

    /// The data standardised (as floats), keeping labels and names.
    pub fn apply(&self, data: &Dataset) -> Dataset {
        assert_eq!(data.n_inputs, self.mean.len(), "standardisation and data disagree on the number of inputs");
        let mut values = vec![0.0f32; data.n_cases * data.n_inputs];
        let mut case = vec![0.0f32; data.n_inputs];
        for (k, row) in values.chunks_exact_mut(data.n_inputs).enumerate() {
            data.case_into(k, &mut case);
            self.standardise_in_place(&mut case);
            row.copy_from_slice(&case);
        }
        Dataset {
            name: data.name.clone(),
            n_cases: data.n_cases,
            n_inputs: data.n_inputs,
            image_shape: data.image_shape,
            values: CaseValues::Floats(values),
            labels: data.labels.clone(),
            input_names: data.input_names.clone(),
            targets: data.targets.clone(),
        }
    }

    pub fn standardise_in_place(&self, case: &mut [f32]) {
        for ((x, m), s) in case.iter_mut().zip(&self.mean).zip(&self.sd) {
            *x = if *s > 0.0 { (*x - m) / s } else { 0.0 };
        }
    }

    /// Back to the input scale: `x = mean + sd·z`, row after row.
    pub fn restore_in_place(&self, values: &mut [f32]) {
        for row in values.chunks_exact_mut(self.mean.len()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.sd) {
                *x = m + s * *x;
            }
        }
    }
}

//! Training data: IDX image files (MNIST family), DEEP-style text databases,
//! and the [`Dataset`] the engine consumes.

pub mod database;
pub mod error;
pub mod split;
pub mod idx;
pub mod patches;
pub mod preprocess;
pub mod standardisation;

pub use database::{parse_database, Database};
pub use error::{quote, sanitise, DataError, DataErrorKind, MAX_IMAGE_PIXELS};
pub use idx::{dataset_from_idx, parse_idx_images, parse_idx_labels, IdxImages};
pub use preprocess::{dataset_from_database, Preprocessing, Scaling};
pub use standardisation::Standardisation;

#[cfg(not(target_arch = "wasm32"))]
pub use database::read_database;
#[cfg(not(target_arch = "wasm32"))]
pub use idx::load_idx_dataset;

/// What a data file holds, judged by its first bytes (see [`file_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// An IDX file, raw or gzip-compressed.
    Idx,
    /// A DEEP text database.
    Database,
}

/// An IDX file starts with the gzip magic or with its own magic, whose first two bytes
/// are zero; text never starts with NUL bytes, so anything else is read as a database.
/// A file that is neither is reported by the database reader, with the bytes it found.
pub fn file_kind(start: &[u8]) -> FileKind {
    if start.starts_with(&idx::GZIP_MAGIC) || start.starts_with(&[0, 0]) {
        FileKind::Idx
    } else {
        FileKind::Database
    }
}

/// Case values, row-major (case by case).
#[derive(Debug, Clone, PartialEq)]
pub enum CaseValues {
    /// Image pixels; the value is byte / 255. Kept as bytes because 60,000 MNIST
    /// digits take 47 MB this way and 188 MB as f32.
    Bytes(Vec<u8>),
    Floats(Vec<f32>),
}

/// Target variables of a database, `names.len()` values per case.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    pub names: Vec<String>,
    /// n_cases × names.len(), row-major, as read (not rescaled).
    pub values: Vec<f32>,
}

impl Targets {
    pub fn n_targets(&self) -> usize {
        self.names.len()
    }

    /// The class of each case when the targets encode classes: the index of the
    /// largest target (the first one on ties).
    pub fn classes(&self) -> Vec<u32> {
        let width = self.n_targets();
        if width == 0 {
            return Vec::new();
        }
        self.values
            .chunks_exact(width)
            .map(|case| {
                let mut best = 0;
                for (i, &value) in case.iter().enumerate() {
                    if value > case[best] {
                        best = i;
                    }
                }
                best as u32
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub n_cases: usize,
    pub n_inputs: usize,
    /// (rows, cols) for image data.
    pub image_shape: Option<(usize, usize)>,
    /// n_cases × n_inputs, every value in [0, 1].
    pub values: CaseValues,
    /// The class of each case, for classification.
    pub labels: Option<Vec<u32>>,
    /// One name per input: the database variable, or "px{index}" for pixels.
    pub input_names: Vec<String>,
    pub targets: Option<Targets>,
}

impl Dataset {
    /// Real-valued cases, `values.len() / n_inputs` of them, with inputs named `x0, x1, …`
    /// and no labels or targets: propagated layers, synthetic and hand-made data.
    pub fn from_floats(name: &str, n_inputs: usize, values: Vec<f32>) -> Dataset {
        assert!(n_inputs > 0 && values.len().is_multiple_of(n_inputs), "{} values do not make whole cases of {n_inputs} inputs", values.len());
        Dataset {
            name: name.to_string(),
            n_cases: values.len() / n_inputs,
            n_inputs,
            image_shape: None,
            values: CaseValues::Floats(values),
            labels: None,
            input_names: (0..n_inputs).map(|i| format!("x{i}")).collect(),
            targets: None,
        }
    }

    /// Writes case `case` into `out`, which must hold exactly `n_inputs` values.
    pub fn case_into(&self, case: usize, out: &mut [f32]) {
        assert_eq!(out.len(), self.n_inputs, "output slice must hold one case");
        assert!(
            case < self.n_cases,
            "case {case} out of range ({} cases)",
            self.n_cases
        );
        let range = case * self.n_inputs..(case + 1) * self.n_inputs;
        match &self.values {
            CaseValues::Bytes(bytes) => {
                for (o, &b) in out.iter_mut().zip(&bytes[range]) {
                    *o = f32::from(b) / 255.0;
                }
            }
            CaseValues::Floats(floats) => out.copy_from_slice(&floats[range]),
        }
    }

    /// Writes the given cases one after another into `out` (cases.len() × n_inputs).
    pub fn gather_into(&self, cases: &[usize], out: &mut [f32]) {
        assert_eq!(
            out.len(),
            cases.len() * self.n_inputs,
            "output slice must hold the batch"
        );
        if self.n_inputs == 0 {
            return;
        }
        match &self.values {
            // The byte-to-[0, 1] conversion compiled for wide vectors: it is per pixel of
            // every batch the CPU trainer gathers.
            CaseValues::Bytes(bytes) => crate::backend::wide::wide(#[inline(always)] || {
                for (&case, row) in cases.iter().zip(out.chunks_exact_mut(self.n_inputs)) {
                    assert!(case < self.n_cases, "case {case} out of range ({} cases)", self.n_cases);
                    for (o, &b) in row.iter_mut().zip(&bytes[case * self.n_inputs..(case + 1) * self.n_inputs]) {
                        *o = f32::from(b) / 255.0;
                    }
                }
            }),
            CaseValues::Floats(_) => {
                for (&case, row) in cases.iter().zip(out.chunks_exact_mut(self.n_inputs)) {
                    self.case_into(case, row);
                }
            }
        }
    }

    /// Mean of each input over all cases (e.g. to initialise visible biases).
    pub fn input_means(&self) -> Vec<f32> {
        if self.n_inputs == 0 {
            return Vec::new();
        }
        let mut sums = vec![0f64; self.n_inputs];
        match &self.values {
            CaseValues::Bytes(bytes) => {
                for case in bytes.chunks_exact(self.n_inputs) {
                    for (s, &b) in sums.iter_mut().zip(case) {
                        *s += f64::from(b) / 255.0;
                    }
                }
            }
            CaseValues::Floats(floats) => {
                for case in floats.chunks_exact(self.n_inputs) {
                    for (s, &v) in sums.iter_mut().zip(case) {
                        *s += f64::from(v);
                    }
                }
            }
        }
        let n = self.n_cases.max(1) as f64;
        sums.into_iter().map(|s| (s / n) as f32).collect()
    }

    /// The given cases, in the given order, with their labels and targets.
    pub fn subset(&self, cases: &[usize]) -> Dataset {
        fn pick<T: Copy>(all: &[T], width: usize, cases: &[usize]) -> Vec<T> {
            let mut picked = Vec::with_capacity(cases.len() * width);
            for &case in cases {
                picked.extend_from_slice(&all[case * width..(case + 1) * width]);
            }
            picked
        }
        let width = self.n_inputs;
        let values = match &self.values {
            CaseValues::Bytes(bytes) => CaseValues::Bytes(pick(bytes, width, cases)),
            CaseValues::Floats(floats) => CaseValues::Floats(pick(floats, width, cases)),
        };
        Dataset {
            name: self.name.clone(),
            n_cases: cases.len(),
            n_inputs: self.n_inputs,
            image_shape: self.image_shape,
            values,
            labels: self.labels.as_ref().map(|labels| pick(labels, 1, cases)),
            input_names: self.input_names.clone(),
            targets: self.targets.as_ref().map(|t| Targets {
                names: t.names.clone(),
                values: pick(&t.values, t.n_targets(), cases),
            }),
        }
    }

    /// The first `n` cases, or all of them when there are fewer.
    pub fn take_first(&self, n: usize) -> Dataset {
        let cases: Vec<usize> = (0..n.min(self.n_cases)).collect();
        self.subset(&cases)
    }
}

//! Reading data files into what a model sees: IDX images (raw or gzip'd) or DEEP databases
//! (text/CSV), scaled to [0, 1], then standardised for Gaussian visible units. Training fits
//! the database scaling and the standardisation; evaluation and sampling reapply the ones
//! saved in the model.

use deepbelief::data::{self, Dataset, FileKind, Preprocessing, Scaling, Standardisation};
use deepbelief::format::SavedDbn;
use deepbelief::model::VisibleUnits;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What the training data section asks for.
#[derive(Clone, Debug)]
pub struct DataSpec {
    pub train_images: PathBuf,
    pub train_labels: Option<PathBuf>,
    pub visible: VisibleUnits,
    /// How database columns become inputs in [0, 1] (ignored for IDX images).
    pub scaling: Scaling,
    /// Database columns to use as inputs; all of them but the targets when `None`.
    pub inputs: Option<Vec<String>>,
    /// Database columns the supervised stage learns to predict.
    pub targets: Option<Vec<String>>,
}

pub struct TrainingData {
    /// What the first RBM trains on.
    pub dataset: Dataset,
    /// Per-input mean and standard deviation of the data in [0, 1], before standardisation.
    pub raw_statistics: Standardisation,
    pub standardisation: Option<Standardisation>,
    pub preprocessing: Option<Preprocessing>,
}

/// IDX (raw or gzip'd) or a DEEP text database, by the file's first bytes.
fn file_kind(path: &Path) -> Result<FileKind, String> {
    let mut start = [0u8; 4];
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: cannot open the file ({e})", path.display()))?;
    let read = file.read(&mut start).map_err(|e| format!("{}: cannot read the file ({e})", path.display()))?;
    Ok(data::file_kind(&start[..read]))
}

pub fn load_training_data(spec: &DataSpec) -> Result<TrainingData, String> {
    let (raw, preprocessing) = match file_kind(&spec.train_images)? {
        FileKind::Idx => {
            if spec.inputs.is_some() || spec.targets.is_some() {
                return Err(format!("--inputs and --targets name database columns, but {} is an IDX image file", spec.train_images.display()));
            }
            let dataset = data::load_idx_dataset(&spec.train_images, spec.train_labels.as_deref()).map_err(|e| e.to_string())?;
            if let (Some(labels), Some(path)) = (&dataset.labels, &spec.train_labels) {
                data::idx::check_training_labels(&path.display().to_string(), labels).map_err(|e| e.to_string())?;
            }
            (dataset, None)
        }
        FileKind::Database => {
            if let Some(labels) = &spec.train_labels {
                return Err(format!(
                    "data.train_labels (--train-labels) {} goes with IDX image files, but {} is a text database",
                    labels.display(),
                    spec.train_images.display()
                ));
            }
            let db = data::read_database(&spec.train_images).map_err(|e| e.to_string())?;
            let targets: Vec<&str> = spec.targets.iter().flatten().map(String::as_str).collect();
            let inputs: Vec<&str> = match &spec.inputs {
                Some(names) => names.iter().map(String::as_str).collect(),
                None => db.names.iter().map(String::as_str).filter(|name| !targets.iter().any(|t| t.eq_ignore_ascii_case(name))).collect(),
            };
            if let Some(both) = inputs.iter().find(|i| targets.iter().any(|t| t.eq_ignore_ascii_case(i))) {
                return Err(format!("{}: variable {} is both an input (--inputs) and a target (--targets)", spec.train_images.display(), data::quote(both)));
            }
            let (dataset, preprocessing) = data::dataset_from_database(&db, &inputs, &targets, spec.scaling).map_err(|e| e.to_string())?;
            (dataset, Some(preprocessing))
        }
    };
    let raw_statistics = Standardisation::fit(&raw);
    let (dataset, standardisation) = match spec.visible {
        VisibleUnits::Bernoulli => (raw, None),
        // Unit-variance Gaussian units model each input as N(b + Wh, 1): the data must be
        // standardised for that variance to be right.
        VisibleUnits::Gaussian => (raw_statistics.apply(&raw), Some(raw_statistics.clone())),
    };
    Ok(TrainingData { dataset, raw_statistics, standardisation, preprocessing })
}

/// `path` as the model's first layer sees it: the model's database scaling and
/// standardisation applied. `flag` names the option the file came from, for errors.
pub fn load_model_input(path: &Path, model: &SavedDbn, flag: &str) -> Result<Dataset, String> {
    load_model_data(path, None, &[], model, flag)
}

/// Like `load_model_input`, and with what the supervised part is tested against: IDX
/// `labels`, or the database columns named `targets` (which are then not inputs).
pub fn load_model_data(path: &Path, labels: Option<&Path>, targets: &[String], model: &SavedDbn, flag: &str) -> Result<Dataset, String> {
    let dataset = match (file_kind(path)?, &model.preprocessing) {
        (FileKind::Idx, None) => data::load_idx_dataset(path, labels).map_err(|e| e.to_string())?,
        (FileKind::Database, Some(preprocessing)) => {
            let db = data::read_database(path).map_err(|e| e.to_string())?;
            let names: Vec<&str> = targets.iter().map(String::as_str).collect();
            let target_columns = db.column_indices(&names).map_err(|e| e.to_string())?;
            let input_columns: Vec<usize> = (0..db.n_vars()).filter(|c| !target_columns.contains(c)).collect();
            preprocessing.apply(&db, &input_columns, &target_columns).map_err(|e| e.to_string())?
        }
        (FileKind::Idx, Some(_)) => return Err(format!("{flag} {}: an IDX image file, but the model was trained on a text database", path.display())),
        (FileKind::Database, None) => return Err(format!("{flag} {}: a text database, but the model was trained on IDX images", path.display())),
    };
    let n_visible = model.n_inputs();
    if dataset.n_inputs != n_visible {
        return Err(format!(
            "{flag} {}: {} inputs per case{}, but the model's visible layer has {n_visible} units",
            path.display(),
            dataset.n_inputs,
            dataset.image_shape.map(|(r, c)| format!(" ({r}×{c} images)")).unwrap_or_default()
        ));
    }
    Ok(match &model.standardisation {
        Some(standardisation) => standardisation.apply(&dataset),
        None => dataset,
    })
}

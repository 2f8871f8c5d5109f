//! Saving and loading models (the CLI's `model.json`, docs/MODEL_FORMAT.md), and the DEEP.LOG
//! and activation exports, built by the same library code as `deepbelief train`
//! (`report::training_log`), so files move freely between the page and the command line.

use super::training::PageConfig;
use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::data::{Dataset, Standardisation};
use crate::engine::stack::StackRun;
use crate::format::{self, SavedDbn};
use crate::model::Dbn;
use crate::report::classification::ActivationSelection;
use crate::report::deep_log::{DataSummary, UnitActivity};
use crate::report::deep_log_supervised::{analyze_tables, SupervisedLog};
use crate::report::training_log::{self, LayerOutcome, MEASURED_CASES};
use crate::supervised::evaluation::{dataset_inputs, evaluate_layers, targets_for};
use crate::supervised::SavedSupervised;
use crate::train::GreedyTrainer;
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[derive(Serialize)]
struct ModelSummary {
    /// `[n_visible, n_hidden]` per RBM layer, bottom up.
    layers: Vec<(usize, usize)>,
    supervised: Option<SupervisedSummary>,
    /// Weights and biases of every layer, supervised ones included.
    parameters: usize,
}

#[derive(Serialize)]
struct SupervisedSummary {
    hidden: Vec<usize>,
    n_outputs: usize,
}

#[wasm_bindgen]
impl Playground {
    /// The trained layers as `model.json` text. During training, the layers finished so far.
    pub fn save_model(&self) -> Result<String, JsError> {
        format::to_json_checked(&self.saved_model()?).map_err(|e| JsError::new(&e))
    }

    /// Reads `model.json` text (`name` begins every error). The model must fit the loaded
    /// data; on any error nothing changes. On success it replaces the run: every layer is
    /// trained, and chains and the dream stop.
    pub fn load_model(&mut self, name: &str, text: &str) -> Result<JsValue, JsError> {
        let saved = format::from_json(name, text).map_err(js_error)?;
        let data = self.data.as_ref().ok_or_else(|| JsError::new(&format!("{name}: load data before a model, so the model can be checked against it")))?;
        let n_visible = saved.n_inputs();
        if n_visible != data.n_inputs {
            return Err(JsError::new(&format!(
                "{name}: field `layers[0].n_visible` is {n_visible}, but the loaded data ({}) has {} inputs per case; load matching data first",
                data.name, data.n_inputs
            )));
        }
        if let (Some(file), Some(loaded)) = (&saved.preprocessing, &self.preprocessing) {
            if !file.kept_names.iter().map(|n| n.to_lowercase()).eq(loaded.kept_names.iter().map(|n| n.to_lowercase())) {
                return Err(JsError::new(&format!(
                    "{name}: field `preprocessing.kept_names` is {:?}, but the loaded database ({}) has the inputs {:?}; load the database the model was trained on",
                    file.kept_names, data.name, loaded.kept_names
                )));
            }
        }
        // Batch settings are checked against the number of training cases, which is the
        // page's, not the file's: a model trained on more cases must still load. The file's
        // own settings go back in once the trainer exists.
        let mut relaxed = saved.config.clone();
        relaxed.rbm.batch_size = None;
        relaxed.rbm.n_batches = 1;
        let training = self.split_training_cases()?;
        let mut trainer = GreedyTrainer::new(relaxed, &training).map_err(|e| JsError::new(&format!("{name}: field `config`: {e}")))?;
        trainer.config = saved.config.clone();
        trainer.dbn = saved.dbn.clone();
        *self.stack.borrow_mut() = Some(StackRun::from_greedy(trainer));
        self.training_data = Some(training);
        self.config = Some(PageConfig { stack: saved.config.clone(), supervised: saved.supervised.as_ref().map(|s| s.config.clone()) });
        self.supervised = saved.supervised.clone();
        self.drop_chains();
        self.chain_spec = None;
        self.views.dream = None;
        self.views.loaded = Some(saved);
        self.model_summary()
    }

    /// The DEEP.LOG report of the trained layers (and the supervised layers, when present).
    pub fn deep_log(&self) -> Result<String, JsError> {
        let model = self.saved_model()?;
        let training = self.training_cases()?;
        let statistics = Standardisation::fit(&training);
        let data_summary = DataSummary {
            train_file: self.data()?.name.clone(),
            labels_file: None,
            n_cases: training.n_cases,
            image_shape: training.image_shape,
            input_means: statistics.mean,
            input_sds: statistics.sd,
            standardised: false,
            preprocessing: self.preprocessing.as_ref().map(training_log::describe_preprocessing).unwrap_or_default(),
        };
        let outcomes = self.layer_outcomes(&model.dbn, &training);
        let program = format!("deepbelief {} (playground page)", env!("CARGO_PKG_VERSION"));
        let measured_cases = training.n_cases.min(MEASURED_CASES);
        let log = training_log::deep_log(program, data_summary, &model.config, CpuBackend.describe(), &model.dbn, &outcomes, measured_cases);
        let supervised = model.supervised.as_ref().map(|saved| self.supervised_log(&model.dbn, saved, &training));
        Ok(log.render_with_supervised(supervised.as_ref()))
    }

    /// The activation file for every loaded case (held-out ones included): `selection` is the
    /// CLI's `SECTION:LAYER[:NEURON]` (e.g. `unsupervised:1`, `output:1`; numbered from 1 as in DEEP).
    pub fn activations(&self, selection: &str) -> Result<String, JsError> {
        let selection: ActivationSelection = selection.parse().map_err(|e: String| JsError::new(&format!("selection: {e}")))?;
        let dbn = self.trained_layers()?;
        let data = self.data()?;
        let mut inputs = vec![0.0; data.n_cases * data.n_inputs];
        data.gather_into(&(0..data.n_cases).collect::<Vec<_>>(), &mut inputs);
        let mut text = Vec::new();
        training_log::write_activation_file(&mut text, &CpuBackend, &dbn, self.supervised.as_ref(), &inputs, selection)
            .map_err(|e| JsError::new(&format!("selection: {e}")))?;
        String::from_utf8(text).map_err(js_error)
    }

    /// The model's shape (the layer in training included), or `null` before there is one.
    pub fn model_summary(&self) -> Result<JsValue, JsError> {
        let plain_mlp = self.is_plain_mlp() && self.supervised.is_some();
        let Some(dbn) = self.model().or_else(|| plain_mlp.then(Dbn::default)) else { return Ok(JsValue::NULL) };
        let mut parameters: usize = dbn.layers.iter().map(|l| l.weights.len() + l.n_visible + l.n_hidden).sum();
        let supervised = self.supervised.as_ref().map(|saved| {
            let layers = &saved.network.layers;
            parameters += layers.iter().map(|l| l.n_params()).sum::<usize>();
            SupervisedSummary { hidden: layers[..layers.len() - 1].iter().map(|l| l.n_out).collect(), n_outputs: saved.network.n_outputs() }
        });
        to_js(&ModelSummary { layers: dbn.layers.iter().map(|l| (l.n_visible, l.n_hidden)).collect(), supervised, parameters })
    }
}

impl Playground {
    /// The finished layers, or why there are none.
    fn trained_layers(&self) -> Result<Dbn, JsError> {
        let stack = self.stack.borrow();
        let stack = stack.as_ref().ok_or_else(|| JsError::new("no model yet: train or load one"))?;
        // A plain MLP has no RBM layers: its supervised layers are the model.
        let plain_mlp_trained = stack.greedy().config.is_plain_mlp() && self.supervised.is_some();
        if stack.greedy().dbn.layers.is_empty() && !plain_mlp_trained {
            return Err(JsError::new("no layer has finished training yet"));
        }
        Ok(stack.greedy().dbn.clone())
    }

    /// Whether no layer of this page's run has a record (a loaded model's file speaks for it).
    fn run_is_empty(&self) -> bool {
        self.stack.borrow().as_ref().is_none_or(|stack| stack.record().is_empty())
    }

    /// The model as the CLI would save it: the finished layers, their training records, the
    /// data's shape and means. A model loaded and not retrained since keeps what its file
    /// said of the data it was trained on.
    fn saved_model(&self) -> Result<SavedDbn, JsError> {
        let dbn = self.trained_layers()?;
        let mut config = self.stack.borrow().as_ref().expect("trained_layers found the run").greedy().config.clone();
        config.layers.truncate(dbn.layers.len());
        let supervised = self.supervised.clone();
        if let Some(loaded) = self.views.loaded.as_ref().filter(|_| self.run_is_empty()) {
            return Ok(SavedDbn { config, dbn, supervised, ..loaded.clone() });
        }
        let training = self.training_cases()?;
        let outcomes = self.layer_outcomes(&dbn, &training);
        Ok(SavedDbn {
            image_shape: training.image_shape,
            visible_means: Some(training.input_means()),
            standardisation: None,
            preprocessing: self.preprocessing.clone(),
            config,
            training: training_log::training_records(&outcomes),
            dbn,
            supervised,
        })
    }

    /// Each finished layer's outcome: from this page's training history where there is one,
    /// else from the loaded file's records; the final error and unit activity measured now on
    /// the training cases.
    fn layer_outcomes(&self, dbn: &Dbn, training: &Dataset) -> Vec<LayerOutcome> {
        let measured = self.measured_layers(dbn, training);
        let loaded = self.views.loaded.as_ref().filter(|_| self.run_is_empty());
        let stack = self.stack.borrow();
        let records = stack.as_ref().map_or(&[][..], |stack| &stack.record().layers[..]);
        measured
            .into_iter()
            .enumerate()
            .map(|(k, (final_error, activity))| {
                let mut outcome = match (records.get(k), loaded.and_then(|l| l.training.get(k))) {
                    (Some(record), _) => record.outcome(),
                    (None, Some(record)) => LayerOutcome { epochs: Vec::new(), stop: record.stop, ..LayerOutcome::started(Vec::new(), 0, record.init_error) },
                    // Nothing recorded the initial error; the file needs a number, and the
                    // trained layer's error is the honest bound the report can give.
                    (None, None) => LayerOutcome::started(Vec::new(), 0, final_error),
                };
                outcome.final_error = final_error;
                outcome.activity = activity;
                outcome
            })
            .collect()
    }

    /// DEEP.LOG's supervised sections: the layers, the criterion and confusion matrix on the
    /// training cases and on the held-out ones, and the Analyze tables of the stack as it now
    /// is (after any fine-tuning; the CLI's are of the pretrained stack).
    fn supervised_log(&self, dbn: &Dbn, saved: &SavedSupervised, training: &Dataset) -> SupervisedLog {
        let mut log = training_log::supervised_log(dbn, saved);
        let held_out = self.data.as_ref().filter(|_| !self.split.held_out.is_empty()).map(|data| data.subset(&self.split.held_out));
        let sets = [("training data", Some(training)), ("held-out data", held_out.as_ref())];
        for (what, set) in sets.into_iter().filter_map(|(what, set)| Some((what, set?))) {
            // Data whose targets do not fit the model (another data set loaded since) have no
            // figures to give; the rest of the report still stands.
            let Ok(targets) = targets_for(set, saved, &set.name) else { continue };
            let evaluation = evaluate_layers(&CpuBackend, dbn, saved, &dataset_inputs(set), &targets);
            if what == "training data" {
                log.criterion_value = evaluation.criterion;
            }
            if let Some(confusion) = evaluation.confusion {
                log.confusion.push((format!("{what} ({} cases)", set.n_cases), confusion));
            }
        }
        log.analyze = Some(analyze_tables(&CpuBackend, dbn, training, MEASURED_CASES));
        log
    }

    /// The layers' final errors and unit activity on the training cases, measured once per
    /// model and data: autosave calls `save_model` often, and measuring 10,000 cases through
    /// a large stack takes seconds on one thread.
    fn measured_layers(&self, dbn: &Dbn, training: &Dataset) -> Vec<(f64, Vec<UnitActivity>)> {
        let key = (training.name.clone(), training.n_cases);
        let mut cache = self.views.measured.borrow_mut();
        match cache.as_ref() {
            Some(cached) if cached.data == key && cached.dbn == *dbn => cached.figures.clone(),
            _ => {
                let figures = training_log::measure_layers(&CpuBackend, dbn, training);
                *cache = Some(MeasuredLayers { data: key, dbn: dbn.clone(), figures: figures.clone() });
                figures
            }
        }
    }
}

/// Figures of one model on one data set (named, and counted so a new held-out split counts
/// as new data).
pub(super) struct MeasuredLayers {
    data: (String, usize),
    dbn: Dbn,
    figures: Vec<(f64, Vec<UnitActivity>)>,
}

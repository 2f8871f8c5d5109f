//! `deepbelief train`'s settings: a TOML file (`--config`), flags, or both. The settings start
//! from the preset (the measured defaults; `--preset deep` for Masters' DEEP settings exactly,
//! `--preset hinton` or `--hinton` for Hinton's recipe), then the file's
//! values, then the flags: a flag always wins.
//!
//! ```toml
//! layers = [500, 500, 2000]
//! greedy_mean_field = true
//! preset = "deep"              # optional: "default" (measured), "deep" (Masters), "hinton"
//!
//! [data]
//! train_images = "train-images-idx3-ubyte.gz"   # relative to this file's folder
//! train_labels = "train-labels-idx1-ubyte.gz"   # optional
//! visible = "bernoulli"                         # or "gaussian" (inputs are standardised)
//! scaling = "rescale"                           # DEEP databases only, or "binary_split"
//! inputs = ["X1", "X2"]                         # DEEP databases only; default all but targets
//! targets = ["Y"]                               # DEEP databases only: supervised targets
//!
//! [supervised]                                  # any SupervisedConfig field
//! hidden = [100]
//! optimizer = "sgd"
//! fine_tune = true
//!
//! [rbm]                                         # any CdConfig field
//! learning_rate = 0.05
//! cd_k_end = 1
//! ```

use crate::backend_choice::BackendChoice;
use crate::input::DataSpec;
use clap::{ArgAction, Args, ValueEnum};
use deepbelief::data::error::FOREIGN_MESSAGE_CHARS;
use deepbelief::data::{sanitise, Scaling};
use deepbelief::model::VisibleUnits;
use crate::supervised_args::SupervisedSettings;
use deepbelief::supervised::SupervisedConfig;
use deepbelief::train::{CdConfig, ConfigError, Schedule, StackConfig};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct TrainArgs {
    /// TOML settings file; flags override its values.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Training data: an IDX image file (raw or .gz) or a DEEP text/CSV database.
    #[arg(long, value_name = "FILE", visible_alias = "data")]
    pub train_images: Option<PathBuf>,
    /// IDX label file matching --train-images (checked for count; kept with the data).
    #[arg(long, value_name = "FILE")]
    pub train_labels: Option<PathBuf>,
    /// Hidden layer sizes from the bottom up, e.g. 500,500,2000; 0 for none (a plain MLP,
    /// trained by the supervised stage alone: needs --train-labels or --targets).
    #[arg(long, value_name = "SIZES", value_parser = parse_layer_sizes)]
    pub rbm_layers: Option<LayerSizes>,
    /// Starts from Hinton's recipe (fixed schedule, CD-1, batches of 100) instead of Masters'.
    #[arg(long)]
    pub hinton: bool,
    /// Starting settings: default (measured to give good models), deep (Masters' DEEP program
    /// exactly, RBM and supervised stages) or hinton (Hinton's recipe for the RBMs).
    #[arg(long, value_enum, conflicts_with = "hinton")]
    pub preset: Option<Preset>,
    /// CD chain length throughout (sets --cd-k-start and --cd-k-end).
    #[arg(long, value_name = "K", conflicts_with_all = ["cd_k_start", "cd_k_end"])]
    pub cd_k: Option<usize>,
    /// CD chain length in the first epoch.
    #[arg(long, value_name = "K")]
    pub cd_k_start: Option<usize>,
    /// CD chain length it moves toward.
    #[arg(long, value_name = "K")]
    pub cd_k_end: Option<usize>,
    /// Per-epoch smoothing rate moving k from start to end.
    #[arg(long, value_name = "RATE")]
    pub cd_k_rate: Option<f32>,
    /// The top RBM of a stack: the chain length it moves toward, at rate 0.1 (0: as the others)
    /// [20; 0 with --fine-tune, which makes it a feed-forward layer].
    #[arg(long, value_name = "K")]
    pub top_cd_k_end: Option<usize>,
    /// Persistent contrastive divergence (negative chains carry over between batches).
    #[arg(long)]
    pub pcd: bool,
    /// Negative chains kept by --pcd.
    #[arg(long, value_name = "N")]
    pub persistent_chains: Option<usize>,
    /// Most epochs per layer (convergence tests may stop earlier).
    #[arg(long, value_name = "N")]
    pub epochs: Option<usize>,
    /// Mini-batches per epoch (clears a batch size set by the preset or the file).
    #[arg(long, value_name = "N", conflicts_with = "batch_size")]
    pub batches: Option<usize>,
    /// Cases per mini-batch.
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,
    /// Starting learning rate.
    #[arg(long, value_name = "RATE")]
    pub learning_rate: Option<f32>,
    /// Adaptive (Masters: rate and momentum follow successive gradients) or fixed (Hinton).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleChoice>,
    /// Momentum at the start (fixed schedule: before --momentum-switch-epoch).
    #[arg(long, value_name = "M")]
    pub momentum_start: Option<f32>,
    /// Momentum it moves to.
    #[arg(long, value_name = "M")]
    pub momentum_end: Option<f32>,
    /// Fixed schedule: the epoch at which momentum switches to --momentum-end.
    #[arg(long, value_name = "EPOCH")]
    pub momentum_switch_epoch: Option<usize>,
    /// L2 penalty on the weights.
    #[arg(long, value_name = "P")]
    pub weight_penalty: Option<f32>,
    /// Strength of the pull toward --sparsity-target.
    #[arg(long, value_name = "P")]
    pub sparsity_penalty: Option<f32>,
    /// Mean hidden activation the sparsity penalty aims at.
    #[arg(long, value_name = "P")]
    pub sparsity_target: Option<f32>,
    /// Random initialisations tried per layer; the best reconstruction wins.
    #[arg(long, value_name = "N")]
    pub init_trials: Option<usize>,
    /// Cases that score each initialisation trial.
    #[arg(long, value_name = "N")]
    pub init_cases: Option<usize>,
    /// Visible reconstructions as expectations (true) or samples (false).
    #[arg(long, value_name = "BOOL", action = ArgAction::Set)]
    pub mean_field_visible: Option<bool>,
    /// Higher layers train on propagated probabilities (true) or samples of them (false).
    #[arg(long, value_name = "BOOL", action = ArgAction::Set)]
    pub greedy_mean_field: Option<bool>,
    /// Binarise each input batch by sampling.
    #[arg(long, value_name = "BOOL", action = ArgAction::Set)]
    pub sample_inputs: Option<bool>,
    /// Stop when max|increment| / max|weight| over an epoch falls below this.
    #[arg(long, value_name = "TOL")]
    pub convergence_tolerance: Option<f32>,
    /// Stop after this many epochs without a new minimum of that ratio.
    #[arg(long, value_name = "N")]
    pub max_no_improvement: Option<usize>,
    /// Visible units of the first layer; gaussian standardises every input.
    #[arg(long, value_enum)]
    pub visible: Option<VisibleChoice>,
    /// DEEP databases: how columns become inputs in [0, 1].
    #[arg(long, value_enum)]
    pub scaling: Option<ScalingChoice>,
    /// DEEP databases: input columns, comma-separated (default all).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub inputs: Option<Vec<String>>,
    /// DEEP databases: target columns the supervised layers learn, comma-separated.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub targets: Option<Vec<String>>,
    #[command(flatten)]
    pub supervised: crate::supervised_args::SupervisedArgs,
    /// Seed of every random choice (initialisation, shuffling, sampling).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Compute backend (this build trains on the CPU).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Output folder: model.json, DEEP.LOG, filters.png.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Refuse a run whose estimated memory exceeds this (bytes, or e.g. 8GiB); default:
    /// the machine's physical memory.
    #[arg(long, value_name = "BYTES", value_parser = crate::memory_limit::parse_memory_size)]
    pub max_memory: Option<u64>,
    /// Print the final figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Debug)]
pub struct LayerSizes(pub Vec<usize>);

/// `500,500,2000`: every size a whole number of at least 1, none missing; a lone `0` is no
/// RBM layers (DEEP's "0 RBM layers": a plain MLP).
fn parse_layer_sizes(text: &str) -> Result<LayerSizes, String> {
    if text.trim() == "0" {
        return Ok(LayerSizes(Vec::new()));
    }
    let sizes = text
        .split(',')
        .enumerate()
        .map(|(i, part)| match part.trim() {
            "" => Err(format!("size {} is empty (expected whole numbers separated by commas, e.g. 500,500,2000)", i + 1)),
            part => match part.parse::<usize>() {
                Ok(0) => Err(format!("size {} is 0 (every layer needs at least 1 unit)", i + 1)),
                Ok(size) => Ok(size),
                Err(_) => Err(format!("size {} is \"{part}\" (expected a whole number)", i + 1)),
            },
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LayerSizes(sizes))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VisibleChoice {
    Bernoulli,
    Gaussian,
}

impl From<VisibleChoice> for VisibleUnits {
    fn from(choice: VisibleChoice) -> Self {
        match choice {
            VisibleChoice::Bernoulli => VisibleUnits::Bernoulli,
            VisibleChoice::Gaussian => VisibleUnits::Gaussian,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScheduleChoice {
    Adaptive,
    Fixed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalingChoice {
    /// (x − min) / (max − min) over the training data.
    Rescale,
    /// 1 above the training mean, else 0.
    BinarySplit,
}

impl From<ScalingChoice> for Scaling {
    fn from(choice: ScalingChoice) -> Self {
        match choice {
            ScalingChoice::Rescale => Scaling::Rescale,
            ScalingChoice::BinarySplit => Scaling::BinarySplit,
        }
    }
}

pub use deepbelief::preset::Preset;

/// The file's shape, only to check it: unknown keys and wrong types get the toml crate's
/// error, which names the key, line and column.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the values are read from the table; this checks their shape
struct SettingsFile {
    preset: Option<Preset>,
    layers: Option<Vec<usize>>,
    greedy_mean_field: Option<bool>,
    #[serde(default)]
    data: DataSection,
    rbm: Option<CdConfig>,
    supervised: Option<SupervisedConfig>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DataSection {
    train_images: Option<PathBuf>,
    train_labels: Option<PathBuf>,
    visible: Option<VisibleChoice>,
    scaling: Option<ScalingChoice>,
    inputs: Option<Vec<String>>,
    targets: Option<Vec<String>>,
}

/// Everything `train` needs, merged and checked.
pub struct TrainSettings {
    pub data: DataSpec,
    pub stack: StackConfig,
    pub backend: BackendChoice,
    pub out: PathBuf,
    pub json: bool,
    /// The memory ceiling (`--max-memory`); `None`: the physical memory.
    pub max_memory: Option<u64>,
    /// The supervised stage's settings (it runs when the data have labels or targets).
    pub supervised: SupervisedSettings,
}

/// What the file sets: its data section, and its top-level and `[rbm]` keys as TOML values
/// to lay over the preset.
struct FileSettings {
    preset: Option<Preset>,
    layers: Option<Vec<usize>>,
    greedy_mean_field: Option<bool>,
    data: DataSection,
    rbm: toml::Table,
    supervised: Option<SupervisedConfig>,
}

fn read_settings_file(path: &Path) -> Result<FileSettings, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read the settings file ({e})"))?;
    // toml's messages quote the offending line whole: cut and escape it like every parser's.
    let describe = |e: toml::de::Error| format!("{name}: {}", sanitise(e.to_string().trim_end(), FOREIGN_MESSAGE_CHARS));
    let checked: SettingsFile = toml::from_str(&text).map_err(describe)?;
    let mut table: toml::Table = text.parse().map_err(describe)?;
    let rbm = match table.remove("rbm") {
        Some(toml::Value::Table(rbm)) => rbm,
        _ => toml::Table::new(),
    };
    for (key, place) in [("n_hidden", "`layers` (e.g. layers = [500])"), ("visible_units", "`visible` under [data]")] {
        if rbm.contains_key(key) {
            return Err(format!("{name}: [rbm] {key} is set by {place}, not under [rbm]"));
        }
    }
    // Paths in the file are relative to the file, so a settings file can travel with its data.
    let folder = path.parent().unwrap_or(Path::new(""));
    let mut data = checked.data;
    data.train_images = data.train_images.map(|p| folder.join(p));
    data.train_labels = data.train_labels.map(|p| folder.join(p));
    Ok(FileSettings { preset: checked.preset, layers: checked.layers, greedy_mean_field: checked.greedy_mean_field, data, rbm, supervised: checked.supervised })
}

/// The preset with the file's `[rbm]` values laid over it.
fn rbm_config(preset: Preset, file_rbm: &toml::Table, source: &str) -> Result<CdConfig, String> {
    let base = preset.rbm();
    let mut table = toml::Table::try_from(&base).map_err(|e| format!("the {preset:?} preset: {e}"))?;
    // A batch count in the file replaces a batch size from the preset; otherwise the
    // preset's batch size would silently win.
    if file_rbm.contains_key("n_batches") && !file_rbm.contains_key("batch_size") {
        table.remove("batch_size");
    }
    table.extend(file_rbm.iter().map(|(k, v)| (k.clone(), v.clone())));
    toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| format!("{source}: [rbm]: {}", sanitise(e.to_string().trim_end(), FOREIGN_MESSAGE_CHARS)))
}

impl TrainArgs {
    pub fn settings(self) -> Result<TrainSettings, String> {
        let file = match &self.config {
            Some(path) => Some(read_settings_file(path)?),
            None => None,
        };
        let source = self.config.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let preset = if self.hinton { Preset::Hinton } else { self.preset.or(file.as_ref().and_then(|f| f.preset)).unwrap_or(Preset::Default) };
        let empty = toml::Table::new();
        let mut rbm = rbm_config(preset, file.as_ref().map(|f| &f.rbm).unwrap_or(&empty), &source)?;
        self.apply_rbm_flags(&mut rbm);

        let (file_data, file_layers, file_greedy, file_supervised) = match file {
            Some(f) => (f.data, f.layers, f.greedy_mean_field, f.supervised),
            None => (DataSection::default(), None, None, None),
        };
        let visible: VisibleUnits = self.visible.or(file_data.visible).map(Into::into).unwrap_or(VisibleUnits::Bernoulli);
        rbm.visible_units = visible;
        let train_images = self
            .train_images
            .or(file_data.train_images)
            .ok_or("no training data: give --train-images FILE, or train_images under [data] in the --config file")?;
        let data = DataSpec {
            train_images,
            train_labels: self.train_labels.or(file_data.train_labels),
            visible,
            scaling: self.scaling.or(file_data.scaling).unwrap_or(ScalingChoice::Rescale).into(),
            inputs: self.inputs.or(file_data.inputs),
            targets: self.targets.clone().or(file_data.targets),
        };
        let layers = self.rbm_layers.map(|l| l.0).or(file_layers).unwrap_or_else(|| StackConfig::default().layers);
        rbm.n_hidden = layers.first().copied().unwrap_or(0);
        let mut stack = StackConfig { layers, rbm, greedy_mean_field: self.greedy_mean_field.or(file_greedy).unwrap_or(true), ..preset.stack() };
        let is_database_targets = data.targets.is_some();
        let supervised = self.supervised.settings(file_supervised, is_database_targets, stack.rbm.seed, preset.supervised())?;
        // Long chains in the top RBM buy varied samples; fine-tuning turns it into a
        // feed-forward layer, where they bought nothing (500-500-2000: 2.34% test error with
        // them, 1.98% without, docs/DEFAULTS.md) and cost time.
        if supervised.config.fine_tune && (data.train_labels.is_some() || is_database_targets) {
            stack.top_cd_k_end = 0;
        }
        if let Some(k) = self.top_cd_k_end {
            stack.top_cd_k_end = k;
        }
        // Everything that does not depend on the data is checked before any is read.
        stack.validate_allowing_plain_mlp(usize::MAX).map_err(describe_config_error)?;
        Ok(TrainSettings { data, stack, backend: self.backend, out: self.out, json: self.json, max_memory: self.max_memory, supervised })
    }

    fn apply_rbm_flags(&self, rbm: &mut CdConfig) {
        fn set<T: Copy>(flag: Option<T>, field: &mut T) {
            if let Some(value) = flag {
                *field = value;
            }
        }
        if let Some(k) = self.cd_k {
            rbm.cd_k_start = k;
            rbm.cd_k_end = k;
        }
        set(self.cd_k_start, &mut rbm.cd_k_start);
        set(self.cd_k_end, &mut rbm.cd_k_end);
        set(self.cd_k_rate, &mut rbm.cd_k_rate);
        if self.pcd {
            rbm.persistent = true;
        }
        set(self.persistent_chains, &mut rbm.n_persistent_chains);
        set(self.epochs, &mut rbm.epochs);
        if let Some(n) = self.batches {
            rbm.n_batches = n;
            rbm.batch_size = None;
        }
        if self.batch_size.is_some() {
            rbm.batch_size = self.batch_size;
        }
        set(self.learning_rate, &mut rbm.learning_rate);
        if let Some(schedule) = self.schedule {
            rbm.schedule = match schedule {
                ScheduleChoice::Adaptive => Schedule::Adaptive,
                ScheduleChoice::Fixed => Schedule::Fixed,
            };
        }
        set(self.momentum_start, &mut rbm.initial_momentum);
        set(self.momentum_end, &mut rbm.final_momentum);
        set(self.momentum_switch_epoch, &mut rbm.momentum_switch_epoch);
        set(self.weight_penalty, &mut rbm.weight_penalty);
        set(self.sparsity_penalty, &mut rbm.sparsity_penalty);
        set(self.sparsity_target, &mut rbm.sparsity_target);
        set(self.init_trials, &mut rbm.init_trials);
        set(self.init_cases, &mut rbm.init_cases);
        set(self.mean_field_visible, &mut rbm.mean_field_visible);
        set(self.sample_inputs, &mut rbm.sample_inputs);
        set(self.convergence_tolerance, &mut rbm.convergence_tolerance);
        set(self.max_no_improvement, &mut rbm.max_no_improvement);
        set(self.seed, &mut rbm.seed);
    }
}

/// The flag and the file key that set a `CdConfig`/`StackConfig` field.
fn flag_for(field: &str) -> &'static str {
    match field {
        "layers" | "n_hidden" => "--rbm-layers",
        "epochs" => "--epochs",
        "n_batches" => "--batches",
        "batch_size" => "--batch-size",
        "cd_k_start" => "--cd-k-start (or --cd-k)",
        "cd_k_end" => "--cd-k-end (or --cd-k)",
        "cd_k_rate" => "--cd-k-rate",
        "n_persistent_chains" => "--persistent-chains",
        "weight_penalty" => "--weight-penalty",
        "sparsity_penalty" => "--sparsity-penalty",
        "sparsity_target" => "--sparsity-target",
        "init_trials" => "--init-trials",
        "init_cases" => "--init-cases",
        "learning_rate" => "--learning-rate",
        "initial_momentum" => "--momentum-start",
        "final_momentum" => "--momentum-end",
        "convergence_tolerance" => "--convergence-tolerance",
        "max_no_improvement" => "--max-no-improvement",
        "top_cd_k_end" => "--top-cd-k-end",
        _ => "",
    }
}

/// "invalid setting learning_rate (--learning-rate; [rbm] learning_rate in a settings file):
/// expected …".
pub fn describe_config_error(error: ConfigError) -> String {
    let key = match error.field {
        "layers" | "n_hidden" => "layers".to_string(),
        field => format!("[rbm] {field}"),
    };
    let flag = flag_for(error.field);
    let place = if flag.is_empty() { key } else { format!("{flag}; {key} in a settings file") };
    format!("invalid setting {} ({place}): {}", error.field, error.message)
}

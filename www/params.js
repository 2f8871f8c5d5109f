// Every training setting the page offers: its hash key, where it goes in the PageConfig
// (`{stack, supervised}`, serde names of src/train and src/supervised), label, group, type,
// default (equal to the Rust default), range and a one-line explanation; plus the presets.
// The architecture (RBM and supervised layer sizes) lives in panels/model.js.

const rbm = (field) => ['stack', 'rbm', field];
const sup = (field) => ['supervised', field];
const rule = (field) => ['supervised', 'step_rules', field];

// The optimisers of the supervised stage and fine-tuning (serde names of Optimizer).
const STAGE_OPTIMIZERS = [
  ['conjugate_gradient', 'Conjugate gradient'], ['sgd', 'SGD with momentum'],
  ['adaptive_step', 'Adaptive steps (Toman)'], ['rprop', 'iRprop+'], ['rprop_minus', 'RPROP (FANN\'s iRprop−)'],
  ['quickprop', 'Quickprop'], ['bold_driver', 'Bold driver'], ['backprop', 'Batch back-propagation'],
  ['incremental', 'Incremental back-propagation'], ['levenberg_marquardt', 'Levenberg–Marquardt (small nets)'],
];

// type: int | float | bool | choice | optional-int (empty: not set).
export const PARAMS = [
  // RBM: schedule
  { key: 'epochs', path: rbm('epochs'), label: 'Epochs (at most)', group: 'rbm-schedule', type: 'int', default: 50, min: 1, max: 1000000, tip: 'Upper bound on passes over the training cases per layer; the convergence tests usually stop earlier.' },
  { key: 'schedule', path: rbm('schedule'), label: 'Schedule', group: 'rbm-schedule', type: 'choice', default: 'fixed', choices: [['adaptive', 'Adaptive (Masters)'], ['fixed', 'Fixed (Hinton)']], tip: 'Adaptive: learning rate and momentum follow the cosine between successive gradients. Fixed: constant rate, momentum switches once.' },
  { key: 'learning_rate', path: rbm('learning_rate'), label: 'Learning rate', group: 'rbm-schedule', type: 'float', default: 0.1, min: 0.000001, max: 10, tip: 'Step size of each weight update (the adaptive schedule then keeps it in [0.001, 1]).' },
  { key: 'initial_momentum', path: rbm('initial_momentum'), label: 'Initial momentum', group: 'rbm-schedule', type: 'float', default: 0.5, min: 0, max: 0.999, tip: 'Adaptive: where momentum starts. Fixed: momentum before the switch epoch.' },
  { key: 'final_momentum', path: rbm('final_momentum'), label: 'Final momentum', group: 'rbm-schedule', type: 'float', default: 0.9, min: 0, max: 0.999, tip: 'Adaptive: where momentum drifts to. Fixed: momentum from the switch epoch on.' },
  { key: 'momentum_switch_epoch', path: rbm('momentum_switch_epoch'), label: 'Momentum switch epoch', group: 'rbm-schedule', type: 'int', default: 5, min: 0, max: 1000000, tip: 'Fixed schedule only: the epoch at which momentum moves from initial to final.', advanced: true },
  // RBM: batches and CD
  { key: 'batch_size', path: rbm('batch_size'), label: 'Batch size', group: 'rbm-batches', type: 'optional-int', default: 100, min: 1, max: 1000000, tip: 'Cases per weight update; empty: the cases split into "Batches per epoch" batches.' },
  { key: 'n_batches', path: rbm('n_batches'), label: 'Batches per epoch', group: 'rbm-batches', type: 'int', default: 24, min: 1, max: 1000000, tip: 'Mini-batches per epoch when no batch size is set (DEEP).' },
  { key: 'cd_k_start', path: rbm('cd_k_start'), label: 'CD steps at start', group: 'rbm-batches', type: 'int', default: 1, min: 1, max: 1000, tip: 'Gibbs steps of contrastive divergence in the first epoch.' },
  { key: 'cd_k_end', path: rbm('cd_k_end'), label: 'CD steps at end', group: 'rbm-batches', type: 'int', default: 10, min: 1, max: 1000, tip: 'The chain length CD moves toward as training goes on.' },
  { key: 'cd_k_rate', path: rbm('cd_k_rate'), label: 'CD steps rate', group: 'rbm-batches', type: 'float', default: 0.05, min: 0, max: 1, tip: 'Exponential smoothing rate per epoch from the start to the end chain length.', advanced: true },
  { key: 'top_cd_k_end', path: ['stack', 'top_cd_k_end'], label: 'Top layer CD steps at end', group: 'rbm-batches', type: 'int', default: 20, min: 0, max: 1000, tip: 'The top RBM of a stack of two or more moves toward this chain length instead: longer chains there give varied samples (with fine-tuning they bought nothing: set 0 there). 0: like the other layers.' },
  { key: 'top_cd_k_rate', path: ['stack', 'top_cd_k_rate'], label: 'Top layer CD steps rate', group: 'rbm-batches', type: 'float', default: 0.1, min: 0, max: 1, tip: 'The top RBM\'s smoothing rate toward its chain length.', advanced: true },
  { key: 'mean_field_visible', path: rbm('mean_field_visible'), label: 'Mean-field reconstructions', group: 'rbm-batches', type: 'bool', default: true, tip: 'Reconstruct visible units with their expectations instead of samples.', advanced: true },
  { key: 'persistent', path: rbm('persistent'), label: 'Persistent CD', group: 'rbm-batches', type: 'bool', default: false, tip: 'Negative chains carry over between batches (Tieleman 2008).', advanced: true },
  { key: 'n_persistent_chains', path: rbm('n_persistent_chains'), label: 'Persistent chains', group: 'rbm-batches', type: 'int', default: 100, min: 1, max: 100000, tip: 'Number of persistent negative chains.', advanced: true },
  // RBM: penalties
  { key: 'weight_penalty', path: rbm('weight_penalty'), label: 'Weight penalty', group: 'rbm-penalties', type: 'float', default: 0.0002, min: 0, max: 1, tip: 'L2 penalty on the weights (never the biases).' },
  { key: 'sparsity_penalty', path: rbm('sparsity_penalty'), label: 'Sparsity penalty', group: 'rbm-penalties', type: 'float', default: 0.01, min: 0, max: 10, tip: 'Pushes each hidden unit\'s mean activation toward the sparsity target; 0 turns it off.' },
  { key: 'sparsity_target', path: rbm('sparsity_target'), label: 'Sparsity target', group: 'rbm-penalties', type: 'float', default: 0.1, min: 0.0001, max: 0.9999, tip: 'The mean hidden activation the sparsity penalty aims for.' },
  // RBM: initialisation and convergence
  { key: 'init_trials', path: rbm('init_trials'), label: 'Initialisation trials', group: 'rbm-init', type: 'int', default: 1, min: 1, max: 10000, tip: 'Random initialisations tried per layer; the best reconstruction wins.' },
  { key: 'init_cases', path: rbm('init_cases'), label: 'Cases per trial', group: 'rbm-init', type: 'int', default: 1000, min: 1, max: 100000000, tip: 'Cases that score each initialisation trial.', advanced: true },
  { key: 'convergence_tolerance', path: rbm('convergence_tolerance'), label: 'Convergence tolerance', group: 'rbm-init', type: 'float', default: 0.00001, min: 0, max: 1, tip: 'Stop a layer when max|increment| / max|weight| over an epoch falls below this.', advanced: true },
  { key: 'max_no_improvement', path: rbm('max_no_improvement'), label: 'Patience (epochs)', group: 'rbm-init', type: 'int', default: 500, min: 1, max: 100000000, tip: 'Stop a layer after this many epochs without a new minimum of the increment ratio.', advanced: true },
  { key: 'visible_units', path: rbm('visible_units'), label: 'Visible units', group: 'rbm-init', type: 'choice', default: 'bernoulli', choices: [['bernoulli', 'Binary (Bernoulli)'], ['gaussian', 'Gaussian (standardised data)']], tip: 'How the first layer models its inputs: binary in [0, 1], or real-valued with unit variance.', advanced: true },
  { key: 'greedy_mean_field', path: ['stack', 'greedy_mean_field'], label: 'Greedy mean field', group: 'rbm-init', type: 'bool', default: true, tip: 'Higher layers train on the probabilities of the layer below (on) or on samples of them.', advanced: true },
  { key: 'monitor_cases', path: ['stack', 'monitor_cases'], label: 'Monitor cases', group: 'rbm-init', type: 'int', default: 1000, min: 0, max: 100000000, tip: 'Cases used for the per-epoch free energy and unit statistics; 0 turns them off.', advanced: true },
  // Supervised stage
  { key: 'sup_output', path: sup('output'), label: 'Outputs', group: 'supervised', type: 'choice', default: 'soft_max', choices: [['soft_max', 'SoftMax (classes)'], ['linear', 'Linear (least squares)'], ['logistic', 'Logistic (Toman\'s all-sigmoid nets)']], tip: 'SoftMax outputs with log-likelihood for classes; linear outputs with squared error for values; logistic outputs with half the squared error per case (Toman\'s MLPs: the step rules then compare his RMS/2 error).' },
  { key: 'sup_optimizer', path: sup('optimizer'), label: 'Optimizer', group: 'supervised', type: 'choice', default: 'conjugate_gradient', choices: STAGE_OPTIMIZERS, tip: 'Full-batch conjugate gradient (DEEP), mini-batch SGD, or a full-batch step rule (docs/TOMAN.md): Toman\'s adaptive steps with robust training, iRprop+, FANN\'s RPROP, Quickprop, the bold driver, batch or incremental back-propagation, Levenberg–Marquardt (small nets only). The step rules run the iterations as epochs, to the target error.' },
  { key: 'sup_max_iterations', path: sup('max_iterations'), label: 'Iterations (at most)', group: 'supervised', type: 'int', default: 1000, min: 1, max: 100000000, tip: 'Conjugate-gradient iterations, or SGD epochs, of the supervised stage.' },
  { key: 'sup_tolerance', path: sup('tolerance'), label: 'Tolerance', group: 'supervised', type: 'float', default: 0.00005, min: 0, max: 1, tip: 'The stage stops when the criterion changes relatively less than this.' },
  { key: 'sup_weight_penalty', path: sup('weight_penalty'), label: 'Weight penalty', group: 'supervised', type: 'float', default: 1, min: 0, max: 1000000, tip: 'PenFac: adds PenFac · Σw² / (number of weights) to the criterion.' },
  { key: 'sup_anneal_iterations', path: sup('anneal_iterations'), label: 'Annealing iterations', group: 'supervised', type: 'int', default: 0, min: 0, max: 10000000, tip: 'Simulated-annealing trials choosing the starting weights; 0: small random ones.', advanced: true },
  { key: 'sup_anneal_cases', path: sup('anneal_cases'), label: 'Annealing cases', group: 'supervised', type: 'int', default: 2000, min: 1, max: 100000000, tip: 'Cases on which each annealing trial is scored.', advanced: true },
  { key: 'sup_allow_svd', path: sup('allow_svd'), label: 'SVD output weights', group: 'supervised', type: 'bool', default: true, tip: 'Least-squares output weights for linear outputs while annealing (up to 400 inputs).', advanced: true },
  { key: 'sup_batch_size', path: sup('batch_size'), label: 'SGD batch size', group: 'supervised', type: 'int', default: 100, min: 1, max: 100000000, tip: 'SGD only: cases per update.', advanced: true },
  { key: 'sup_learning_rate', path: sup('learning_rate'), label: 'SGD learning rate', group: 'supervised', type: 'float', default: 0.1, min: 0.000000001, max: 100, tip: 'SGD only: step size of the supervised stage.', advanced: true },
  { key: 'sup_momentum', path: sup('momentum'), label: 'SGD momentum', group: 'supervised', type: 'float', default: 0.9, min: 0, max: 0.999, tip: 'SGD only: momentum of the updates.', advanced: true },
  { key: 'sup_final_rate_fraction', path: sup('final_rate_fraction'), label: 'SGD final rate fraction', group: 'supervised', type: 'float', default: 0.1, min: 0, max: 1, tip: 'SGD only: the rate falls linearly to this fraction of its start (1: constant).', advanced: true },
  // Supervised stage: the step rules' settings (StepRuleSettings; Toman's defaults but up/down)
  { key: 'sup_target_error', path: rule('target_error'), label: 'Target error', group: 'supervised', type: 'float', default: 0, min: 0, max: 1000000000000, tip: 'Step rules: stop once the error (RMS/2 for logistic outputs, else the criterion) is at most this; 0 runs every epoch.' },
  { key: 'sup_up', path: rule('up'), label: 'Adaptive: rate up', group: 'supervised', type: 'float', default: 1.3, min: 0.000001, max: 100, tip: 'Adaptive steps: a weight\'s rate × this when its gradient kept its sign (1.3 measured best on Toman\'s setting).', advanced: true },
  { key: 'sup_down', path: rule('down'), label: 'Adaptive: rate down', group: 'supervised', type: 'float', default: 0.7, min: 0.000001, max: 100, tip: 'Adaptive steps: a weight\'s rate × this when its gradient changed sign.', advanced: true },
  { key: 'sup_initial_rate', path: rule('initial_rate'), label: 'Adaptive: first rate', group: 'supervised', type: 'float', default: 0.5, min: 0.000000000001, max: 1000000, tip: 'Adaptive steps: every weight\'s starting rate.', advanced: true },
  { key: 'sup_max_step', path: rule('max_step'), label: 'Adaptive: largest rate', group: 'supervised', type: 'float', default: 10, min: 0.000000000001, max: 1000000, tip: 'Adaptive steps: the cap on a weight\'s rate (Toman: 10).', advanced: true },
  { key: 'sup_rule_momentum', path: rule('momentum'), label: 'Step-rule momentum', group: 'supervised', type: 'float', default: 0.7, min: 0, max: 0.999, tip: 'Momentum of the adaptive steps, batch and incremental back-propagation and the bold driver.', advanced: true },
  { key: 'sup_robust', path: rule('robust'), label: 'Adaptive: robust training', group: 'supervised', type: 'bool', default: true, tip: 'Adaptive steps: keep the best weights; when the error reaches best × the growth, restore them, halve the rates and clear the momentum.', advanced: true },
  { key: 'sup_max_error_growth', path: rule('max_error_growth'), label: 'Adaptive: error growth', group: 'supervised', type: 'float', default: 1.02, min: 1, max: 100, tip: 'Robust training rolls back when the error reaches the best × this.', advanced: true },
  { key: 'sup_rule_learning_rate', path: rule('learning_rate'), label: 'Step-rule rate', group: 'supervised', type: 'float', default: 0.7, min: 0.000000000001, max: 1000000, tip: 'Batch and incremental back-propagation and Quickprop\'s rate; the bold driver\'s first (FANN: 0.7).', advanced: true },
  // Fine-tuning
  { key: 'sup_fine_tune', path: sup('fine_tune'), label: 'Fine-tune the whole model', group: 'fine-tune', type: 'bool', default: false, tip: 'After the supervised stage, backpropagate through the RBM layers too.' },
  { key: 'sup_fine_tune_optimizer', path: sup('fine_tune_optimizer'), label: 'Fine-tuning optimizer', group: 'fine-tune', type: 'choice', default: 'sgd', choices: [['', 'Same as the supervised stage'], ...STAGE_OPTIMIZERS], tip: 'The optimizer of fine-tuning.' },
  { key: 'sup_fine_tune_max_iterations', path: sup('fine_tune_max_iterations'), label: 'Fine-tuning iterations', group: 'fine-tune', type: 'int', default: 100, min: 1, max: 100000000, tip: 'Conjugate-gradient iterations, or SGD epochs, of fine-tuning.' },
  { key: 'sup_fine_tune_tolerance', path: sup('fine_tune_tolerance'), label: 'Fine-tuning tolerance', group: 'fine-tune', type: 'float', default: 0, min: 0, max: 1, tip: 'Fine-tuning stops when the criterion changes relatively less than this.', advanced: true },
  { key: 'sup_fine_tune_learning_rate', path: sup('fine_tune_learning_rate'), label: 'Fine-tuning SGD rate', group: 'fine-tune', type: 'float', default: 0.1, min: 0.000000001, max: 100, tip: 'SGD fine-tuning: step size (pretrained weights want gentler steps).', advanced: true },
  { key: 'sup_fine_tune_input_dropout', path: sup('fine_tune_input_dropout'), label: 'Input dropout', group: 'fine-tune', type: 'float', default: 0.2, min: 0, max: 0.95, tip: 'SGD fine-tuning: fraction of inputs dropped per case.', advanced: true },
  { key: 'sup_fine_tune_hidden_dropout', path: sup('fine_tune_hidden_dropout'), label: 'Hidden dropout', group: 'fine-tune', type: 'float', default: 0.5, min: 0, max: 0.95, tip: 'SGD fine-tuning: fraction of logistic hidden units dropped per case.', advanced: true },
  { key: 'sup_fine_tune_shift', path: sup('fine_tune_shift'), label: 'Image shifts (pixels)', group: 'fine-tune', type: 'int', default: 1, min: 0, max: 8, tip: 'SGD fine-tuning of images: each training image moves by up to this many pixels each way, fresh every batch; 0 turns it off.', advanced: true },
  { key: 'sup_validation_fraction', path: sup('validation_fraction'), label: 'Validation share', group: 'fine-tune', type: 'float', default: 0, min: 0, max: 0.5, tip: 'With SGD: this share of the training cases never trains; the epoch that scores best on it is kept. 0: train on every case to the last epoch.' },
  { key: 'sup_patience', path: sup('patience'), label: 'Patience (epochs)', group: 'fine-tune', type: 'int', default: 30, min: 1, max: 100000000, tip: 'With SGD and a validation share: epochs without a new best score before training stops.', advanced: true },
];

export const GROUPS = [
  { id: 'rbm-schedule', label: 'RBM: learning schedule' },
  { id: 'rbm-batches', label: 'RBM: batches and contrastive divergence' },
  { id: 'rbm-penalties', label: 'RBM: penalties' },
  { id: 'rbm-init', label: 'RBM: initialisation and convergence' },
  { id: 'supervised', label: 'Supervised stage' },
  { id: 'fine-tune', label: 'Fine-tuning' },
];

// The architecture and run settings outside PARAMS (see panels/model.js). `layers`: RBM hidden
// sizes bottom up (Rust default [100]); `sup_hidden`: supervised logistic layers (default none).
export const ARCHITECTURE_DEFAULTS = {
  layer_mode: 'list', layers: '100', layer_first: 500, layer_last: 100, layer_count: 3,
  supervised: false, sup_hidden: '', seed: 1, backend: 'auto',
};

// Hinton's practical guide (2010) for the RBMs: plain CD-1 everywhere (CdConfig::hinton; the
// CD rate, idle at k = 1, is Rust's too, so the saved settings agree).
const HINTON = {
  schedule: 'fixed', learning_rate: 0.1, initial_momentum: 0.5, final_momentum: 0.9, momentum_switch_epoch: 5, epochs: 100,
  weight_penalty: 0.0002, batch_size: 100, cd_k_start: 1, cd_k_end: 1, cd_k_rate: 0.005, sparsity_penalty: 0, init_trials: 1, top_cd_k_end: 0,
};

// Masters' DEEP program as it ships (CdConfig::deep, SupervisedConfig::deep).
const DEEP = {
  epochs: 100, schedule: 'adaptive', learning_rate: 0.1, initial_momentum: 0.1, final_momentum: 0.9,
  batch_size: null, n_batches: 24, cd_k_start: 1, cd_k_end: 4, cd_k_rate: 0.005, weight_penalty: 0.0001,
  sparsity_penalty: 0.001, sparsity_target: 0.1, init_trials: 50, top_cd_k_end: 0,
  sup_optimizer: 'conjugate_gradient', sup_weight_penalty: 0, sup_final_rate_fraction: 1, sup_fine_tune_optimizer: null,
  sup_fine_tune_max_iterations: 1000, sup_fine_tune_tolerance: 0.00001, sup_fine_tune_learning_rate: 0.05,
  sup_fine_tune_input_dropout: 0, sup_fine_tune_hidden_dropout: 0, sup_fine_tune_shift: 0, sup_validation_fraction: 0,
};

// Values that differ from the Rust defaults (which are measured to give good models:
// docs/DEFAULTS.md); `default` is those defaults themselves.
export const PRESETS = {
  quick: { label: 'Quick demo', tip: 'A small two-layer stack, a few epochs and a short supervised stage: done in seconds.',
    values: { ...HINTON, epochs: 3, monitor_cases: 500, layers: '64,32', supervised: true, sup_max_iterations: 30 } },
  default: { label: 'Good defaults', tip: 'The measured defaults: batches of 100, CD-k with k growing toward 10 (20 in the top layer), a light sparsity target; CG on the features, SGD fine-tuning with dropout and image shifts.', values: { layers: '500', supervised: true } },
  deep: { label: "Masters' DEEP settings", tip: 'Masters\' DEEP program exactly: adaptive schedule, 24 batches, CD 1→4, 50 initialisation trials, full-batch conjugate gradient.', values: { ...DEEP } },
  hinton: { label: "Hinton's 2006 recipe", tip: 'Fixed schedule, learning rate 0.1, momentum 0.5 then 0.9 from epoch 5, weight cost 0.0002, batches of 100, CD-1, no sparsity.', values: { ...HINTON } },
};
export const DEFAULT_PRESET = 'quick';

export const paramByKey = new Map(PARAMS.map((p) => [p.key, p]));

// The full value set of a preset: Rust defaults with the preset's values over them.
export function presetValues(name) {
  const values = { ...ARCHITECTURE_DEFAULTS };
  for (const p of PARAMS) values[p.key] = p.default;
  return { ...values, ...(PRESETS[name] ?? PRESETS[DEFAULT_PRESET]).values };
}

// Parses a hash string into a setting's value; undefined when it does not fit.
export function parseValue(param, text) {
  if (text === null || text === undefined) return undefined;
  switch (param.type) {
    case 'bool': return text === '1' || text === 'true' ? true : text === '0' || text === 'false' ? false : undefined;
    case 'choice': return param.choices.some(([v]) => v === text) ? (text === '' ? null : text) : undefined;
    case 'optional-int': if (text === '') return null; // fall through
    case 'int': { const n = Number(text); return Number.isInteger(n) ? n : undefined; }
    default: { const n = Number(text); return Number.isFinite(n) ? n : undefined; }
  }
}

export function formatValue(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

// Checks a value against its range; returns an error message or ''.
export function checkValue(param, value) {
  if (param.type === 'bool' || param.type === 'choice') return '';
  if (value === null) return param.type === 'optional-int' ? '' : `${param.label}: a value is required`;
  if (!Number.isFinite(value)) return `${param.label}: expected a number`;
  if ((param.type === 'int' || param.type === 'optional-int') && !Number.isInteger(value)) return `${param.label}: expected a whole number`;
  if (value < param.min || value > param.max) return `${param.label}: expected a value from ${param.min} to ${param.max}`;
  return '';
}

function setPath(target, path, value) {
  let node = target;
  for (const part of path.slice(0, -1)) node = node[part] ??= {};
  node[path[path.length - 1]] = value;
}

// Linear interpolation from the first to the last size over `count` layers (DEEP).
export function interpolateLayers(first, last, count) {
  if (count <= 1) return [first];
  return Array.from({ length: count }, (_, k) => Math.round(first + ((last - first) * k) / (count - 1)));
}

export function parseSizes(text) {
  const parts = String(text).split(/[\s,]+/).filter(Boolean);
  return parts.map(Number);
}

export function rbmLayers(values) {
  return values.layer_mode === 'interp'
    ? interpolateLayers(values.layer_first, values.layer_last, values.layer_count)
    : parseSizes(values.layers);
}

// The PageConfig the worker's `train` takes, from a full value set.
export function pageConfig(values) {
  const config = { stack: { layers: rbmLayers(values), rbm: { seed: values.seed } }, supervised: null };
  for (const p of PARAMS) {
    if (p.path[0] === 'supervised') continue;
    setPath(config, p.path, values[p.key]);
  }
  if (values.supervised) {
    config.supervised = { hidden: parseSizes(values.sup_hidden), seed: values.seed };
    for (const p of PARAMS) if (p.path[0] === 'supervised') setPath(config, p.path, values[p.key]);
  }
  return config;
}

// Weights and biases of the RBM stack and the supervised layers.
export function parameterCount(nInputs, values, nOutputs) {
  let total = 0;
  let below = nInputs;
  for (const size of rbmLayers(values)) {
    total += below * size + below + size;
    below = size;
  }
  if (values.supervised && nOutputs) {
    for (const size of [...parseSizes(values.sup_hidden), nOutputs]) {
      total += below * size + size;
      below = size;
    }
  }
  return total;
}

// The Local RBM mode's settings (issue 19, Raina, Madhavan & Ng 2009 §5): one local-patch RBM
// layer (a filter bank per patch position, or one shared bank: a convolutional RBM) learnt
// from square crops. The family choice is the autoencoder panel's select; choosing "Local-patch
// RBM" sets body[data-family=local_rbm], which hides every other family's block
// (views/local_rbm.css) and shows these controls. Every value that differs from its default goes
// to the URL hash under an `lr_` key; a bad value in the hash stays in its control with an error
// naming the field, and Start refuses it. The seed is the DBN panel's.
import { problemOf } from './autoencoder.js';

export const FAMILY = 'local_rbm';

// key: the hash key; field: the LocalRbmTrainer config field (src/web/local_rbm.rs). Defaults:
// docs/LOCAL_RBM.md, "On the page".
export const LOCAL_RBM_PARAMS = [
  { key: 'lr_source', field: 'source', label: 'Images', type: 'choice', default: 'gratings', choices: [['gratings', 'Gratings (natural-image-like)'], ['data', 'The loaded images (MNIST)']], tip: 'Where the crops are cut from: eight Philox grating images (stripes at random angles and frequencies plus noise, like natural-image statistics), or the images loaded under Data (e.g. MNIST; then choose binary visible units).' },
  { key: 'lr_image_size', field: 'image_size', label: 'Crop size', type: 'int', default: 32, min: 1, max: 512, tip: 'The side of the square crops: the layer\'s image. Raina et al. use 144 or 192 (and 160 for their DBN); (crop − patch) must be a multiple of the stride.' },
  { key: 'lr_patch', field: 'patch', label: 'Patch size', type: 'int', default: 12, min: 1, max: 512, tip: 'The side of each patch: the receptive field of the hidden units at one position. Raina et al.: 24.' },
  { key: 'lr_stride', field: 'stride', label: 'Stride', type: 'int', default: 4, min: 1, max: 512, tip: 'Pixels between neighbouring patches (at most the patch size, so every pixel is covered). Raina et al.: 8. Stride 1 with shared weights is a convolutional RBM.' },
  { key: 'lr_hidden', field: 'hidden_per_patch', label: 'Hidden per patch', type: 'int', default: 16, min: 1, max: 1024, tip: 'Hidden units (filters) at each patch position. Raina et al.: 192.' },
  { key: 'lr_tied', field: 'tied', label: 'Weights', type: 'choice', default: 'local', choices: [['local', 'One bank per position'], ['tied', 'Shared (convolutional)']], tip: 'One bank per position: each patch position learns its own filters (no weight sharing, as Raina et al.). Shared: one bank used at every position, a convolutional RBM.' },
  { key: 'lr_visible', field: 'visible', label: 'Visible units', type: 'choice', default: 'gaussian', choices: [['gaussian', 'Gaussian'], ['binary', 'Binary']], tip: 'Gaussian: real-valued pixels, each crop\'s mean removed and scaled to unit variance (Raina et al.). Binary: grey levels in [0, 1] as probabilities (for digits).' },
  { key: 'lr_cases', field: 'cases', label: 'Crops', type: 'int', default: 1920, min: 1, max: 100000, tip: 'How many crops to learn from (one epoch is a pass over them).' },
  { key: 'lr_batch', field: 'batch_size', label: 'Mini-batch', type: 'int', default: 64, min: 1, max: 10000, tip: 'Crops per CD-1 update. Raina et al.: 192.' },
  { key: 'lr_epochs', field: 'epochs', label: 'Epochs', type: 'int', default: 10, min: 1, max: 10000, tip: 'Passes over the crops; Step trains one.' },
  { key: 'lr_rate', field: 'learning_rate', label: 'Learning rate', type: 'float', default: 0.005, min: 1e-6, max: 1, tip: 'The CD-1 step size (momentum 0.5, then 0.9 from epoch 5; weight decay 0.0002). Where many patches overlap, large rates diverge.' },
  { key: 'lr_sparsity', field: 'sparsity_target', label: 'Target activity', type: 'float', default: 0.05, min: 0, max: 1, tip: 'The sparse RBM\'s target mean activity of each hidden unit (Lee et al. 2007): every hidden bias moves toward it after each update.' },
  { key: 'lr_per_position', field: 'view', label: 'Filters shown per position', type: 'int', default: 9, min: 1, max: 1024, tip: 'How many of each position\'s filters the filters view draws in that position\'s cell.' },
  { key: 'lr_backend', field: 'backend', label: 'Backend', type: 'choice', default: 'auto', choices: [['auto', 'Auto'], ['webgpu', 'WebGPU'], ['cpu', 'CPU']], tip: 'Auto: WebGPU on a hardware GPU, else the CPU. WebGPU: CD-1 on the GPU (any adapter; a lost device hands the run to the CPU). CPU: the wasm engine.' },
];
const paramByKey = new Map(LOCAL_RBM_PARAMS.map((p) => [p.key, p]));
const paramByField = new Map(LOCAL_RBM_PARAMS.filter((p) => p.field !== 'view').map((p) => [p.field, p]));

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value === true ? '' : value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

const format = (value) => (value === null || value === undefined ? '' : String(value));
const parse = (param, text) => (param.type === 'choice' ? text : Number(text));

// The LocalRbmTrainer config of a full value set.
export function localRbmConfig(values, seed) {
  const config = { seed };
  for (const p of LOCAL_RBM_PARAMS) if (p.field !== 'view') config[p.field] = values[p.key];
  config.tied = values.lr_tied === 'tied';
  config.backend = { webgpu: 'gpu', cpu: 'cpu' }[values.lr_backend] ?? 'auto';
  return config;
}

export function mountLocalRbmSettings(form, app, { onChange }) {
  const hash = app.hash;
  const values = Object.fromEntries(LOCAL_RBM_PARAMS.map((p) => [p.key, p.default]));
  const controls = new Map();
  const active = () => app.family === FAMILY;

  function control(param) {
    const id = param.key.replace(/_/g, '-');
    const input = param.type === 'choice'
      ? el('select', { id, name: param.key }, ...param.choices.map(([v, label]) => new Option(label, v)))
      : el('input', { type: 'number', id, name: param.key, min: param.min, max: param.max, step: param.type === 'float' ? 'any' : '1' });
    const error = el('span', { className: 'error inline-error', id: `${id}-error`, role: 'alert', hidden: true });
    input.setAttribute('aria-describedby', `${id}-error`);
    const label = el('label', { className: 'setting', title: `${param.tip} Default ${param.default}.`, dataset: { hideKey: param.key, key: param.key } },
      el('span', { className: 'name' }, param.label), input, error);
    input.addEventListener('change', () => onInput(param.key));
    controls.set(param.key, { input, error, label, param });
    return label;
  }

  const showError = (key, message) => {
    const { error } = controls.get(key);
    error.textContent = message;
    error.hidden = !message;
  };

  const block = el('div', { className: 'local-rbm-settings', id: 'local-rbm-settings', dataset: { family: FAMILY } },
    el('div', { className: 'grid up-front', id: 'lr-up-front' }, ...LOCAL_RBM_PARAMS.map(control)));
  const archLine = el('p', { className: 'arch-line tip', id: 'lr-arch-line', dataset: { family: FAMILY } });
  const upFront = form.querySelector('#up-front');
  upFront.before(block);
  upFront.after(archLine);

  for (const [key, { input, param }] of controls) {
    const raw = hash.raw(key);
    if (raw === null) {
      input.value = format(values[key]);
      continue;
    }
    const problem = problemOf(param, raw);
    if (param.type === 'choice' && problem) {
      input.value = format(values[key]);
    } else {
      input.value = raw;
      if (!problem) values[key] = parse(param, raw);
    }
    showError(key, problem);
  }

  function onInput(key) {
    const { input, param } = controls.get(key);
    const problem = problemOf(param, input.value);
    showError(key, problem);
    if (problem) return;
    values[key] = parse(param, input.value);
    hash.put(key, format(values[key]) === format(param.default) ? null : format(values[key]));
    update();
    onChange();
  }

  // The layer the settings give, or why not (the geometry's rule, src/local_rbm/geometry.rs).
  function shape() {
    const { lr_image_size: size, lr_patch: patch, lr_stride: stride, lr_hidden: hidden } = values;
    if (patch > size || stride > patch || (size - patch) % stride) return null;
    const side = (size - patch) / stride + 1;
    const banks = values.lr_tied === 'tied' ? 1 : side * side;
    return { side, positions: side * side, hidden: side * side * hidden, weights: banks * patch * patch * hidden };
  }

  function update() {
    if (!active()) return;
    const s = shape();
    const { lr_image_size: size, lr_patch: patch, lr_stride: stride, lr_hidden: hidden } = values;
    archLine.textContent = s
      ? `${size}×${size} crops → ${s.side}×${s.side} positions × ${hidden} hidden (${s.hidden.toLocaleString()} units) · patches ${patch}×${patch}, stride ${stride}${values.lr_tied === 'tied' ? ', shared' : ''} · ${s.weights.toLocaleString()} weights · ${values.lr_epochs} epochs of ${values.lr_cases.toLocaleString()} crops`
      : `Patches of ${patch} at stride ${stride} do not tile a ${size}×${size} crop: (crop − patch) must be a multiple of the stride, and the stride at most the patch.`;
  }

  app.on('lr_started', ({ epochs, positions, weights, backend }) => {
    app.emit('run_progress', { fraction: 0, text: `Epoch 0 / ${epochs} · ${positions} positions, ${Number(weights).toLocaleString()} weights (${backend === 'gpu' ? 'WebGPU' : 'CPU'})` });
  });
  app.on('lr_epoch', ({ epoch, epochs, reconstruction_error: error, seconds, backend }) => {
    app.emit('run_progress', {
      fraction: Math.min(1, epoch / epochs),
      text: `Epoch ${epoch} / ${epochs} · reconstruction error ${Number(error).toPrecision(4)} · ${Number(seconds).toFixed(2)} s (${backend === 'gpu' ? 'WebGPU' : 'CPU'})`,
    });
  });
  app.localRbmModel = null;
  app.on('lr_model', ({ summary }) => { app.localRbmModel = summary; });
  // The filters view reads how many filters per position to draw from here.
  app.localRbmSettings = () => ({ ...values });

  function reveal(key) {
    const { label, input } = controls.get(key);
    label.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    input.focus({ preventScroll: true });
  }

  return {
    active,
    values: () => ({ ...values }),
    architecture: () => {
      const s = shape();
      return { family: FAMILY, inputs: values.lr_image_size ** 2, imageShape: [values.lr_image_size, values.lr_image_size], rbm: s ? [s.hidden] : [], supervised: false, supervisedHidden: [], outputs: null, outputKind: null };
    },
    pageConfig(seed) {
      for (const [key, { input, param }] of controls) {
        const problem = problemOf(param, input.value);
        showError(key, problem);
        if (problem) {
          input.focus();
          throw Object.assign(new Error(problem), { field: key });
        }
      }
      return { family: FAMILY, local_rbm: localRbmConfig(values, seed) };
    },
    showFieldError(field, message) {
      const param = paramByField.get(field) ?? paramByKey.get(field);
      if (!param) return false;
      showError(param.key, message);
      return true;
    },
    clearErrors() {
      for (const key of controls.keys()) showError(key, '');
    },
    openLayer(kind) {
      if (!active()) return false;
      reveal(kind === 'inputs' ? 'lr_image_size' : 'lr_hidden');
      return true;
    },
    update,
  };
}

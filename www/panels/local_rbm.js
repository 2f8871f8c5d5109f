// The Local RBM mode's settings (issue 19, Raina, Madhavan & Ng 2009 §5): a local-patch RBM
// layer (a filter bank per patch position, or one shared bank: a convolutional RBM) learnt
// from square crops, and optionally layers above it (the CLI's `--layers` entries over its
// feature map: local, tied or dense), trained greedily. The family choice is the autoencoder panel's select; choosing "Local-patch
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
  { key: 'lr_above', field: 'layers_above', label: 'Layers above', type: 'stack', default: '', tip: 'Layers trained greedily on top of the first, each over the hidden feature map below (its positions as pixels, its hidden units as channels), written as the command line\'s --layers entries, comma-separated: local:PATCH:STRIDE:UNITS (a bank per position), tied:PATCH:STRIDE:UNITS (one shared bank) or dense:UNITS (fully connected). E.g. local:2:1:8,dense:32. Empty: one layer. Raina et al.\'s DBN: local:4:2:128,local:3:1:128,dense:1024 over 24×24 patches 8 apart at 160².' },
  { key: 'lr_visible', field: 'visible', label: 'Visible units', type: 'choice', default: 'gaussian', choices: [['gaussian', 'Gaussian'], ['binary', 'Binary']], tip: 'Gaussian: real-valued pixels, each crop\'s mean removed and scaled to unit variance (Raina et al.). Binary: grey levels in [0, 1] as probabilities (for digits).' },
  { key: 'lr_cases', field: 'cases', label: 'Crops', type: 'int', default: 1920, min: 1, max: 100000, tip: 'How many crops to learn from (one epoch is a pass over them).' },
  { key: 'lr_batch', field: 'batch_size', label: 'Mini-batch', type: 'int', default: 64, min: 1, max: 10000, tip: 'Crops per CD-1 update. Raina et al.: 192.' },
  { key: 'lr_epochs', field: 'epochs', label: 'Epochs', type: 'int', default: 10, min: 1, max: 10000, tip: 'Passes over the crops, per layer; Step trains one (and starts the layer above when a layer is done).' },
  { key: 'lr_rate', field: 'learning_rate', label: 'Learning rate', type: 'float', default: 0.005, min: 1e-6, max: 1, tip: 'The CD-1 step size (momentum 0.5, then 0.9 from epoch 5; weight decay 0.0002). Where many patches overlap, large rates diverge.' },
  { key: 'lr_rate_above', field: 'learning_rate_above', label: 'Rate above', type: 'float', default: 0, min: 0, max: 1, tip: 'The learning rate of the layers above the first (binary visible units: the probabilities of the layer below). 0: each layer\'s default, as the command line: min(0.5, 32 / fan-in), fan-in = patches over a unit of the map below × hidden units per patch.' },
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
const parse = (param, text) => (param.type === 'choice' ? text : param.type === 'stack' ? stackText(text) : Number(text));
const stackText = (text) => String(text).split(',').map((s) => s.trim()).filter(Boolean).join(',');
// The page trains at most this many layers (MAX_PAGE_LAYERS of src/web/local_rbm.rs).
const MAX_LAYERS = 8;
const SPEC = /^(?:(local|tied):(\d+):(\d+):(\d+)|dense:(\d+))$/;

// The entries of a `layers_above` text: [{spec, kind, patch, stride, units}], or a problem.
export function parseStack(text) {
  const specs = [];
  for (const item of stackText(text).split(',').filter(Boolean)) {
    const m = SPEC.exec(item);
    if (!m) return { problem: `'${item}' is not local:PATCH:STRIDE:UNITS, tied:PATCH:STRIDE:UNITS or dense:UNITS` };
    specs.push(m[5] !== undefined ? { spec: item, kind: 'dense', units: Number(m[5]) } : { spec: item, kind: m[1], patch: Number(m[2]), stride: Number(m[3]), units: Number(m[4]) });
  }
  if (specs.length + 1 > MAX_LAYERS) return { problem: `${specs.length} layers above the first; the page trains at most ${MAX_LAYERS} in all` };
  return { specs };
}

function problemWith(param, text) {
  if (param.type !== 'stack') return problemOf(param, text);
  const { problem } = parseStack(text);
  return problem ? `${param.label} (${param.key}): ${problem}` : '';
}

// The LocalRbmTrainer config of a full value set.
export function localRbmConfig(values, seed) {
  const config = { seed };
  for (const p of LOCAL_RBM_PARAMS) if (p.field !== 'view') config[p.field] = values[p.key];
  config.tied = values.lr_tied === 'tied';
  config.learning_rate_above = values.lr_rate_above > 0 ? values.lr_rate_above : null;
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
      : param.type === 'stack'
        ? el('input', { type: 'text', id, name: param.key, placeholder: 'e.g. local:2:1:8,dense:32', spellcheck: false, autocomplete: 'off' })
        : el('input', { type: 'number', id, name: param.key, min: param.min, max: param.max, step: param.type === 'float' ? 'any' : '1' });
    const error = el('span', { className: 'error inline-error', id: `${id}-error`, role: 'alert', hidden: true });
    input.setAttribute('aria-describedby', `${id}-error`);
    const label = el('label', { className: 'setting', title: `${param.tip} Default ${param.default === '' ? 'none' : param.default}.`, dataset: { hideKey: param.key, key: param.key } },
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
    const problem = problemWith(param, raw);
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
    const problem = problemWith(param, input.value);
    showError(key, problem);
    if (problem) return;
    values[key] = parse(param, input.value);
    hash.put(key, format(values[key]) === format(param.default) ? null : format(values[key]));
    update();
    onChange();
  }

  // A layer over a rows × cols × channels input, or null where the patches do not tile it
  // (the geometry's rule, src/local_rbm/geometry.rs; the engine's check is the one that counts).
  function layerShape(rows, cols, channels, patch, stride, hidden, tied) {
    if (!(patch >= 1 && stride >= 1 && hidden >= 1) || patch > Math.min(rows, cols) || stride > patch || (rows - patch) % stride || (cols - patch) % stride) return null;
    const [sideR, sideC] = [(rows - patch) / stride + 1, (cols - patch) / stride + 1];
    const banks = tied ? 1 : sideR * sideC;
    return { side: sideC, sideR, positions: sideR * sideC, hidden: sideR * sideC * hidden, units: hidden, weights: banks * patch * patch * channels * hidden };
  }

  // The first layer the settings give, or null.
  function shape() {
    const { lr_image_size: size, lr_patch: patch, lr_stride: stride, lr_hidden: hidden } = values;
    return layerShape(size, size, 1, patch, stride, hidden, values.lr_tied === 'tied');
  }

  // The layers above: [{spec, ...shape}], or {problem} naming the first that does not fit.
  function shapesAbove(first) {
    const { specs = [] } = parseStack(values.lr_above);
    const shapes = [];
    let [rows, cols, channels] = [first.sideR, first.side, first.units];
    for (const [k, s] of specs.entries()) {
      const geometry = s.kind === 'dense'
        ? (rows === cols ? layerShape(rows, cols, channels, rows, 1, s.units, false) : null)
        : layerShape(rows, cols, channels, s.patch, s.stride, s.units, s.kind === 'tied');
      if (!geometry) return { problem: `Layer ${k + 2} (${s.spec}) does not fit the ${rows}×${cols}×${channels} feature map below: ${s.kind === 'dense' ? 'a dense layer needs a square map' : '(map − patch) must be a multiple of the stride, and the stride at most the patch'}.` };
      shapes.push({ spec: s.spec, ...geometry });
      [rows, cols, channels] = [geometry.sideR, geometry.side, geometry.units];
    }
    return { shapes };
  }

  function update() {
    if (!active()) return;
    const s = shape();
    const { lr_image_size: size, lr_patch: patch, lr_stride: stride, lr_hidden: hidden } = values;
    if (!s) {
      archLine.textContent = `Patches of ${patch} at stride ${stride} do not tile a ${size}×${size} crop: (crop − patch) must be a multiple of the stride, and the stride at most the patch.`;
      return;
    }
    const first = `${size}×${size} crops → ${s.side}×${s.side} positions × ${hidden} hidden (${s.hidden.toLocaleString()} units) · patches ${patch}×${patch}, stride ${stride}${values.lr_tied === 'tied' ? ', shared' : ''} · ${s.weights.toLocaleString()} weights · ${values.lr_epochs} epochs of ${values.lr_cases.toLocaleString()} crops`;
    const above = shapesAbove(s);
    if (above.problem) archLine.textContent = `${first} · ${above.problem}`;
    else if (!above.shapes.length) archLine.textContent = first;
    else {
      const weights = above.shapes.reduce((n, l) => n + l.weights, s.weights);
      const layers = above.shapes.map((l, k) => `layer ${k + 2} ${l.spec} → ${l.sideR}×${l.side} × ${l.units} (${l.hidden.toLocaleString()} units)`).join(' · ');
      archLine.textContent = `${first} (layer 1), each layer in turn · ${layers} · ${weights.toLocaleString()} weights in all`;
    }
  }

  app.on('lr_started', ({ epochs, positions, weights, parameters, layers = [], backend }) => {
    const what = layers.length > 1 ? `${layers.length} layers, ${Number(parameters).toLocaleString()} parameters` : `${positions} positions, ${Number(weights).toLocaleString()} weights`;
    app.emit('run_progress', { fraction: 0, text: `${layers.length > 1 ? 'Layer 1 / ' + layers.length + ' · ' : ''}Epoch 0 / ${epochs} · ${what} (${backend === 'gpu' ? 'WebGPU' : 'CPU'})` });
  });
  app.on('lr_epoch', ({ layer = 0, layers = 1, epoch, epochs, total_epoch: total = epoch, total_epochs: totalEpochs = epochs, reconstruction_error: error, seconds, backend }) => {
    app.emit('run_progress', {
      fraction: Math.min(1, total / totalEpochs),
      text: `${layers > 1 ? `Layer ${layer + 1} / ${layers} · ` : ''}Epoch ${epoch} / ${epochs} · reconstruction error ${Number(error).toPrecision(4)} · ${Number(seconds).toFixed(2)} s (${backend === 'gpu' ? 'WebGPU' : 'CPU'})`,
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
      const above = s ? shapesAbove(s).shapes ?? [] : [];
      return { family: FAMILY, inputs: values.lr_image_size ** 2, imageShape: [values.lr_image_size, values.lr_image_size], rbm: s ? [s.hidden, ...above.map((l) => l.hidden)] : [], supervised: false, supervisedHidden: [], outputs: null, outputKind: null };
    },
    pageConfig(seed) {
      for (const [key, { input, param }] of controls) {
        const problem = problemWith(param, input.value);
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
    openLayer(kind, index = 0) {
      if (!active()) return false;
      reveal(kind === 'inputs' ? 'lr_image_size' : index > 0 ? 'lr_above' : 'lr_hidden');
      return true;
    },
    update,
  };
}

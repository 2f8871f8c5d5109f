// Sparse coding's settings (issue 18), the third model family. The family choice is the
// autoencoder panel's select (panels/autoencoder.js); choosing "Sparse coding" sets
// body[data-family=sparse_coding], which hides every other family's block
// (views/sparse_coding.css) and shows these controls. Every value that differs from its default
// goes to the URL hash under an `sc_` key, so a link reproduces the run; a bad value in the hash
// stays in its control with an error naming the field, and Start refuses it. The seed control
// is the DBN panel's (one `seed` key for every family).
import { problemOf } from './autoencoder.js';

export const FAMILY = 'sparse_coding';

// key: the hash key; field: the SparseCodingTrainer config field (src/web/sparse_coding.rs).
// Defaults: docs/SPARSE_CODING.md, "On the page" (pen strokes from 5,000 patches of the digits
// in a few seconds).
export const SPARSE_CODING_PARAMS = [
  { key: 'sc_patch', field: 'patch', label: 'Patch size', type: 'int', default: 12, min: 0, max: 64, tip: 'The side of the square patches cut at random from the training digits (patches with no ink are skipped). Small patches learn pen strokes; 0, or the digits\' own 28, learns from whole digits.' },
  { key: 'sc_cases', field: 'cases', label: 'Training patches', type: 'int', default: 5000, min: 1, max: 100000, tip: 'How many patches to learn from (with whole digits: the first this many training digits). Raina et al. use 5,000.' },
  { key: 'sc_bases', field: 'bases', label: 'Basis vectors', type: 'int', default: 100, min: 1, max: 4096, tip: 'How many basis vectors B has: each patch is rebuilt as a weighted sum B·a of a few of them. More bases than pixels (an overcomplete basis) is allowed.' },
  { key: 'sc_sparsity', field: 'sparsity', label: 'Target sparsity', type: 'float', default: 0.05, min: 0.001, max: 0.999, tip: 'The fraction of the codes a that should be non-zero. β, the weight of the L1 penalty β‖a‖₁, is chosen by bisection so that the codes of the first 1,000 patches at the starting basis have this fraction; as the basis learns, the fraction drifts.' },
  { key: 'sc_solver', field: 'solver', label: 'Code solver', type: 'choice', default: 'cd', choices: [['cd', 'Coordinate descent'], ['raina', 'Raina et al. (parallel)']], tip: 'How the codes are found for a fixed basis. Coordinate descent: one code at a time, exactly (scikit-learn\'s lasso_cd), fast on a CPU. Raina et al.: every code\'s own optimum at once, then a line search along the way to them, built for GPUs.' },
  { key: 'sc_batch_size', field: 'batch_size', label: 'Mini-batch', type: 'int', default: 500, min: 1, max: 1000000, tip: 'Patches per step: each step finds their codes, then moves the basis to lower the whole set\'s objective. A step is one Step press.' },
  { key: 'sc_passes', field: 'passes', label: 'Passes', type: 'int', default: 10, min: 1, max: 10000, tip: 'Passes over all the patches, mini-batch by mini-batch.' },
  { key: 'sc_statistics', field: 'statistics', label: 'Basis memory', type: 'choice', default: 'forgetting_first_pass', choices: [['forgetting_first_pass', 'Forget in pass 1, then whole set'], ['forgetting', 'Forgetting (scikit-learn)'], ['whole_set', 'Whole set']], tip: 'What each basis step fits. Forgetting: every mini-batch seen so far, older ones counting less (online dictionary learning, as scikit-learn): codes found with an early, poor basis fade, which gives a lower objective after one pass; the chart then shows an estimate of the whole objective. Whole set: every patch\'s latest codes alike, so each step lowers the whole set\'s objective exactly, and it ends lower after many passes. The default forgets in the first pass and fits the whole set after.' },
  { key: 'sc_backend', field: 'backend', label: 'Backend', type: 'choice', default: 'auto', choices: [['auto', 'Auto'], ['webgpu', 'WebGPU'], ['cpu', 'CPU']], tip: 'Auto: WebGPU on a hardware GPU, else the CPU. WebGPU: the steps on the GPU where the engine has them (any adapter, software ones too). CPU: the wasm engine.' },
];
const paramByKey = new Map(SPARSE_CODING_PARAMS.map((p) => [p.key, p]));
const paramByField = new Map(SPARSE_CODING_PARAMS.map((p) => [p.field, p]));

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

// The SparseCodingTrainer config of a full value set (the page's backend names to the wasm's).
export function sparseCodingConfig(values, seed) {
  const config = { seed };
  for (const p of SPARSE_CODING_PARAMS) config[p.field] = values[p.key];
  config.backend = { webgpu: 'gpu', cpu: 'cpu' }[values.sc_backend] ?? 'auto';
  return config;
}

// Mounts the block before the DBN's up-front grid (whose seed control stays shown), and its
// architecture line after it. `onChange` recomputes the architecture.
export function mountSparseCodingSettings(form, app, { onChange }) {
  const hash = app.hash;
  const values = Object.fromEntries(SPARSE_CODING_PARAMS.map((p) => [p.key, p.default]));
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

  const block = el('div', { className: 'sparse-coding-settings', id: 'sparse-coding-settings', dataset: { family: FAMILY } },
    el('div', { className: 'grid up-front', id: 'sc-up-front' }, ...SPARSE_CODING_PARAMS.map(control)));
  const archLine = el('p', { className: 'arch-line tip', id: 'sc-arch-line', dataset: { family: FAMILY } });
  const backendStatus = el('p', { className: 'tip', id: 'sc-backend-status', 'aria-live': 'polite', dataset: { family: FAMILY } });
  const upFront = form.querySelector('#up-front');
  upFront.before(block);
  upFront.after(archLine, backendStatus);

  // Values from the hash; a bad one stays in its control, with its error, until fixed.
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

  // The patch each case is: its side, or the digits' own shape for whole ones.
  function caseShape() {
    const shape = app.data?.image_shape;
    const side = values.sc_patch;
    if (side === 0 || !shape || (side === shape[0] && side === shape[1])) return { whole: true, inputs: app.data?.n_inputs ?? null, shape: shape ?? null };
    return { whole: false, inputs: side * side, shape: [side, side] };
  }

  function update() {
    if (!active()) return;
    const { whole, inputs } = caseShape();
    const what = whole ? 'whole cases' : `${values.sc_patch}×${values.sc_patch} patches`;
    const parameters = inputs ? (inputs * values.sc_bases).toLocaleString() : '?';
    archLine.textContent = `${inputs ?? '?'} → ${values.sc_bases} bases · ${parameters} parameters · ${values.sc_cases.toLocaleString()} ${what}, ${Math.round(1000 * values.sc_sparsity) / 10}% non-zero codes, ${values.sc_passes} passes in mini-batches of ${values.sc_batch_size}`;
    showBackendChoice();
  }

  function showBackendChoice() {
    const info = app.runtime;
    if (!info) return;
    const choice = values.sc_backend;
    const gpu = info.webgpu.available ? (info.webgpu.adapter.name || info.webgpu.adapter.driver || 'unnamed adapter') : null;
    if (choice === 'cpu') backendStatus.textContent = 'The CPU (the wasm engine).';
    else if (!gpu) backendStatus.textContent = `WebGPU is not available here (${info.webgpu.reason}); training will run on the CPU.`;
    else backendStatus.textContent = `WebGPU adapter: ${gpu}${choice === 'auto' ? ' (Auto skips software adapters)' : ''}.`;
  }
  app.on('ready', showBackendChoice);
  // The learnt basis's summary (the control bar's Reset asks for a model of any family).
  app.sparseCodingModel = null;
  app.on('sc_model', ({ summary }) => { app.sparseCodingModel = summary; });
  app.on('backend_shown', ({ text }) => { if (active()) backendStatus.textContent = `Now: ${text}.`; });

  // The control bar's progress line: pass, mini-batch, the objective and the codes' sparsity.
  let plan = null;
  const percent = (fraction) => `${(100 * fraction).toFixed(1)}%`;
  app.on('sc_started', ({ objective, n_inputs, n_bases, cases, batches, passes, beta }) => {
    plan = { batches, passes };
    app.emit('run_progress', { fraction: 0, text: `Pass 0 / ${passes} · objective ${Number(objective).toPrecision(5)} · ${n_inputs} → ${n_bases} bases on ${cases.toLocaleString()} patches, β = ${Number(beta).toPrecision(3)}` });
  });
  app.on('sc_step', ({ pass, batch, batches, passes, step, objective, nonzero_fraction, seconds }) => {
    plan = { batches, passes };
    const time = Number.isFinite(seconds) ? ` · ${seconds.toFixed(2)} s` : '';
    app.emit('run_progress', {
      fraction: Math.min(1, step / (batches * passes)),
      text: `Pass ${pass} / ${passes}, mini-batch ${batch} / ${batches} · objective ${Number(objective).toPrecision(5)} · ${percent(nonzero_fraction)} non-zero${time}`,
    });
  });

  // Scrolls to a control and focuses it (the network drawing's layers open theirs).
  function reveal(key) {
    const { label, input } = controls.get(key);
    label.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    input.focus({ preventScroll: true });
    label.classList.remove('flash');
    void label.offsetWidth;
    label.classList.add('flash');
  }

  return {
    active,
    values: () => ({ ...values }),
    plan: () => plan,
    // The architecture event's payload for the network drawing.
    architecture: () => {
      const { whole, inputs, shape } = caseShape();
      return {
        family: FAMILY, inputs, imageShape: shape, patch: whole ? null : values.sc_patch, bases: values.sc_bases,
        rbm: [], supervised: false, supervisedHidden: [], outputs: null, outputKind: null,
      };
    },
    // { family: 'sparse_coding', sparse_coding: config }, or throws naming the first bad control.
    pageConfig(seed) {
      for (const [key, { input, param }] of controls) {
        const problem = problemOf(param, input.value);
        showError(key, problem);
        if (problem) {
          input.focus();
          throw Object.assign(new Error(problem), { field: key });
        }
      }
      return { family: FAMILY, sparse_coding: sparseCodingConfig(values, seed) };
    },
    // A wasm error naming a config field ("patch: …") goes next to its control.
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
      reveal(kind === 'inputs' ? 'sc_patch' : 'sc_bases');
      return true;
    },
    update,
  };
}

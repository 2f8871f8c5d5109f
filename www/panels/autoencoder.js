// The model-family choice and the sparse autoencoder's settings (issue 17). The family select
// goes first in the settings form; choosing "Sparse autoencoder" sets body[data-family], which
// hides every DBN-only block (views/autoencoder.css) and shows these controls. Every value
// that differs from its default goes to the URL hash, so a link reproduces the run; a bad value
// in the hash stays in its control with an error naming the field, and Start refuses it.
// The seed control is the DBN panel's (one `seed` key for both families).

export const FAMILIES = [['dbn', 'Deep belief net (RBMs)'], ['autoencoder', 'Sparse autoencoder'], ['sparse_coding', 'Sparse coding'], ['sequences', 'Sequences (recurrent nets)'], ['local_rbm', 'Local-patch RBM (large images)']];
export const DEFAULT_FAMILY = 'dbn';

// key: the hash key; field: the AutoencoderTrainer config field (src/web/autoencoder.rs).
// Defaults are UFLDL's MNIST exercise, with fewer iterations and cases so a browser run
// finishes in a minute or two (the exercise: 400 iterations on 10,000 digits).
export const AUTOENCODER_PARAMS = [
  { key: 'hidden', field: 'hidden', label: 'Hidden units', type: 'int', default: 196, min: 1, max: 10000, tip: 'Hidden units: the features the encoder learns. UFLDL uses 196 (a 14×14 grid of filters) for the 784 pixels of a digit.' },
  { key: 'rho', field: 'rho', label: 'ρ target sparsity', type: 'float', default: 0.1, min: 0.0001, max: 0.9999, open: true, tip: 'ρ: the mean activation each hidden unit should have over the data, so each unit is on for about this share of the digits.' },
  { key: 'lambda', field: 'lambda', label: 'λ weight decay', type: 'float', default: 0.003, min: 0, max: 10, tip: 'λ: adds λ/2·Σw² to the cost, which keeps the weights small and the filters smooth.' },
  { key: 'beta', field: 'beta', label: 'β sparsity weight', type: 'float', default: 3, min: 0, max: 1000, tip: 'β: the weight of the sparsity term β·Σⱼ KL(ρ‖ρ̂ⱼ), which pulls each unit\'s mean activation ρ̂ⱼ toward ρ; 0 turns it off.' },
  { key: 'method', field: 'method', label: 'Optimiser', type: 'choice', default: 'lbfgs', choices: [['lbfgs', 'L-BFGS (full batch)'], ['sgd', 'SGD with momentum']], tip: 'L-BFGS: UFLDL\'s quasi-Newton optimiser over every case at once; one iteration is one line search. SGD: mini-batches with momentum; one iteration is one epoch.' },
  { key: 'iterations', field: 'iterations', label: 'Iterations', type: 'int', default: 100, min: 1, max: 100000, tip: 'L-BFGS iterations (SGD: epochs). UFLDL runs 400.' },
  { key: 'cases', field: 'cases', label: 'Training cases', type: 'int', default: 2000, min: 1, max: 1000000, tip: 'The first this many training cases of the loaded data (at most what is loaded). Every L-BFGS iteration goes over all of them; UFLDL uses 10,000.' },
  { key: 'ae_backend', field: 'backend', label: 'Backend', type: 'choice', default: 'auto', choices: [['auto', 'Auto'], ['webgpu', 'WebGPU'], ['cpu', 'CPU']], tip: 'Auto: WebGPU on a hardware GPU, else the CPU. WebGPU: the cost and gradient on the GPU (any adapter, software ones too). CPU: the wasm engine.' },
  { key: 'ae_batch_size', field: 'batch_size', label: 'SGD batch size', type: 'int', default: 100, min: 1, max: 1000000, sgd: true, tip: 'SGD only: cases per update.' },
  { key: 'ae_learning_rate', field: 'learning_rate', label: 'SGD learning rate', type: 'float', default: 0.1, min: 0.000001, max: 100, sgd: true, tip: 'SGD only: the step size of each update.' },
  { key: 'ae_momentum', field: 'momentum', label: 'SGD momentum', type: 'float', default: 0.9, min: 0, max: 0.999, sgd: true, tip: 'SGD only: momentum of the updates.' },
];
const paramByKey = new Map(AUTOENCODER_PARAMS.map((p) => [p.key, p]));
const paramByField = new Map(AUTOENCODER_PARAMS.map((p) => [p.field, p]));

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

// The error for `text` as a value of `param`, naming the field and what was expected; '' if fine.
export function problemOf(param, text) {
  const name = `${param.label} (${param.key})`;
  if (param.type === 'choice') return param.choices.some(([v]) => v === text) ? '' : `${name}: expected one of ${param.choices.map(([v]) => v).join(', ')}, got "${text}"`;
  if (String(text).trim() === '') return `${name}: a value is required`;
  const n = Number(text);
  if (!Number.isFinite(n)) return `${name}: expected a number, got "${text}"`;
  if (param.type === 'int' && !Number.isInteger(n)) return `${name}: expected a whole number, got ${text}`;
  if (n < param.min || n > param.max) return `${name}: expected a value from ${param.min} to ${param.max}, got ${text}`;
  return '';
}

const parse = (param, text) => (param.type === 'choice' ? text : Number(text));

// The AutoencoderTrainer config of a full value set (the page's backend names to the wasm's).
export function autoencoderConfig(values, seed) {
  const config = { seed };
  for (const p of AUTOENCODER_PARAMS) {
    if (p.sgd && values.method !== 'sgd') continue;
    config[p.field] = values[p.key];
  }
  config.backend = { webgpu: 'gpu', cpu: 'cpu' }[values.ae_backend] ?? 'auto';
  return config;
}

// Mounts the family row at the top of `form` and the autoencoder's block before the DBN's
// up-front grid (whose seed control stays shown). `onChange` recomputes the architecture.
export function mountAutoencoderSettings(form, app, { onChange }) {
  const hash = app.hash;
  const familyFromHash = hash.raw('family');
  let family = FAMILIES.some(([v]) => v === familyFromHash) ? familyFromHash : DEFAULT_FAMILY;
  const values = Object.fromEntries(AUTOENCODER_PARAMS.map((p) => [p.key, p.default]));
  const controls = new Map();

  document.body.dataset.family = family;
  app.family = family;
  const familySelect = el('select', { id: 'family', name: 'family' }, ...FAMILIES.map(([v, label]) => new Option(label, v)));
  familySelect.value = family;
  const familyError = el('span', { className: 'error inline-error', id: 'family-error', role: 'alert', hidden: !familyFromHash || familyFromHash === family });
  familyError.textContent = familyError.hidden ? '' : `Model (family): expected ${FAMILIES.map(([v]) => v).join(', ')}, got "${familyFromHash}"; showing the deep belief net`;
  form.prepend(el('div', { className: 'family-row', dataset: { hideKey: 'family' } },
    el('label', { className: 'setting', title: 'The kind of model to train. A deep belief net stacks RBMs trained greedily by contrastive divergence; a sparse autoencoder learns to reconstruct its input through a hidden layer whose units are mostly off; sparse coding learns a basis from which each patch is rebuilt with a few non-zero codes.' },
      el('span', { className: 'name' }, 'Model'), familySelect), familyError));

  function control(param) {
    const id = `ae-${param.key.replace(/^ae_/, '')}`;
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

  const sgdGroup = el('fieldset', { className: 'group', id: 'ae-sgd', dataset: { hideKey: 'ae_sgd' } }, el('legend', {}, 'SGD'),
    el('div', { className: 'grid' }, ...AUTOENCODER_PARAMS.filter((p) => p.sgd).map(control)));
  const block = el('div', { className: 'autoencoder-settings', id: 'autoencoder-settings', dataset: { family: 'autoencoder' } },
    el('div', { className: 'grid up-front', id: 'ae-up-front' }, ...AUTOENCODER_PARAMS.filter((p) => !p.sgd).map(control)),
    sgdGroup);
  const archLine = el('p', { className: 'arch-line tip', id: 'ae-arch-line', dataset: { family: 'autoencoder' } });
  const backendStatus = el('p', { className: 'tip', id: 'ae-backend-status', 'aria-live': 'polite', dataset: { family: 'autoencoder' } });
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
    refresh();
  }

  function setFamily(next) {
    family = next;
    familySelect.value = next;
    hash.put('family', next === DEFAULT_FAMILY ? null : next);
    familyError.hidden = true;
    refresh();
    app.emit('family', { family });
  }
  familySelect.addEventListener('change', () => setFamily(familySelect.value));

  // This block's own display; `refresh` also has the settings panel recompute the architecture.
  function update() {
    document.body.dataset.family = family;
    app.family = family;
    sgdGroup.hidden = values.method !== 'sgd';
    const inputs = app.data?.n_inputs;
    const params = inputs ? inputs * values.hidden * 2 + values.hidden + inputs : null;
    archLine.textContent = `${inputs ?? '?'} → ${values.hidden} → ${inputs ?? '?'} · ${params === null ? '?' : params.toLocaleString()} parameters · ${values.method === 'sgd' ? 'SGD' : 'L-BFGS'}, ${values.iterations} iterations on ${values.cases.toLocaleString()} cases`;
    showBackendChoice();
  }
  function refresh() {
    update();
    onChange();
  }

  function showBackendChoice() {
    const info = app.runtime;
    if (!info) return;
    const choice = values.ae_backend;
    const gpu = info.webgpu.available ? (info.webgpu.adapter.name || info.webgpu.adapter.driver || 'unnamed adapter') : null;
    if (choice === 'cpu') backendStatus.textContent = 'The CPU (the wasm engine).';
    else if (!gpu) backendStatus.textContent = `WebGPU is not available here (${info.webgpu.reason}); training will run on the CPU.`;
    else backendStatus.textContent = `WebGPU adapter: ${gpu}${choice === 'auto' ? ' (Auto skips software adapters)' : ''}.`;
  }
  app.on('ready', showBackendChoice);
  // The trained autoencoder's summary (the control bar's Reset asks for a model of either family).
  app.autoencoderModel = null;
  app.on('ae_model', ({ summary }) => { app.autoencoderModel = summary; });
  app.on('backend_shown', ({ text }) => { if (family === 'autoencoder') backendStatus.textContent = `Now: ${text}.`; });
  // No family switch while a run trains: the run belongs to one family.
  app.on('state', () => { familySelect.disabled = app.running; });

  // The control bar's progress line: iteration / iterations and J (panels/training.js draws it).
  let planned = values.iterations;
  const costText = (cost) => `J = ${Number(cost.total).toPrecision(5)}`;
  app.on('ae_started', ({ iterations, cost, n_hidden, n_visible, cases }) => {
    planned = iterations;
    app.emit('run_progress', { fraction: 0, text: `Iteration 0 / ${iterations} · ${costText(cost)} · ${n_visible} → ${n_hidden} → ${n_visible} on ${cases.toLocaleString()} cases` });
  });
  app.on('ae_iteration', ({ iteration, iterations, cost, seconds, stop }) => {
    planned = iterations ?? planned;
    const time = Number.isFinite(seconds) ? ` · ${seconds.toFixed(2)} s` : '';
    app.emit('run_progress', { fraction: Math.min(1, iteration / planned), text: `Iteration ${iteration} / ${planned} · ${costText(cost)}${time}${stop ? ` · stopped: ${String(stop).replace(/_/g, ' ')}` : ''}` });
  });
  // One Step is one iteration here, one mini-batch for sparse coding; the DBN has two.
  const stepButton = document.getElementById('train-step-epoch');
  const stepLabels = {
    dbn: stepButton ? { text: stepButton.textContent, title: stepButton.title } : null,
    autoencoder: { text: 'Step', title: 'Train one iteration (pauses first).' },
    sparse_coding: { text: 'Step', title: 'Train one mini-batch: its codes, then the basis (pauses first).' },
    sequences: { text: 'Step', title: 'Train one chunk of steps (pauses first).' },
    local_rbm: { text: 'Step', title: 'Train one epoch (pauses first).' },
  };
  function labelStep() {
    if (!stepButton) return;
    const label = stepLabels[family] ?? stepLabels.dbn;
    stepButton.textContent = label.text;
    stepButton.title = label.title;
  }
  app.on('family', labelStep);
  labelStep();

  // Scrolls to a control and focuses it (the network drawing's hidden layer opens `hidden`).
  function reveal(key) {
    const { label, input } = controls.get(key);
    label.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    input.focus({ preventScroll: true });
    label.classList.remove('flash');
    void label.offsetWidth;
    label.classList.add('flash');
  }

  return {
    active: () => family === 'autoencoder',
    family: () => family,
    values: () => ({ ...values }),
    // The architecture event's payload for the network drawing.
    architecture: () => ({
      family: 'autoencoder', inputs: app.data?.n_inputs ?? null, imageShape: app.data?.image_shape ?? null, hidden: values.hidden,
      rbm: [], supervised: false, supervisedHidden: [], outputs: null, outputKind: null,
    }),
    // { family: 'autoencoder', autoencoder: config }, or throws naming the first bad control.
    pageConfig(seed) {
      for (const [key, { input, param }] of controls) {
        if (param.sgd && values.method !== 'sgd') continue;
        const problem = problemOf(param, input.value);
        showError(key, problem);
        if (problem) {
          input.focus();
          throw Object.assign(new Error(problem), { field: key });
        }
      }
      return { family: 'autoencoder', autoencoder: autoencoderConfig(values, seed) };
    },
    // A wasm error naming a config field ("rho: …") goes next to its control.
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
      if (family !== 'autoencoder' || kind === 'inputs') return false;
      reveal(kind === 'ae_output' ? 'lambda' : 'hidden');
      return true;
    },
    update,
  };
}

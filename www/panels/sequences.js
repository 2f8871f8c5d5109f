// The Sequences mode's settings (issue 20): recurrent nets trained online by real-time
// recurrent learning (Moore 2009) on a generated task. The family choice is the autoencoder
// panel's select; choosing "Sequences" sets body[data-family=sequences], which hides every
// other family's block (views/sequences.css) and shows these controls. Every value that differs
// from its default goes to the URL hash under an `sq_` key; a bad value in the hash stays in its
// control with an error naming the field, and Start refuses it. The seed is the DBN panel's.
import { problemOf } from './autoencoder.js';

export const FAMILY = 'sequences';

// key: the hash key; field: the SequenceTrainer config field (src/web/recurrent.rs), or `run`
// for the run's own settings (steps, chunk). Defaults: docs/RECURRENT.md, "On the page".
export const SEQUENCE_PARAMS = [
  { key: 'sq_task', field: 'task', label: 'Task', type: 'choice', default: 'add', choices: [['add', 'Binary addition'], ['not', 'NOT'], ['recall', 'Delayed recall'], ['predict', 'Next letter (Elman)']], tip: 'What the net learns, one example per time step. Binary addition: two n-bit numbers in, their sum out (Moore\'s task). NOT: one bit in, its opposite out. Delayed recall: n random bits in, the bits of a few steps before out (needs memory). Next letter: Elman\'s letter sequences (ba, dii, guuu), predict the next letter.' },
  { key: 'sq_bits', field: 'bits', label: 'Bits (n)', type: 'int', default: 2, min: 1, max: 32, tip: 'Addition: the bits of each number (2n inputs, n outputs). Delayed recall: the bits recalled.' },
  { key: 'sq_delay', field: 'delay', label: 'Recall delay', type: 'int', default: 2, min: 1, max: 16, tip: 'Delayed recall: how many steps back the target is.' },
  { key: 'sq_preset', field: 'preset', label: 'Net', type: 'choice', default: 'elman', choices: [['elman', 'Elman (hidden → hidden)'], ['jordan', 'Jordan (output → hidden)'], ['feedforward', 'Feed-forward']], tip: 'The graph: input → hidden → output, plus a recurrent edge from the previous step: hidden to hidden (Elman), output to hidden (Jordan), or none (feed-forward).' },
  { key: 'sq_hidden', field: 'hidden', label: 'Hidden units', type: 'int', default: 0, min: 0, max: 256, tip: '0: the task\'s default (2n for addition, as Moore\'s nets; 2·n·delay for recall; 2 for NOT; 20 for letters).' },
  { key: 'sq_trainer', field: 'trainer', label: 'Trainer', type: 'choice', default: 'rtrl', choices: [['rtrl', 'RTRL'], ['bptt', 'Truncated BPTT']], tip: 'RTRL: real-time recurrent learning, a sensitivity tensor per weight carried forward every step and a weight step every step (on WebGPU where available). Truncated BPTT: back-propagation through time over chunks of steps, a weight step per chunk (on the CPU).' },
  { key: 'sq_shortcut', field: 'shortcut', label: 'Shortcut', type: 'choice', default: 'on', choices: [['on', 'On'], ['off', 'Off (full RTRL)']], tip: 'Moore\'s ∂E/∂net shortcut: weights whose paths to the output use no recurrent edge take plain back-propagation within the step instead of a sensitivity tensor. Exact, and much cheaper.' },
  { key: 'sq_truncation', field: 'truncation', label: 'BPTT chunk', type: 'int', default: 16, min: 1, max: 1000, tip: 'Truncated BPTT: steps per chunk (one weight step per chunk).' },
  { key: 'sq_rate', field: 'rate', label: 'Learning rate', type: 'float', default: 0.05, min: 1e-6, max: 10, tip: 'The online Euler step w ← w − rate·∂E/∂w, taken every step.' },
  { key: 'sq_steps', field: 'run', label: 'Steps', type: 'int', default: 20000, min: 1, max: 10000000, tip: 'How many examples (time steps) to train on.' },
  { key: 'sq_chunk', field: 'run', label: 'Steps per chunk', type: 'int', default: 500, min: 1, max: 100000, tip: 'Steps per chunk: the charts update after each, and Step trains one. On WebGPU a chunk\'s steps go to the GPU together (up to 256 per submission).' },
  { key: 'sq_backend', field: 'backend', label: 'Backend', type: 'choice', default: 'auto', choices: [['auto', 'Auto'], ['webgpu', 'WebGPU'], ['cpu', 'CPU']], tip: 'Auto: WebGPU on a hardware GPU, else the CPU. WebGPU: RTRL on the GPU (any adapter). CPU: the wasm engine.' },
  { key: 'sq_timing_max', field: 'timing', label: 'Timing up to n', type: 'int', default: 32, min: 2, max: 128, tip: 'The CPU-vs-GPU chart times Moore\'s adder (Elman 2n-2n-n, RTRL with the shortcut) at n = 2, 4, 8, 12, 16, 24, 32, … up to this n, on both, in your browser. The work grows as n⁴.' },
  { key: 'sq_timing_steps', field: 'timing', label: 'Timed steps', type: 'int', default: 5, min: 1, max: 200, tip: 'Online steps timed per n and backend (after 2 untimed ones).' },
];
const paramByKey = new Map(SEQUENCE_PARAMS.map((p) => [p.key, p]));
const paramByField = new Map(SEQUENCE_PARAMS.filter((p) => p.field !== 'run' && p.field !== 'timing').map((p) => [p.field, p]));

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

// The SequenceTrainer config of a full value set.
export function sequenceConfig(values, seed) {
  const config = { seed };
  for (const p of SEQUENCE_PARAMS) if (p.field !== 'run' && p.field !== 'timing') config[p.field] = values[p.key];
  config.shortcut = values.sq_shortcut !== 'off';
  config.backend = { webgpu: 'gpu', cpu: 'cpu' }[values.sq_backend] ?? 'auto';
  return config;
}

// The n's the timing chart measures.
export function timingSizes(max) {
  return [2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128].filter((n) => n <= max);
}

export function mountSequenceSettings(form, app, { onChange }) {
  const hash = app.hash;
  const values = Object.fromEntries(SEQUENCE_PARAMS.map((p) => [p.key, p.default]));
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

  const block = el('div', { className: 'sequence-settings', id: 'sequence-settings', dataset: { family: FAMILY } },
    el('div', { className: 'grid up-front', id: 'sq-up-front' }, ...SEQUENCE_PARAMS.map(control)));
  const archLine = el('p', { className: 'arch-line tip', id: 'sq-arch-line', dataset: { family: FAMILY } });
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

  // The net the settings give (the wasm's rule: docs/RECURRENT.md's table of tasks).
  function shape() {
    const n = values.sq_bits;
    const task = values.sq_task;
    const io = { add: [2 * n, n], not: [1, 1], recall: [n, n], predict: [6, 6] }[task];
    const defaultHidden = { add: 2 * n, not: 2, recall: Math.max(2 * n * values.sq_delay, 8), predict: 20 }[task];
    return { inputs: io[0], hidden: values.sq_hidden || defaultHidden, outputs: io[1] };
  }

  function update() {
    if (!active()) return;
    const { inputs, hidden, outputs } = shape();
    const recurrent = { elman: ' + hidden → hidden', jordan: ' + output → hidden', feedforward: '' }[values.sq_preset];
    const trainer = values.sq_trainer === 'rtrl' ? `RTRL${values.sq_shortcut === 'on' ? ' with the shortcut' : ' (full)'}` : `truncated BPTT (${values.sq_truncation} steps)`;
    for (const key of ['sq_bits']) controls.get(key).label.hidden = !['add', 'recall'].includes(values.sq_task);
    controls.get('sq_delay').label.hidden = values.sq_task !== 'recall';
    controls.get('sq_truncation').label.hidden = values.sq_trainer !== 'bptt';
    controls.get('sq_shortcut').label.hidden = values.sq_trainer !== 'rtrl';
    archLine.textContent = `${inputs} → ${hidden} → ${outputs}${recurrent} · ${trainer} · ${values.sq_steps.toLocaleString()} steps at rate ${values.sq_rate}`;
  }

  app.on('sq_started', ({ steps }) => {
    app.emit('run_progress', { fraction: 0, text: `Step 0 / ${Number(steps).toLocaleString()}` });
  });
  app.on('sq_chunk', ({ step, total, mean_error: error, accuracy, microseconds_per_step: us, backend }) => {
    app.emit('run_progress', {
      fraction: Math.min(1, step / total),
      text: `Step ${step.toLocaleString()} / ${total.toLocaleString()} · mean E ${Number(error).toPrecision(4)} · ${(100 * accuracy).toFixed(1)}% right · ${Number(us).toFixed(1)} µs per step (${backend === 'gpu' ? 'WebGPU' : 'CPU'})`,
    });
  });
  app.sequenceModel = null;
  app.on('sq_model', ({ summary }) => { app.sequenceModel = summary; });
  // The timing chart reads its sizes from here (views/sequences.js).
  app.sequenceSettings = () => ({ ...values });

  function reveal(key) {
    const { label, input } = controls.get(key);
    label.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    input.focus({ preventScroll: true });
  }

  return {
    active,
    values: () => ({ ...values }),
    architecture: () => {
      const { inputs, hidden, outputs } = shape();
      return { family: FAMILY, inputs, imageShape: null, rbm: [hidden], supervised: false, supervisedHidden: [], outputs, outputKind: null };
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
      return { family: FAMILY, sequences: sequenceConfig(values, seed), steps: values.sq_steps, chunk: values.sq_chunk };
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
      reveal(kind === 'inputs' ? 'sq_task' : 'sq_hidden');
      return true;
    },
    update,
  };
}

// Gibbs samples evolving live: chains run in the worker on a timer (on the WebGPU device while
// training runs there) and post a frame every k steps; this panel picks how many chains, where
// they start (chosen data cases or random top states), k and the speed, and draws the frames.
import { clearImage, drawImage, el, errorText, field, inlineError, options, panel, readNumber, settingsSeed } from './canvas.js';

const MAX_CHAINS = 400;
const MAX_SPEED = 5000;

// "first 10", "0-9", "3,17,42", "0-4, 20" → case indices (first N: 0..N-1). Throws with a
// message naming what is wrong; `nCases` bounds the indices when known.
export function parseCaseList(text, nCases = Infinity) {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === '') return null;
  const first = /^first\s+(\d+)$/.exec(trimmed);
  if (first) {
    const n = Number(first[1]);
    if (n < 1) throw new Error('"first N" needs N ≥ 1');
    return Array.from({ length: Math.min(n, nCases) }, (_, k) => k);
  }
  const cases = [];
  for (const part of trimmed.split(/[\s,]+/).filter(Boolean)) {
    const range = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!range) throw new Error(`"${part}" is not a case number or a range like 0-9`);
    const low = Number(range[1]);
    const high = range[2] === undefined ? low : Number(range[2]);
    if (high < low) throw new Error(`range ${part} runs backwards`);
    if (high >= nCases) throw new Error(`case ${high} is out of range: the data has ${nCases} cases (0–${nCases - 1})`);
    if (high - low >= MAX_CHAINS) throw new Error(`range ${part} is longer than ${MAX_CHAINS} cases`);
    for (let k = low; k <= high; k += 1) cases.push(k);
  }
  return cases;
}

// Every-k and speed inputs, pause/resume and restart, a step counter: shared with the dream.
export function liveControls(app, { prefix, hashPrefix, defaults, onRestart, onConfigure }) {
  app.hash.register(`${hashPrefix}_every`, defaults.every);
  app.hash.register(`${hashPrefix}_speed`, defaults.speed);
  const every = el('input', { id: `${prefix}-every`, type: 'number', min: 1, max: 1000, step: 1, value: app.hash.get(`${hashPrefix}_every`) });
  const speed = el('input', { id: `${prefix}-speed`, type: 'number', min: 0, max: MAX_SPEED, step: 1, value: app.hash.get(`${hashPrefix}_speed`) });
  const pause = el('button', { id: `${prefix}-pause`, type: 'button', title: 'Pause the chain where it is; Resume continues it.', 'aria-pressed': 'false' }, 'Pause');
  const restart = el('button', { id: `${prefix}-restart`, type: 'button', title: 'Start again from fresh states, with the settings above.' }, 'Restart');
  const error = inlineError(`${prefix}-controls-error`);
  const steps = el('output', { id: `${prefix}-steps`, 'aria-live': 'off' }, '0');
  let paused = false;

  function read() {
    const k = readNumber(every);
    const s = readNumber(speed);
    if (k === null || !Number.isInteger(k) || k < 1 || k > 1000) throw Object.assign(new Error('Refresh every: enter a whole number of steps from 1 to 1000.'), { control: every });
    if (s === null || s < 0 || s > MAX_SPEED) throw Object.assign(new Error(`Speed: enter steps per second from 0 (paused) to ${MAX_SPEED}.`), { control: speed });
    return { every: k, speed: paused ? 0 : s };
  }
  function settings() {
    try {
      const value = read();
      error.show('');
      return value;
    } catch (problem) {
      error.show(problem.message);
      return null;
    }
  }
  for (const input of [every, speed]) {
    input.addEventListener('change', () => {
      const value = settings();
      if (!value) return;
      app.hash.set(`${hashPrefix}_every`, value.every);
      app.hash.set(`${hashPrefix}_speed`, Number(speed.value));
      onConfigure(value);
    });
  }
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.setAttribute('aria-pressed', String(paused));
    const value = settings();
    if (value) onConfigure(value);
  });
  restart.addEventListener('click', () => onRestart());
  const row = el('div', { className: 'view-controls' },
    field('Refresh every', every, { title: 'Draw the chains every k Gibbs steps.', hideKey: `${hashPrefix}_every` }),
    field('Steps per second', speed, { title: `How fast the chains run, in Gibbs steps per second (0 pauses; at most ${MAX_SPEED}).`, hideKey: `${hashPrefix}_speed` }),
    pause, restart, error);
  const counter = el('p', { className: 'view-note' }, 'Gibbs steps: ', steps);
  return { row, counter, steps, settings, showError: error.show };
}

export function mountGibbs(container, app) {
  app.hash.register('chains', 20);
  app.hash.register('chain_start', 'data');
  app.hash.register('chain_cases', '');
  const section = panel(container, {
    hideKey: 'samples', heading: 'What the model imagines',
    help: 'Gibbs samples: generative chains through the model; each step samples the top layer and propagates down to the pixels. They follow the model as it trains.',
    caption: 'Each tile is a Gibbs chain: the top two layers sample each other back and forth, drawn down to the pixels. From real digits, they drift to what the model imagines.',
  });
  const count = el('input', { id: 'chain-count', type: 'number', min: 1, max: MAX_CHAINS, step: 1, value: app.hash.get('chains') });
  const start = el('select', { id: 'chain-start' },
    el('option', { value: 'data', title: 'Start each chain from a data case' }, 'Data cases'),
    el('option', { value: 'random', title: 'Start each chain from a random top-layer state' }, 'Random top states'));
  start.value = app.hash.get('chain_start') === 'random' ? 'random' : 'data';
  const cases = el('input', { id: 'chain-cases', type: 'text', value: app.hash.get('chain_cases') ?? '', placeholder: 'first N', spellcheck: false, autocomplete: 'off' });
  const casesError = inlineError('chain-cases-error');
  const canvas = el('canvas', { id: 'samples-canvas', className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': 'The Gibbs chains, as seen at the pixels' });
  const note = el('p', { id: 'samples-note', className: 'view-note' }, 'The chains start once a model exists.');
  let nCases = Infinity;
  let restarts = 0;
  let started = false;

  const live = liveControls(app, {
    prefix: 'chain', hashPrefix: 'chain', defaults: { every: 10, speed: 50 },
    onRestart: () => startChains(),
    onConfigure: (value) => app.rpc('chains_configure', value).catch((error) => live.showError(errorText(error))),
  });
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, live.counter, note,
    options(el('div', { className: 'view-controls' },
      field('Chains', count, { title: `Number of chains (1–${MAX_CHAINS}).`, hideKey: 'chains' }),
      field('Start from', start, { title: 'Where the chains start: data cases (below), or random states of the top layer.', hideKey: 'chain_start' }),
      field('Cases', cases, { title: 'Which data cases start the chains: "first N", "0-9", "3,17,42" or a mix; the list repeats to fill the chains. Empty: the first cases.', hideKey: 'chain_cases' }),
      casesError), live.row)));

  // Validates the controls, then (re)starts the chains in the worker.
  async function startChains() {
    const n = readNumber(count);
    if (n === null || !Number.isInteger(n) || n < 1 || n > MAX_CHAINS) {
      casesError.show(`Chains: enter a whole number from 1 to ${MAX_CHAINS}.`);
      return;
    }
    let list;
    try {
      list = start.value === 'data' ? parseCaseList(cases.value, nCases) : null;
      casesError.show('');
    } catch (error) {
      casesError.show(`Cases: ${error.message}.`);
      return;
    }
    const timing = live.settings();
    if (!timing) return;
    const chosen = list && list.length ? Array.from({ length: n }, (_, k) => list[k % list.length]) : null;
    const seed = settingsSeed(app) + restarts;
    restarts += 1;
    try {
      await app.rpc('chains_start', { count: n, fromData: start.value === 'data', cases: chosen, seed, columns: Math.min(n, Math.max(5, Math.ceil(Math.sqrt(n)))), ...timing });
      started = true;
      note.textContent = start.value === 'data' ? `${n} chains from ${chosen ? `cases ${describe(chosen)}` : `the first ${n} cases`}.` : `${n} chains from random top states.`;
    } catch (error) {
      if (/no model/i.test(errorText(error))) note.textContent = 'The chains start once a model exists.';
      else casesError.show(errorText(error));
    }
  }

  count.addEventListener('change', () => {
    if (readNumber(count) !== null) app.hash.set('chains', Number(count.value));
    if (started) startChains();
  });
  start.addEventListener('change', () => {
    app.hash.set('chain_start', start.value);
    cases.disabled = start.value !== 'data';
    if (started) startChains();
  });
  cases.disabled = start.value !== 'data';
  cases.addEventListener('change', () => {
    app.hash.set('chain_cases', cases.value.trim());
    if (started) startChains();
  });
  app.on('data', ({ summary }) => {
    nCases = summary.n_cases;
  });
  const startOnce = () => {
    if (!started) startChains();
  };
  app.on('epoch', startOnce);
  // No model (Reset, or data of another size): its chains are gone, and so are their frames.
  app.on('model', ({ summary }) => {
    if (summary) return startOnce();
    started = false;
    clearImage(canvas);
    live.steps.textContent = '0';
    note.textContent = 'The chains start once a model exists.';
  });
  // A new engine has no chains: the next model starts them again.
  app.on('worker_restarted', () => {
    started = false;
  });
  app.on('samples', ({ image, steps, error, device }) => {
    if (error) {
      // The engine dropped the chains (a new model): start them afresh at the next chance.
      if (/no chains/i.test(error)) started = false;
      note.textContent = /no model|no chains/i.test(error) ? 'Waiting for the model…' : `Sampling stopped: ${error}`;
      return;
    }
    drawImage(canvas, image);
    live.steps.textContent = String(steps);
    canvas.dataset.steps = String(steps);
    canvas.dataset.device = device ?? 'cpu';
  });
  return { restart: startChains };
}

function describe(cases) {
  const shown = cases.slice(0, 12).join(', ');
  return cases.length > 12 ? `${shown}, …` : shown;
}

// The sparse autoencoder's views (issue 17), live while it trains: on the first screen the
// filter tiles and the reconstructions (pictures) over the cost curve and the ρ̂ plot
// (headline); below the fold the iteration log and Save model. The images are asked of the
// worker (ae_filters, ae_reconstructions; Save model: ae_model_json) after `ae_model` and every
// `ae_iteration`; ρ̂ and J come with the events; `ae_model {summary: null}` and Reset clear them. They show only
// while the family is the autoencoder (body[data-family], views/autoencoder.css).
import { Chart } from './charts.js';
import { clearImage, coalesce, download, drawImage, el, errorText, panel } from './canvas.js';
import { mountSparsity } from './autoencoder-sparsity.js';

const MAX_TILES = 400;
const RECONSTRUCTIONS = 10;
const TERMS = [
  { key: 'total', label: 'J', stroke: '#1d2330' },
  { key: 'reconstruction', label: 'reconstruction', stroke: '#2f6fdd' },
  { key: 'weight_decay', label: 'weight decay', stroke: '#2b8a3e' },
  { key: 'sparsity', label: 'sparsity', stroke: '#c2410c' },
];

function linkStylesheet() {
  const href = new URL('./autoencoder.css', import.meta.url).href;
  if (document.querySelector(`link[href="${href}"], link[href="views/autoencoder.css"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

// A picture of the first screen: canvas, caption, a one-line note.
function picture(container, { hideKey, heading, help, caption, label, note }) {
  const section = panel(container, { hideKey, heading, help, caption });
  section.dataset.family = 'autoencoder';
  const canvas = el('canvas', { id: `${hideKey.replace(/_/g, '-')}-canvas`, className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': label });
  const noteLine = el('p', { id: `${hideKey.replace(/_/g, '-')}-note`, className: 'view-note' }, note);
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, noteLine));
  return { section, canvas, note: noteLine };
}

export function mountAutoencoderViews({ pictures, headline, more }, app) {
  linkStylesheet();
  const filters = picture(pictures, {
    hideKey: 'ae_filters', heading: 'What each hidden unit detects',
    help: 'Filters: each tile is one hidden unit\'s encoder weights (a column of W1) drawn over the image.',
    caption: 'Each tile is one hidden unit: its weight from every pixel (a column of W1), each tile to its own scale. Light pixels turn the unit on, dark ones off. Noise at first, then strokes and pieces of digits.',
    label: 'Encoder weights of the hidden units, one tile each', note: 'Press Start to see the filters form.',
  });
  const reconstructions = picture(pictures, {
    hideKey: 'ae_reconstructions', heading: 'Inputs and reconstructions',
    help: 'Digits from the data (top) over what the autoencoder gives back (below).',
    caption: 'Top: digits from the data; below each, the output x̂ after passing through the hidden units and back. Blurred at first, sharper as J falls.',
    label: 'Data digits above their reconstructions', note: 'Press Start to see the reconstructions.',
  });

  const cost = new Chart(headline, {
    id: 'ae-cost', title: 'Cost J per iteration', x: 'iteration', y: 'J (log scale)', log: true, height: 150,
    caption: 'The cost the optimiser lowers (log scale): J and its three terms, the reconstruction error ½‖x̂−x‖²/m, the weight decay λ/2·‖W‖² and the sparsity penalty β·Σ KL(ρ‖ρ̂ⱼ).',
  });
  cost.box.dataset.family = 'autoencoder';
  const sparsity = mountSparsity(headline);

  const logPanel = panel(more, {
    hideKey: 'ae_log', heading: 'Autoencoder: model and iterations',
    help: 'Save the trained autoencoder, and one line per iteration.',
    caption: 'Save model downloads the weights W1, b1, W2, b2 and the settings as JSON. Each line: the iteration, J and its terms, the cost evaluations the line search made, and the time.',
  });
  logPanel.dataset.family = 'autoencoder';
  const save = el('button', { type: 'button', id: 'ae-save-model', disabled: true, title: 'Download the trained autoencoder (weights and settings) as autoencoder.json.', dataset: { hideKey: 'ae_save' } }, 'Save model');
  const summary = el('p', { id: 'ae-model-summary', className: 'view-note' }, 'No autoencoder yet.');
  const saveError = el('p', { id: 'ae-save-error', className: 'error', role: 'alert', hidden: true });
  // Scrolls when long: focusable, so a keyboard can scroll it too.
  const log = el('ol', { id: 'ae-log', className: 'epoch-log', tabIndex: 0, 'aria-label': 'Iteration log' });
  logPanel.append(el('div', { className: 'view-controls' }, save, summary), saveError, log, logPanel.caption);

  let model = null;
  // An answer for a model that went meanwhile (a new run, Reset) is not drawn.
  const refreshFilters = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    try {
      const image = await app.rpc('ae_filters', { maxTiles: MAX_TILES });
      if (model !== asked) return;
      drawImage(filters.canvas, image);
      filters.note.textContent = `${Math.min(asked.n_hidden, MAX_TILES)} of ${asked.n_hidden} hidden units.`;
    } catch (error) {
      if (model !== asked) return;
      filters.note.textContent = `Could not draw the filters: ${errorText(error)}`;
    }
  });
  const refreshReconstructions = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    try {
      const image = await app.rpc('ae_reconstructions', { count: RECONSTRUCTIONS });
      if (model !== asked) return;
      drawImage(reconstructions.canvas, image);
      reconstructions.note.textContent = `The first ${RECONSTRUCTIONS} training digits.`;
    } catch (error) {
      if (model !== asked) return;
      reconstructions.note.textContent = `Could not reconstruct: ${errorText(error)}`;
    }
  });
  const refreshAll = () => Promise.all([refreshFilters(), refreshReconstructions()]);

  function clear(text = 'Press Start to see the filters form.') {
    model = null;
    clearImage(filters.canvas);
    clearImage(reconstructions.canvas);
    delete filters.canvas.dataset.drawn;
    delete reconstructions.canvas.dataset.drawn;
    filters.note.textContent = text;
    reconstructions.note.textContent = 'Press Start to see the reconstructions.';
    sparsity.clear();
    save.disabled = true;
    summary.textContent = 'No autoencoder yet.';
    cost.build([]);
    for (const key of ['first', 'last', 'iteration']) delete cost.box.dataset[key];
    cost.heading.textContent = 'Cost J per iteration';
    log.replaceChildren();
  }

  const positive = (v) => (Number.isFinite(v) && v > 0 ? v : null);
  function addCost(iteration, values) {
    cost.add(iteration, TERMS.map((t) => positive(values[t.key])));
    cost.box.dataset.iteration = String(iteration);
    cost.box.dataset.last = String(values.total);
    cost.heading.textContent = `Cost J per iteration · ${Number(values.total).toPrecision(5)} at iteration ${iteration}`;
  }
  function logLine(iteration, values, extra = '') {
    const item = el('li', { dataset: { iteration: String(iteration), cost: String(values.total) } },
      `iteration ${iteration}: J ${Number(values.total).toPrecision(6)} (reconstruction ${Number(values.reconstruction).toPrecision(4)}, weight decay ${Number(values.weight_decay).toPrecision(4)}, sparsity ${Number(values.sparsity).toPrecision(4)})${extra}`);
    log.append(item);
  }

  app.on('ae_model', ({ summary: next }) => {
    if (!next) {
      clear();
      return;
    }
    model = next;
    save.disabled = false;
    summary.textContent = `${next.n_visible} → ${next.n_hidden} → ${next.n_visible}, trained on ${next.cases.toLocaleString()} cases (${next.backend === 'gpu' ? 'WebGPU' : 'CPU'}).`;
    refreshAll();
  });
  app.on('ae_started', ({ cost: start, sparsity: rhoHat }) => {
    if (rhoHat) sparsity.draw(rhoHat);
    cost.build(TERMS.map((t) => ({ label: t.label, stroke: t.stroke })));
    cost.box.dataset.first = String(start.total);
    addCost(0, start);
    logLine(0, start, ' · the start');
  });
  app.on('ae_iteration', ({ iteration, cost: now, evaluations, seconds, stop, sparsity: rhoHat }) => {
    if (rhoHat) sparsity.draw(rhoHat);
    addCost(iteration, now);
    logLine(iteration, now, ` · ${evaluations} evaluation${evaluations === 1 ? '' : 's'} · ${Number(seconds).toFixed(2)} s${stop ? ` · stopped: ${String(stop).replace(/_/g, ' ')}` : ''}`);
    refreshAll();
  });
  // The model goes (a new run starts, or Reset): every view empties.
  app.on('reset', () => clear());
  save.addEventListener('click', async () => {
    saveError.hidden = true;
    try {
      download('autoencoder.json', await app.rpc('ae_model_json'), 'application/json');
    } catch (error) {
      saveError.textContent = `Save model: ${errorText(error)}`;
      saveError.hidden = false;
    }
  });
  return { refresh: refreshAll };
}

// Sparse coding's views (issue 18), live while it learns: on the first screen the basis tiles
// and the reconstructions (pictures) over the objective curve and the codes' histograms with
// their sparsity against the target (headline); below the fold the mini-batch log and Save
// model. The images and the histograms are asked of the worker (sc_bases, sc_reconstructions,
// sc_histogram; Save model: sc_model_json) after `sc_model` and every `sc_step`; the objective
// comes with the events; `sc_model {summary: null}` and Reset clear them. They show only while
// the family is sparse coding (body[data-family], views/sparse_coding.css).
import { Chart } from './charts.js';
import { clearImage, coalesce, download, drawImage, el, errorText, panel } from './canvas.js';
import { mountCodes } from './sparse_coding-codes.js';

const FAMILY = 'sparse_coding';
const MAX_TILES = 400;
const RECONSTRUCTIONS = 10;
const BINS = 41;

function linkStylesheet() {
  const href = new URL('./sparse_coding.css', import.meta.url).href;
  if (document.querySelector(`link[href="${href}"], link[href="views/sparse_coding.css"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

// A picture of the first screen: canvas, caption, a one-line note.
function picture(container, { hideKey, heading, help, caption, label, note }) {
  const section = panel(container, { hideKey, heading, help, caption });
  section.dataset.family = FAMILY;
  const canvas = el('canvas', { id: `${hideKey.replace(/_/g, '-')}-canvas`, className: 'view-image', width: 1, height: 1, role: 'img', 'aria-label': label });
  const noteLine = el('p', { id: `${hideKey.replace(/_/g, '-')}-note`, className: 'view-note' }, note);
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, noteLine));
  return { section, canvas, note: noteLine };
}

const what = (model) => (model.patch ? `${model.patch}×${model.patch} patches` : 'cases');

export function mountSparseCodingViews({ pictures, headline, more }, app) {
  linkStylesheet();
  const bases = picture(pictures, {
    hideKey: 'sc_basis', heading: 'The basis: what patches are made of',
    help: 'Basis vectors: each tile is one column of B, a small picture that patches are built from.',
    caption: 'Each tile is one basis vector (a column of B), each to its own scale: grey is zero, white positive, black negative. Every patch is rebuilt as a sum of a few of them, each times its code, so a tile and its negative are the same stroke. Noise at first, then pen strokes: short lines and curves of the digits.',
    label: 'The basis vectors, one tile each', note: 'Press Start to see the basis form.',
  });
  const reconstructions = picture(pictures, {
    hideKey: 'sc_reconstructions', heading: 'Patches and their reconstructions',
    help: 'Patches cut from the digits (top) over what the basis and their sparse codes rebuild (below).',
    caption: 'Top: patches cut from the digits; below each, B·a, the patch rebuilt from its codes a, most of which are zero. Black at first (every code starts at zero), then closer to the patch as the objective falls.',
    label: 'Patches above their reconstructions', note: 'Press Start to see the reconstructions.',
  });

  const objective = new Chart(headline, {
    id: 'sc-objective', title: 'Objective per mini-batch', x: 'mini-batch (all passes)', y: 'objective', height: 150,
    caption: 'What learning lowers: ½‖X − BA‖² + β‖A‖₁ over every patch, how far the reconstructions are from the patches plus β times the size of the codes. Each mini-batch lowers it twice: at x − ½ after its codes are found, at x after the basis moves.',
  });
  objective.box.dataset.family = FAMILY;
  const codes = mountCodes(headline);

  const logPanel = panel(more, {
    hideKey: 'sc_log', heading: 'Sparse coding: basis and mini-batches',
    help: 'Save the learnt basis, and one line per mini-batch.',
    caption: 'Save model downloads the basis with its settings and every mini-batch\'s record as sparse_coding.json, the command line\'s format. Each line: the pass and mini-batch, the objective after the codes and after the basis, the share of non-zero codes, the solver\'s iterations per patch, the basis step\'s iterations and the time.',
  });
  logPanel.dataset.family = FAMILY;
  const save = el('button', { type: 'button', id: 'sc-save-model', disabled: true, title: 'Download the learnt basis (with its settings and record) as sparse_coding.json.', dataset: { hideKey: 'sc_save' } }, 'Save model');
  const summary = el('p', { id: 'sc-model-summary', className: 'view-note' }, 'No basis yet.');
  const saveError = el('p', { id: 'sc-save-error', className: 'error', role: 'alert', hidden: true });
  // Scrolls when long: focusable, so a keyboard can scroll it too.
  const log = el('ol', { id: 'sc-log', className: 'epoch-log', tabIndex: 0, 'aria-label': 'Mini-batch log' });
  logPanel.append(el('div', { className: 'view-controls' }, save, summary), saveError, log, logPanel.caption);

  let model = null;
  let steps = 0;
  // An answer for a model that went meanwhile (a new run, Reset) is not drawn.
  function refresher(command, args, view, describe) {
    return coalesce(async () => {
      const asked = model;
      if (!asked) return;
      try {
        const image = await app.rpc(command, args);
        if (model !== asked) return;
        drawImage(view.canvas, image);
        view.note.textContent = describe(asked);
      } catch (error) {
        if (model !== asked) return;
        view.note.textContent = `Could not draw: ${errorText(error)}`;
      }
    });
  }
  const refreshBases = refresher('sc_bases', { maxTiles: MAX_TILES }, bases,
    (m) => `${Math.min(m.n_bases, MAX_TILES)} of ${m.n_bases} basis vectors of ${m.tile[0]}×${m.tile[1]} pixels.`);
  const refreshReconstructions = refresher('sc_reconstructions', { count: RECONSTRUCTIONS }, reconstructions,
    (m) => `The first ${RECONSTRUCTIONS} of the ${m.cases.toLocaleString()} ${what(m)}.`);
  const refreshCodes = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    try {
      const histogram = await app.rpc('sc_histogram', { bins: BINS });
      if (model === asked) codes.draw(histogram, steps);
    } catch {
      // The next step draws again; the pictures' notes say what went wrong.
    }
  });
  const refreshAll = () => Promise.all([refreshBases(), refreshReconstructions(), refreshCodes()]);

  function clear() {
    model = null;
    steps = 0;
    for (const view of [bases, reconstructions]) {
      clearImage(view.canvas);
      delete view.canvas.dataset.drawn;
    }
    bases.note.textContent = 'Press Start to see the basis form.';
    reconstructions.note.textContent = 'Press Start to see the reconstructions.';
    codes.clear();
    save.disabled = true;
    summary.textContent = 'No basis yet.';
    objective.build([]);
    for (const key of ['first', 'last', 'step']) delete objective.box.dataset[key];
    objective.heading.textContent = 'Objective per mini-batch';
    log.replaceChildren();
  }

  const number = (v) => Number(v).toPrecision(6);
  function addObjective(x, value, step) {
    objective.add(x, [value]);
    objective.box.dataset.step = String(step);
    objective.box.dataset.last = String(value);
    objective.heading.textContent = `Objective per mini-batch · ${Number(value).toPrecision(5)} after mini-batch ${step}`;
  }

  app.on('sc_model', ({ summary: next }) => {
    if (!next) {
      clear();
      return;
    }
    model = next;
    save.disabled = false;
    summary.textContent = `${next.n_bases} basis vectors of ${next.n_inputs} pixels, learnt from ${next.cases.toLocaleString()} ${what(next)} with β = ${Number(next.beta).toPrecision(3)} (${next.backend === 'gpu' ? 'WebGPU' : 'CPU'}).`;
    refreshAll();
  });
  app.on('sc_started', ({ objective: start, beta, beta_search: search }) => {
    objective.build([{ label: 'objective', stroke: '#1d2330' }]);
    objective.box.dataset.first = String(start);
    addObjective(0, start, 0);
    const chosen = search ? ` · β = ${Number(beta).toPrecision(4)} gives ${(100 * search.nonzero_fraction).toFixed(2)}% non-zero codes on ${search.cases.toLocaleString()} patches (${search.evaluations} code steps)` : ` · β = ${Number(beta).toPrecision(4)}`;
    log.append(el('li', { dataset: { step: '0', objective: String(start) } }, `start: objective ${number(start)}, every code zero${chosen}`));
  });
  app.on('sc_step', (report) => {
    const { pass, batch, batches, step, objective: value, objective_after_codes: afterCodes, nonzero_fraction: fraction, batch_nonzero_fraction: batchFraction, code_iterations: sweeps, basis_iterations: iterations, seconds } = report;
    if (step <= steps) return;
    steps = step;
    if (afterCodes !== null && afterCodes !== undefined) objective.add(step - 0.5, [afterCodes]);
    addObjective(step, value, step);
    log.append(el('li', { dataset: { step: String(step), objective: String(value), fraction: String(fraction) } },
      `pass ${pass}, mini-batch ${batch}/${batches}: objective ${number(afterCodes)} → ${number(value)} · ${(100 * batchFraction).toFixed(2)}% non-zero in the batch, ${(100 * fraction).toFixed(2)}% over all · ${Number(sweeps).toFixed(1)} solver iterations a patch · ${iterations} basis iterations · ${Number(seconds).toFixed(2)} s`));
    refreshAll();
  });
  // The model goes (a new run starts, or Reset): every view empties.
  app.on('reset', () => clear());
  save.addEventListener('click', async () => {
    saveError.hidden = true;
    try {
      download('sparse_coding.json', await app.rpc('sc_model_json'), 'application/json');
    } catch (error) {
      saveError.textContent = `Save model: ${errorText(error)}`;
      saveError.hidden = false;
    }
  });
  return { refresh: refreshAll };
}

// The Local RBM mode's views (issue 19), live while a local-patch RBM (or a stack of them)
// learns: on the first screen the filters per patch position of one layer (a grid laid out as
// the layer's positions lie on its input, each cell the first few filters of the hidden units
// at that position, zero mid-grey; one cell when the weights are shared; above the first
// layer each filter is projected to the image through the layers below and cropped to what
// its position sees), asked of the worker (lr_filters) after every epoch, with a choice of
// layer (`lr_view_layer` in the hash: the layer in training, or a fixed one); and the
// reconstruction error per epoch as the headline chart, one series per layer over the epochs
// of the whole stack.
import { Chart, colour } from './charts.js';
import { coalesce, download, drawImage, el, errorText, panel } from './canvas.js';

const FAMILY = 'local_rbm';
const VIEW_LAYER_KEY = 'lr_view_layer';

function linkStylesheet() {
  const href = new URL('./local_rbm.css', import.meta.url).href;
  if (document.querySelector(`link[href="${href}"], link[href="views/local_rbm.css"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

export function mountLocalRbmViews({ pictures, headline }, app) {
  linkStylesheet();
  const section = panel(pictures, {
    hideKey: 'lr_filters', heading: 'Filters per patch position',
    help: 'Each cell is one patch position of the layer shown; it shows the filters its hidden units learnt.',
    caption: 'The image is tiled by overlapping patches; each position has its own hidden units and weights (Raina et al. share none). The grid is laid out as the positions lie on the image; each cell shows the first filters of its position, each scaled to its own range (zero mid-grey). With shared weights (a convolutional RBM) there is one cell. A layer above the first is drawn in the grid of its own positions, each filter projected to the image through the weights of the layers below and cropped to the pixels its position sees.',
  });
  section.dataset.family = FAMILY;
  const canvas = el('canvas', { id: 'lr-filters-canvas', className: 'view-image lr-image', width: 1, height: 1, role: 'img', 'aria-label': 'Filters per patch position' });
  const note = el('p', { id: 'lr-filters-note', className: 'view-note' }, 'Press Start to see the filters.');
  const layerChoice = el('select', {
    id: 'lr-view-layer', name: VIEW_LAYER_KEY,
    title: 'Which layer\'s filters to draw: the layer in training (follows the stack as it trains), or one layer. Above the first layer each filter is the layer\'s weights projected to the image through the layers below.',
  }, new Option('Layer in training', 'auto'));
  const layerField = el('label', { className: 'view-field', id: 'lr-view-layer-field', title: layerChoice.title, hidden: true }, 'Layer ', layerChoice);
  const save = el('button', { type: 'button', id: 'lr-save-model', disabled: true, title: 'Download the layers learnt so far (each layer\'s geometry and settings, every epoch\'s error and the weights) as local_rbm.bin, the file `deepbelief local-rbm` writes and reads.', dataset: { hideKey: 'lr_save' } }, 'Save model');
  const saveError = el('p', { id: 'lr-save-error', className: 'error', role: 'alert', hidden: true });
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, note), el('div', { className: 'view-controls' }, layerField, save), saveError);
  const errorChart = new Chart(headline, {
    id: 'lr-error', title: 'Reconstruction error per epoch', x: 'epoch (all layers)', y: 'error', log: true, height: 150,
    caption: 'The mean squared difference between each layer\'s input and its reconstruction after each epoch, one colour per layer (on the CPU: during the epoch, as CD-1 sees them; on WebGPU: the mean-field reconstruction of the first 256 inputs after it).',
  });
  errorChart.box.dataset.family = FAMILY;

  let model = null;
  // Per layer: its errors so far; the layer in training.
  let errors = [];
  let training = 0;
  const chosen = () => (layerChoice.value === 'auto' ? training : Math.min(Number(layerChoice.value), training));

  const refresh = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    const layer = chosen();
    const epochs = errors[layer]?.length ?? 0;
    const perPosition = app.localRbmSettings?.().lr_per_position ?? 9;
    try {
      const image = await app.rpc('lr_filters', { perPosition, layer });
      if (model !== asked) return;
      drawImage(canvas, image);
      canvas.dataset.layer = String(layer);
      const info = asked.layers?.[layer] ?? { positions: asked.positions, positions_side: asked.positions_side, hidden_per_patch: asked.hidden_units / asked.positions };
      const rows = info.positions / info.positions_side;
      const stack = (asked.layers?.length ?? 1) > 1;
      const where = `${info.positions} position${info.positions === 1 ? '' : 's'} (${rows} × ${info.positions_side})`;
      const shown = `${Math.min(perPosition, info.hidden_per_patch)} filters shown per position`;
      note.textContent = stack
        ? `Layer ${layer + 1} (${info.spec}): ${where}, ${shown}${layer > 0 ? ', projected to the image' : ''}, after its epoch ${epochs}.`
        : `${where}, ${shown}, after epoch ${epochs}.`;
    } catch (error) {
      if (model === asked) note.textContent = `Could not draw: ${errorText(error)}`;
    }
  });

  function showLayers(layers) {
    const keep = app.hash.raw(VIEW_LAYER_KEY) ?? layerChoice.value;
    layerChoice.replaceChildren(new Option('Layer in training', 'auto'), ...layers.map((l, k) => new Option(`Layer ${k + 1} · ${l.spec}`, String(k))));
    layerChoice.value = [...layerChoice.options].some((o) => o.value === keep) ? keep : 'auto';
    layerField.hidden = layers.length < 2;
  }
  // A layer chosen in a link before the run: kept until the run's layers are known.
  const fromHash = app.hash.raw(VIEW_LAYER_KEY);
  if (fromHash !== null && /^\d+$/.test(fromHash)) layerChoice.append(new Option(`Layer ${Number(fromHash) + 1}`, fromHash));
  if (fromHash !== null) layerChoice.value = fromHash;
  layerChoice.addEventListener('change', () => {
    app.hash.put(VIEW_LAYER_KEY, layerChoice.value === 'auto' ? null : layerChoice.value);
    refresh();
  });

  function buildChart(layers) {
    errorChart.build(Array.from({ length: layers }, (_, k) => ({ label: `layer ${k + 1}`, stroke: k === 0 && layers === 1 ? '#1d2330' : colour(k) })));
    for (const key of ['first', 'last', 'errors']) delete errorChart.box.dataset[key];
  }

  function clear() {
    model = null;
    errors = [];
    training = 0;
    save.disabled = true;
    canvas.width = 1;
    canvas.height = 1;
    delete canvas.dataset.drawn;
    delete canvas.dataset.layer;
    note.textContent = 'Press Start to see the filters.';
    buildChart(0);
  }

  app.on('lr_model', ({ summary }) => {
    if (!summary) {
      clear();
      return;
    }
    model = summary;
    errors = [];
    training = 0;
    const layers = summary.layers ?? [];
    showLayers(layers);
    buildChart(Math.max(1, layers.length));
    refresh();
  });
  app.on('lr_epoch', ({ layer = 0, layers = 1, epoch, total_epoch: total = epoch, reconstruction_error: error }) => {
    errors[layer] ??= [];
    if (epoch <= errors[layer].length) return;
    errors[layer].push(error);
    training = layer;
    save.disabled = false;
    const row = Array.from({ length: layers }, (_, k) => (k === layer && Number.isFinite(error) && error > 0 ? error : null));
    errorChart.add(total, row);
    // The first layer's first and last error (what a one-layer run had), and every layer's.
    errorChart.box.dataset.first = String(errors[0][0]);
    errorChart.box.dataset.last = String(errors[0][errors[0].length - 1]);
    errorChart.box.dataset.errors = JSON.stringify(errors);
    errorChart.heading.textContent = `Reconstruction error · ${Number(error).toPrecision(4)} after epoch ${epoch}${layers > 1 ? ` of layer ${layer + 1}` : ''}`;
    refresh();
  });
  app.on('reset', () => clear());
  save.addEventListener('click', async () => {
    saveError.hidden = true;
    try {
      download('local_rbm.bin', await app.rpc('lr_model_file'));
    } catch (error) {
      saveError.textContent = `Save model: ${errorText(error)}`;
      saveError.hidden = false;
    }
  });
}

// The Local RBM mode's views (issue 19), live while a local-patch RBM learns: on the first
// screen its filters per patch position (a grid laid out as the positions lie on the image,
// each cell the first few filters of the hidden units at that position, zero mid-grey; one cell
// when the weights are shared), asked of the worker (lr_filters) after every epoch; and the
// reconstruction error per epoch as the headline chart.
import { Chart } from './charts.js';
import { coalesce, drawImage, el, errorText, panel } from './canvas.js';

const FAMILY = 'local_rbm';

function linkStylesheet() {
  const href = new URL('./local_rbm.css', import.meta.url).href;
  if (document.querySelector(`link[href="${href}"], link[href="views/local_rbm.css"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

export function mountLocalRbmViews({ pictures, headline }, app) {
  linkStylesheet();
  const section = panel(pictures, {
    hideKey: 'lr_filters', heading: 'Filters per patch position',
    help: 'Each cell is one patch position of the image; it shows the filters its hidden units learnt.',
    caption: 'The image is tiled by overlapping patches; each position has its own hidden units and weights (Raina et al. share none). The grid is laid out as the positions lie on the image; each cell shows the first filters of its position, each scaled to its own range (zero mid-grey). With shared weights (a convolutional RBM) there is one cell.',
  });
  section.dataset.family = FAMILY;
  const canvas = el('canvas', { id: 'lr-filters-canvas', className: 'view-image lr-image', width: 1, height: 1, role: 'img', 'aria-label': 'Filters per patch position' });
  const note = el('p', { id: 'lr-filters-note', className: 'view-note' }, 'Press Start to see the filters.');
  const save = el('button', { type: 'button', id: 'lr-save-model', disabled: true, title: 'Download the layer learnt so far (geometry, settings, every epoch\'s error and the weights) as local_rbm.bin, the file `deepbelief local-rbm` writes and reads.', dataset: { hideKey: 'lr_save' } }, 'Save model');
  const saveError = el('p', { id: 'lr-save-error', className: 'error', role: 'alert', hidden: true });
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, note), el('div', { className: 'view-controls' }, save), saveError);
  const errorChart = new Chart(headline, {
    id: 'lr-error', title: 'Reconstruction error per epoch', x: 'epoch', y: 'error', log: true, height: 150,
    caption: 'The mean squared difference between the crops and their reconstructions after each epoch (on the CPU: during the epoch, as CD-1 sees them; on WebGPU: the mean-field reconstruction of the first 256 crops after it).',
  });
  errorChart.box.dataset.family = FAMILY;

  let model = null;
  let lastEpoch = 0;
  const refresh = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    const perPosition = app.localRbmSettings?.().lr_per_position ?? 9;
    try {
      const image = await app.rpc('lr_filters', { perPosition });
      if (model !== asked) return;
      drawImage(canvas, image);
      note.textContent = `${asked.positions} positions (${asked.positions_side} × ${asked.positions_side}), ${Math.min(perPosition, asked.hidden_units / asked.positions)} filters shown per position, after epoch ${lastEpoch}.`;
    } catch (error) {
      if (model === asked) note.textContent = `Could not draw: ${errorText(error)}`;
    }
  });

  function clear() {
    model = null;
    save.disabled = true;
    lastEpoch = 0;
    canvas.width = 1;
    canvas.height = 1;
    delete canvas.dataset.drawn;
    note.textContent = 'Press Start to see the filters.';
    errorChart.build([]);
    for (const key of ['first', 'last']) delete errorChart.box.dataset[key];
  }

  app.on('lr_model', ({ summary }) => {
    if (!summary) {
      clear();
      return;
    }
    model = summary;
    lastEpoch = 0;
    errorChart.build([{ label: 'reconstruction error', stroke: '#1d2330' }]);
    for (const key of ['first', 'last']) delete errorChart.box.dataset[key];
    refresh();
  });
  app.on('lr_epoch', ({ epoch, reconstruction_error: error }) => {
    if (epoch <= lastEpoch) return;
    lastEpoch = epoch;
    save.disabled = false;
    if (Number.isFinite(error) && error > 0) errorChart.add(epoch, [error]);
    errorChart.box.dataset.first ??= String(error);
    errorChart.box.dataset.last = String(error);
    errorChart.heading.textContent = `Reconstruction error · ${Number(error).toPrecision(4)} after epoch ${epoch}`;
    refresh();
  });
  app.on('reset', () => clear());
  save.addEventListener('click', async () => {
    saveError.hidden = true;
    try {
      const bytes = await app.rpc('lr_model_file');
      const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
      const link = el('a', { href: url, download: 'local_rbm.bin', hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      saveError.textContent = `Save model: ${errorText(error)}`;
      saveError.hidden = false;
    }
  });
}

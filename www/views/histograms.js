// Hidden units: per RBM layer, the histogram of p(h = 1 | data) over every unit and a spread of
// cases. A layer whose units are decisive piles up near 0 and 1; an undecided one near 0.5.
import uPlot from '../vendor/uPlot.esm.js';
import { coalesce, el, errorText, field, panel } from './canvas.js';

const CHART_HEIGHT = 160;

export function mountHistograms(container, app) {
  app.hash.register('hist_bins', 20);
  const section = panel(container, {
    hideKey: 'histograms', heading: 'Hidden unit activations',
    help: 'For each layer, how often its hidden units are on given the data: p(h = 1 | v) over all units and a spread of cases.',
    caption: 'For each layer, a histogram of p(h = 1 | data) over its units and many cases. Mass piled near 0 and 1 means decisive features; a spike at 0.5 means units that have not learned yet.',
  });
  const bins = el('select', { id: 'hist-bins' }, ...[10, 20, 50].map((n) => el('option', { value: n, title: `${n} equal bins over [0, 1]` }, String(n))));
  bins.value = String([10, 20, 50].includes(Number(app.hash.get('hist_bins'))) ? app.hash.get('hist_bins') : 20);
  const charts = el('div', { id: 'histograms', className: 'histograms' });
  const note = el('p', { id: 'histograms-note', className: 'view-note' }, 'Train a model to see how its hidden units respond to the data.');
  section.append(el('div', { className: 'view-controls' },
    field('Bins', bins, { title: 'Number of equal-width bins over [0, 1].', hideKey: 'hist_bins' })), charts, note, section.caption);

  const plots = [];
  function plotFor(layer) {
    if (plots[layer]) return plots[layer];
    const holder = el('figure', { id: `histogram-layer-${layer + 1}`, className: 'histogram' }, el('figcaption', {}, `Layer ${layer + 1}`));
    charts.append(holder);
    const width = () => Math.max(200, Math.min(420, charts.clientWidth || 320));
    const plot = new uPlot({
      width: width(), height: CHART_HEIGHT, legend: { show: false }, cursor: { show: false },
      scales: { x: { time: false, range: [0, 1] }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [{ label: 'p(h = 1 | v)', size: 36 }, { size: 50 }],
      series: [{}, { label: 'share of unit-cases', fill: 'rgba(47,111,221,0.6)', stroke: '#2f6fdd', paths: uPlot.paths.bars({ size: [0.95, 100] }), points: { show: false } }],
    }, [[], []], holder);
    plots[layer] = { plot, holder };
    return plots[layer];
  }

  const refresh = coalesce(async () => {
    let histograms;
    try {
      histograms = await app.rpc('view_histograms', { bins: Number(bins.value) });
    } catch (error) {
      const noModel = /no model/i.test(errorText(error));
      if (noModel) plots.forEach((entry) => { if (entry) entry.holder.hidden = true; });
      note.textContent = noModel ? 'Train a model to see how its hidden units respond to the data.' : `Could not compute the histograms: ${errorText(error)}`;
      return;
    }
    histograms.forEach(({ layer, edges, counts }) => {
      const total = counts.reduce((a, b) => a + b, 0) || 1;
      const centres = counts.map((_, k) => (edges[k] + edges[k + 1]) / 2);
      const { plot, holder } = plotFor(layer);
      plot.setData([centres, counts.map((c) => c / total)]);
      holder.dataset.total = String(total);
      holder.hidden = false;
    });
    plots.forEach((entry, layer) => {
      if (entry && layer >= histograms.length) entry.holder.hidden = true;
    });
    note.textContent = `${histograms.length} layer${histograms.length === 1 ? '' : 's'}; bars are the share of (unit, case) pairs in each bin.`;
  });

  bins.addEventListener('change', () => {
    app.hash.set('hist_bins', Number(bins.value));
    refresh();
  });
  app.on('epoch', refresh);
  app.on('model', refresh);
  return { refresh };
}

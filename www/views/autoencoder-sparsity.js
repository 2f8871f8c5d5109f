// The ρ̂ plot of the sparse autoencoder: every hidden unit's mean activation over the training
// cases, sorted from the most active, as bars, with the target ρ as a dashed line. Drawn on a
// canvas at the device's resolution; its figures are on the figure's data attributes
// (`mean`, `firstMean` of the run, `target`, `units`, `drawn`).
import { el } from './canvas.js';

const HEIGHT = 150;
const PAD = { left: 44, right: 8, top: 8, bottom: 22 };
const BAR = '#2f6fdd';
const TARGET = '#c2410c';

export function mountSparsity(container) {
  const canvas = el('canvas', { id: 'ae-sparsity-canvas', className: 'ae-sparsity-canvas', width: 1, height: 1, role: 'img', 'aria-label': 'Mean activation ρ̂ of each hidden unit, sorted, against the target ρ' });
  const heading = el('figcaption', {}, 'ρ̂ per hidden unit vs the target ρ');
  const figure = el('figure', { className: 'chart ae-sparsity', id: 'chart-ae-sparsity', dataset: { hideKey: 'chart_ae_sparsity', family: 'autoencoder' } }, heading, canvas,
    el('p', { className: 'caption', id: 'ae-sparsity-caption' }, 'ρ̂ⱼ is how often hidden unit j is on, averaged over the training digits. Bars: every unit, most active first; dashed line: the target ρ. The sparsity term pulls the bars down to the line.'));
  container.append(figure);
  let last = null;

  function paint() {
    const width = Math.max(220, Math.round(canvas.clientWidth || figure.clientWidth || 300));
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(HEIGHT * ratio);
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, HEIGHT);
    if (!last) return;
    const { rho, values } = last;
    const top = Math.min(1, Math.max(2 * rho, values[0] ?? 0) * 1.08) || 1;
    const plotWidth = width - PAD.left - PAD.right;
    const plotHeight = HEIGHT - PAD.top - PAD.bottom;
    const y = (v) => PAD.top + plotHeight * (1 - Math.min(v, top) / top);
    g.font = '10px system-ui, sans-serif';
    g.fillStyle = '#5b6475';
    g.strokeStyle = '#dde1e8';
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    const clear = (v) => Math.abs(y(v) - y(rho)) > 12;
    for (const v of [0, top / 2, top].filter(clear)) {
      g.beginPath();
      g.moveTo(PAD.left, y(v));
      g.lineTo(width - PAD.right, y(v));
      g.stroke();
      g.fillText(v.toPrecision(2), PAD.left - 4, y(v));
    }
    const step = plotWidth / Math.max(1, values.length);
    g.fillStyle = BAR;
    values.forEach((v, k) => {
      const x = PAD.left + k * step;
      g.fillRect(x, y(v), Math.max(1, step - (step > 3 ? 1 : 0)), y(0) - y(v));
    });
    g.strokeStyle = TARGET;
    g.lineWidth = 2;
    g.setLineDash([6, 4]);
    g.beginPath();
    g.moveTo(PAD.left, y(rho));
    g.lineTo(width - PAD.right, y(rho));
    g.stroke();
    g.setLineDash([]);
    // The target's label on the axis, where no bar covers it.
    g.fillStyle = TARGET;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    g.fillText(`ρ ${rho}`, PAD.left - 4, y(rho));
    g.fillStyle = '#5b6475';
    g.textAlign = 'center';
    g.textBaseline = 'top';
    g.fillText(`${values.length} hidden units, most active first`, PAD.left + plotWidth / 2, HEIGHT - PAD.bottom + 6);
  }

  if (typeof ResizeObserver === 'function') {
    let width = 0;
    new ResizeObserver(() => {
      const now = Math.round(canvas.clientWidth);
      if (now && now !== width) {
        width = now;
        paint();
      }
    }).observe(canvas);
  }

  return {
    // { rho, rho_hat } from the worker.
    draw({ rho, rho_hat }) {
      const values = [...rho_hat].sort((a, b) => b - a);
      const mean = values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
      last = { rho, values };
      paint();
      figure.dataset.mean = String(mean);
      if (figure.dataset.firstMean === undefined) figure.dataset.firstMean = String(mean);
      figure.dataset.target = String(rho);
      figure.dataset.units = String(values.length);
      figure.dataset.drawn = String(Number(figure.dataset.drawn || 0) + 1);
      const start = Number(figure.dataset.firstMean);
      heading.textContent = `ρ̂ per hidden unit vs the target ρ · mean ${mean.toPrecision(3)}${start !== mean ? ` (${start.toPrecision(3)} at the start)` : ''}`;
    },
    clear() {
      last = null;
      paint();
      for (const key of ['mean', 'firstMean', 'target', 'units', 'drawn']) delete figure.dataset[key];
      heading.textContent = 'ρ̂ per hidden unit vs the target ρ';
    },
  };
}

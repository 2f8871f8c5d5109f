// Sparse coding's codes, drawn on one canvas at the device's resolution: on the left the
// histogram of the non-zero code values (signed: a basis vector can be added or taken away),
// on the right how many codes each patch uses, with the count the target sparsity means as a
// dashed line and the mean as a solid one. Its figures are on the figure's data attributes
// (`fraction`, `firstFraction` after the first step, `target`, `mean`, `cases`, `drawn`).
import { el } from './canvas.js';

const HEIGHT = 150;
// The top row holds the two plots' titles, the bottom row their axis labels.
const PAD = { top: 18, bottom: 22 };
const GAP = 28;
const BAR = '#2f6fdd';
const USED = '#2b8a3e';
const TARGET = '#c2410c';
const MUTED = '#5b6475';
const GRID = '#dde1e8';

const percent = (fraction) => `${(100 * fraction).toFixed(fraction < 0.1 ? 2 : 1)}%`;

export function mountCodes(container) {
  const canvas = el('canvas', { id: 'sc-codes-canvas', className: 'sc-codes-canvas', width: 1, height: 1, role: 'img', 'aria-label': 'Histogram of the non-zero code values, and of the non-zero codes per patch against the target' });
  const heading = el('figcaption', {}, 'Codes: non-zero values, and non-zero codes per patch');
  const figure = el('figure', { className: 'chart sc-codes', id: 'chart-sc-codes', dataset: { hideKey: 'chart_sc_codes', family: 'sparse_coding' } }, heading, canvas,
    el('p', { className: 'caption', id: 'sc-codes-caption' }, 'Left: the values of the codes that are not zero, over every patch; most codes are exactly zero and are not drawn. Right: how many codes each patch uses; the dashed line is the count the target sparsity means, the solid one the mean. The L1 penalty β keeps the bars to the left.'));
  container.append(figure);
  let last = null;

  // Bars of `counts` in the box from x0, `width` wide; the y scale from the tallest bar.
  function bars(g, counts, x0, width, colour) {
    const plotHeight = HEIGHT - PAD.top - PAD.bottom;
    const top = Math.max(1, ...counts);
    const step = width / Math.max(1, counts.length);
    g.fillStyle = colour;
    counts.forEach((c, k) => {
      const h = (plotHeight * c) / top;
      g.fillRect(x0 + k * step, PAD.top + plotHeight - h, Math.max(1, step - (step > 3 ? 1 : 0)), h);
    });
    g.strokeStyle = GRID;
    g.beginPath();
    g.moveTo(x0, PAD.top + plotHeight + 0.5);
    g.lineTo(x0 + width, PAD.top + plotHeight + 0.5);
    g.stroke();
    return step;
  }

  function label(g, text, x, y, align = 'center', colour = MUTED) {
    g.fillStyle = colour;
    g.textAlign = align;
    g.fillText(text, x, y);
  }

  function paint() {
    const width = Math.max(260, Math.round(canvas.clientWidth || figure.clientWidth || 320));
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(HEIGHT * ratio);
    const g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, HEIGHT);
    if (!last) return;
    g.font = '10px system-ui, sans-serif';
    g.textBaseline = 'top';
    const half = (width - GAP) / 2;
    const below = HEIGHT - PAD.bottom + 6;
    // Left: the non-zero values over [−max|a|, max|a|].
    const { values, per_case: perCase, target, n_bases: bases } = last;
    const left = { x: 8, width: half - 8 };
    bars(g, values.counts, left.x, left.width, BAR);
    const edge = values.edges.at(-1);
    label(g, (-edge).toPrecision(2), left.x, below, 'left');
    label(g, '0', left.x + left.width / 2, below);
    label(g, edge.toPrecision(2), left.x + left.width, below, 'right');
    label(g, 'non-zero code values', left.x + left.width / 2, 2);
    // Right: patches by their number of non-zero codes, the target's count dashed.
    const right = { x: half + GAP, width: half - 8 };
    const targetCount = target === null || target === undefined ? null : target * bases;
    const shown = Math.max(perCase.length, targetCount === null ? 0 : Math.ceil(1.25 * targetCount) + 1);
    const counts = Array.from({ length: shown }, (_, k) => perCase[k] ?? 0);
    const step = bars(g, counts, right.x, right.width, USED);
    const at = (k) => right.x + (k + 0.5) * step;
    const line = (x, colour, dash) => {
      g.strokeStyle = colour;
      g.lineWidth = 2;
      g.setLineDash(dash);
      g.beginPath();
      g.moveTo(x, PAD.top);
      g.lineTo(x, HEIGHT - PAD.bottom);
      g.stroke();
      g.setLineDash([]);
      g.lineWidth = 1;
    };
    if (targetCount !== null) line(at(targetCount), TARGET, [5, 4]);
    line(at(last.mean), '#1d2330', []);
    label(g, '0', right.x, below, 'left');
    label(g, String(shown - 1), right.x + right.width, below, 'right');
    label(g, 'non-zero codes per patch', right.x + right.width / 2, 2);
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
    // The trainer's code_histogram(): { values: {edges, counts}, per_case, per_basis, nonzero,
    // zeros, nonzero_fraction, target, cases, n_bases }. `step`: the steps trained (0: none).
    draw(histogram, step) {
      const mean = histogram.nonzero / Math.max(1, histogram.cases);
      last = { ...histogram, mean };
      paint();
      const fraction = histogram.nonzero_fraction;
      figure.dataset.fraction = String(fraction);
      if (step > 0 && figure.dataset.firstFraction === undefined) figure.dataset.firstFraction = String(fraction);
      figure.dataset.target = histogram.target === null ? '' : String(histogram.target);
      figure.dataset.mean = String(mean);
      figure.dataset.cases = String(histogram.cases);
      figure.dataset.step = String(step);
      figure.dataset.drawn = String(Number(figure.dataset.drawn || 0) + 1);
      const unused = histogram.per_basis.filter((c) => c === 0).length;
      heading.textContent = `Codes: ${percent(fraction)} non-zero${histogram.target === null ? '' : ` (target ${percent(histogram.target)})`}${unused ? ` · ${unused} bases unused` : ''}`;
    },
    clear() {
      last = null;
      paint();
      for (const key of ['fraction', 'firstFraction', 'target', 'mean', 'cases', 'step', 'drawn']) delete figure.dataset[key];
      heading.textContent = 'Codes: non-zero values, and non-zero codes per patch';
    },
  };
}

// The Sequences mode's views (issue 20), live while a recurrent net learns: on the first screen
// the hidden state over time (a heat map of the trained net run over a held-out stretch of the
// task: one column per time step, the hidden units, then the outputs against the targets) and
// a sensitivity tensor ∂a/∂w as Moore draws it (one tile per unit j, each the weight block's
// shape); the error curve (mean E per chunk) and the CPU-vs-GPU timing chart (µs per RTRL step
// of Moore's adder over n, both measured here in the browser; the crossover marked) as the
// headline charts. The images are asked of the worker (sq_sequence, sq_sensitivity) after
// every chunk; the timing runs on its button (sq_time per n and backend).
import { Chart } from './charts.js';
import { coalesce, el, errorText, panel } from './canvas.js';
import { timingSizes } from '../panels/sequences.js';

const FAMILY = 'sequences';
const SEQUENCE_STEPS = 40;

function linkStylesheet() {
  const href = new URL('./sequences.css', import.meta.url).href;
  if (document.querySelector(`link[href="${href}"], link[href="views/sequences.css"]`)) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href }));
}

function picture(container, { hideKey, heading, help, caption, label, note }) {
  const section = panel(container, { hideKey, heading, help, caption });
  section.dataset.family = FAMILY;
  const canvas = el('canvas', { id: `${hideKey.replace(/_/g, '-')}-canvas`, className: 'view-image sq-image', width: 1, height: 1, role: 'img', 'aria-label': label });
  const noteLine = el('p', { id: `${hideKey.replace(/_/g, '-')}-note`, className: 'view-note' }, note);
  section.append(canvas, section.caption, el('div', { className: 'view-status' }, noteLine));
  return { section, canvas, note: noteLine };
}

// −1 blue, 0 white, +1 red.
function diverging(v) {
  const x = Math.max(-1, Math.min(1, v));
  return x >= 0 ? [255, Math.round(255 * (1 - x)), Math.round(255 * (1 - x))] : [Math.round(255 * (1 + x)), Math.round(255 * (1 + x)), 255];
}

// Draws `rows` of values (each `width` long, in [−1, 1]) with `gaps` blank rows before the
// indices listed, each cell `cell` pixels.
function drawRows(canvas, rows, width, { cell = 6, gapsBefore = [] } = {}) {
  const gaps = new Set(gapsBefore);
  const height = rows.length + gaps.size;
  canvas.width = width * cell;
  canvas.height = height * cell;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#f4f5f7';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  let y = 0;
  rows.forEach((row, r) => {
    if (gaps.has(r)) y += 1;
    row.forEach((v, t) => {
      if (v === null) return;
      const [red, green, blue] = diverging(v);
      ctx.fillStyle = `rgb(${red},${green},${blue})`;
      ctx.fillRect(t * cell, y * cell, cell, cell);
    });
    y += 1;
  });
  canvas.dataset.drawn = '1';
}

export function mountSequenceViews({ pictures, headline }, app) {
  linkStylesheet();
  const hidden = picture(pictures, {
    hideKey: 'sq_hidden_state', heading: 'Hidden state over time',
    help: 'The trained net run over 40 held-out steps of the task: each column is a time step.',
    caption: 'Each column is one time step of a held-out stretch of the task, run through the net as trained so far (no learning). Top rows: the hidden units (red +1, white 0, blue −1). Below the gap: the outputs, then the targets (±0.3 scaled to ±1), and a last row green where the step was right, grey where it is not scored.',
    label: 'Hidden units and outputs over time', note: 'Press Start to see the hidden state.',
  });
  const sensitivity = picture(pictures, {
    hideKey: 'sq_sensitivity', heading: 'A sensitivity tensor ∂a/∂w',
    help: 'What RTRL carries forward: how each hidden unit depends on each weight of one block.',
    caption: 'RTRL keeps, for every weight w_st of a block and every unit j, ∂a_j/∂w_st, updated every step from the previous step\'s. One tile per unit j (Moore\'s Figure 5.3), each laid out as the weight block (rows s, columns t), all to one scale: red positive, blue negative. Under the shortcut, blocks into the output take back-propagation instead and keep none.',
    label: 'Sensitivity tensor tiles', note: 'Press Start to see a sensitivity tensor.',
  });
  const errorChart = new Chart(headline, {
    id: 'sq-error', title: 'Error per chunk', x: 'step', y: 'mean E', log: true, height: 150,
    caption: 'The mean of E = ½Σ(y − d)² over the steps of each chunk, as the net learns online (a weight step every step). Accuracy is in the progress line.',
  });
  errorChart.box.dataset.family = FAMILY;
  const timing = new Chart(headline, {
    id: 'sq-timing', title: 'CPU vs GPU: µs per RTRL step', x: 'n (bits; 2n-2n-n Elman net)', y: 'µs per step', log: true, height: 170,
    caption: 'Moore\'s result, in your browser: the time of one online RTRL step (with the shortcut) of the n-bit adder on the CPU (the wasm engine) and on WebGPU (every step on the GPU, the timed steps in one submission). The CPU wins on small nets; the GPU from the crossover on, where the sensitivity tensors (≈40n³ values) outgrow the per-step overhead.',
  });
  timing.box.dataset.family = FAMILY;
  const timeButton = el('button', { type: 'button', id: 'sq-time', title: 'Time one RTRL step of Moore\'s adder at each n on the CPU and on WebGPU (a few steps each), and plot them.' }, 'Time CPU vs GPU');
  const timeNote = el('p', { id: 'sq-time-note', className: 'view-note', 'aria-live': 'polite' }, 'Press “Time CPU vs GPU” to measure the crossover here.');
  timing.box.append(el('div', { className: 'view-controls', dataset: { family: FAMILY } }, timeButton, timeNote));

  let model = null;
  let lastStep = 0;

  const refreshHidden = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    try {
      const s = await app.rpc('sq_sequence', { steps: SEQUENCE_STEPS });
      if (model !== asked) return;
      const column = (values, width, k, scale = 1) => Array.from({ length: s.steps }, (_, t) => values[t * width + k] * scale);
      const rows = [];
      for (let k = 0; k < s.hidden; k += 1) rows.push(column(s.hidden_values, s.hidden, k));
      for (let k = 0; k < s.outputs; k += 1) rows.push(column(s.output_values, s.outputs, k, 1 / 0.3));
      for (let k = 0; k < s.outputs; k += 1) rows.push(column(s.target_values, s.outputs, k, 1 / 0.3));
      drawRows(hidden.canvas, rows, s.steps, { gapsBefore: [s.hidden, s.hidden + s.outputs] });
      // The right/wrong strip.
      const ctx = hidden.canvas.getContext('2d');
      const strip = document.createElement('canvas');
      strip.width = hidden.canvas.width;
      strip.height = hidden.canvas.height + 12;
      const sctx = strip.getContext('2d');
      sctx.drawImage(hidden.canvas, 0, 0);
      s.right.forEach((right, t) => {
        sctx.fillStyle = !s.scored[t] ? '#c8ccd4' : right ? '#2b8a3e' : '#d9480f';
        sctx.fillRect(t * 6, hidden.canvas.height + 4, 6, 6);
      });
      hidden.canvas.height = strip.height;
      ctx.drawImage(strip, 0, 0);
      const scored = s.scored.filter(Boolean).length;
      const right = s.right.filter((r, t) => r && s.scored[t]).length;
      hidden.canvas.dataset.right = String(right);
      hidden.note.textContent = `${s.hidden} hidden units over ${s.steps} held-out steps: ${right} of ${scored} scored steps right.`;
    } catch (error) {
      if (model === asked) hidden.note.textContent = `Could not draw: ${errorText(error)}`;
    }
  });

  const refreshSensitivity = coalesce(async () => {
    const asked = model;
    if (!asked) return;
    // A recurrent block's tensor where one is kept (μ[1←1] of Elman), else the first kept.
    const kept = asked.blocks.filter((b) => b.tensor_layers.length);
    const block = kept.find((b) => b.name.startsWith('μ')) ?? kept[0];
    if (!block) {
      sensitivity.note.textContent = asked.trainer === 'bptt' ? 'Truncated BPTT keeps no sensitivity tensors.' : 'Every block takes the back-propagation shortcut here: no tensors to show.';
      return;
    }
    try {
      const s = await app.rpc('sq_sensitivity', { block: block.index, layer: block.tensor_layers[0] });
      if (model !== asked || !s) return;
      const cell = Math.max(2, Math.min(8, Math.floor(240 / (s.cols * Math.ceil(Math.sqrt(s.units))))));
      const across = Math.ceil(Math.sqrt(s.units));
      const down = Math.ceil(s.units / across);
      const canvas = sensitivity.canvas;
      canvas.width = across * (s.cols + 1) * cell;
      canvas.height = down * (s.rows + 1) * cell;
      const ctx = canvas.getContext('2d');
      ctx.fillStyle = '#f4f5f7';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      const scale = s.max_abs > 0 ? 1 / s.max_abs : 1;
      const p = s.rows * s.cols;
      for (let j = 0; j < s.units; j += 1) {
        const x0 = (j % across) * (s.cols + 1) * cell;
        const y0 = Math.floor(j / across) * (s.rows + 1) * cell;
        for (let r = 0; r < s.rows; r += 1) {
          for (let c = 0; c < s.cols; c += 1) {
            const [red, green, blue] = diverging(s.values[j * p + r * s.cols + c] * scale);
            ctx.fillStyle = `rgb(${red},${green},${blue})`;
            ctx.fillRect(x0 + c * cell, y0 + r * cell, cell, cell);
          }
        }
      }
      canvas.dataset.drawn = '1';
      sensitivity.note.textContent = `∂a/∂${s.block} of layer ${s.layer}'s ${s.units} units (tiles of ${s.rows}×${s.cols}), max |value| ${Number(s.max_abs).toPrecision(3)}.`;
    } catch (error) {
      if (model === asked) sensitivity.note.textContent = `Could not draw: ${errorText(error)}`;
    }
  });

  function clear() {
    model = null;
    lastStep = 0;
    for (const view of [hidden, sensitivity]) {
      view.canvas.width = 1;
      view.canvas.height = 1;
      delete view.canvas.dataset.drawn;
    }
    hidden.note.textContent = 'Press Start to see the hidden state.';
    sensitivity.note.textContent = 'Press Start to see a sensitivity tensor.';
    errorChart.build([]);
    for (const key of ['first', 'last']) delete errorChart.box.dataset[key];
  }

  app.on('sq_model', ({ summary }) => {
    if (!summary) {
      clear();
      return;
    }
    model = summary;
    errorChart.build([{ label: 'mean E', stroke: '#1d2330' }]);
    for (const key of ['first', 'last']) delete errorChart.box.dataset[key];
    refreshHidden();
  });
  app.on('sq_chunk', ({ step, mean_error: error }) => {
    if (step <= lastStep) return;
    lastStep = step;
    if (Number.isFinite(error) && error > 0) errorChart.add(step, [error]);
    errorChart.box.dataset.first ??= String(error);
    errorChart.box.dataset.last = String(error);
    errorChart.heading.textContent = `Error per chunk · mean E ${Number(error).toPrecision(4)} at step ${step.toLocaleString()}`;
    refreshHidden();
    refreshSensitivity();
  });
  app.on('reset', () => clear());

  // The timing: n by n, the CPU then WebGPU (where there is one); the crossover is the first n
  // from which the GPU's time stays below the CPU's.
  let timingRun = 0;
  timeButton.addEventListener('click', async () => {
    const run = (timingRun += 1);
    const settings = app.sequenceSettings?.() ?? { sq_timing_max: 32, sq_timing_steps: 5 };
    const sizes = timingSizes(settings.sq_timing_max);
    const gpu = !!app.runtime?.webgpu?.available;
    timing.build([{ label: 'CPU', stroke: '#2f6fdd' }, ...(gpu ? [{ label: 'WebGPU', stroke: '#d9480f' }] : [])]);
    delete timing.box.dataset.crossover;
    delete timing.box.dataset.timings;
    timeButton.disabled = true;
    const points = [];
    try {
      for (const bits of sizes) {
        if (run !== timingRun) return;
        timeNote.textContent = `Timing n = ${bits} on the CPU…`;
        const cpu = await app.rpc('sq_time', { bits, gpu: false, steps: settings.sq_timing_steps });
        let device = null;
        if (gpu) {
          timeNote.textContent = `Timing n = ${bits} on WebGPU…`;
          device = await app.rpc('sq_time', { bits, gpu: true, steps: settings.sq_timing_steps });
        }
        points.push({ bits, cpu: cpu.microseconds_per_step, gpu: device?.microseconds_per_step ?? null });
        timing.box.dataset.timings = JSON.stringify(points);
        timing.add(bits, gpu ? [cpu.microseconds_per_step, device.microseconds_per_step] : [cpu.microseconds_per_step]);
      }
      const crossing = gpu ? points.findIndex((p, k) => points.slice(k).every((q) => q.gpu < q.cpu)) : -1;
      if (crossing >= 0) {
        timing.box.dataset.crossover = String(points[crossing].bits);
        timing.heading.textContent = `CPU vs GPU: µs per RTRL step · the GPU is faster from n = ${points[crossing].bits} (${2 * points[crossing].bits} hidden units)`;
      } else {
        timing.heading.textContent = gpu ? `CPU vs GPU: µs per RTRL step · the CPU is faster up to n = ${sizes[sizes.length - 1]}` : 'CPU: µs per RTRL step (no WebGPU here)';
      }
      const last = points[points.length - 1];
      timeNote.textContent = `n = ${last.bits}: ${last.cpu.toFixed(0)} µs on the CPU${last.gpu !== null ? `, ${last.gpu.toFixed(0)} µs on WebGPU` : ''}.`;
    } catch (error) {
      timeNote.textContent = `Timing stopped: ${errorText(error)}`;
    } finally {
      if (run === timingRun) timeButton.disabled = false;
    }
  });
  return { refresh: () => Promise.all([refreshHidden(), refreshSensitivity()]) };
}

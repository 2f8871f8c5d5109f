// Live training charts (uPlot). RBM charts share one x axis, the cumulative epoch, with one
// series (one colour) per layer, so layers read apart; the trial chart plots each layer's
// initialisation scores; the supervised chart the criterion per iteration of each stage.
// The reconstruction error and the test accuracy (one point per finished run, so runs with
// different settings compare) are the headline charts of the first screen; the rest sit
// below the fold.
import uPlot from '../vendor/uPlot.esm.js';

const COLOURS = ['#2f6fdd', '#d9480f', '#2b8a3e', '#9c36b5', '#e67700', '#0b7285', '#c2255c', '#5c940d'];
export const colour = (k) => COLOURS[k % COLOURS.length];

// id, title, y-axis label, value(s) of an epoch event. `held_out` charts draw a dashed twin.
const EPOCH_CHARTS = [
  { id: 'recon', title: 'Reconstruction error', y: 'squared error', value: (e) => e.report.reconstruction_error, headline: true,
    caption: 'How far each layer\'s one-step reconstructions are from its input (lower is better): it falls fast, then slowly. One colour per layer.' },
  { id: 'free-energy', title: 'Free energy: train (solid) vs held-out (dashed)', y: 'mean free energy', value: (e) => e.metrics?.free_energy_train ?? null, twin: (e) => e.metrics?.free_energy_held_out ?? null },
  { id: 'learning-rate', title: 'Learning rate', y: 'rate', value: (e) => e.report.learning_rate },
  { id: 'momentum', title: 'Momentum', y: 'momentum', value: (e) => e.report.momentum },
  { id: 'cosine', title: 'Gradient cosine', y: 'cosine', value: (e) => e.report.gradient_cosine },
  { id: 'increment', title: 'Increment ratio', y: 'max|Δw| / max|w|', value: (e) => e.report.increment_ratio, log: true },
  { id: 'no-improvement', title: 'Epochs without improvement', y: 'epochs', value: (e) => e.report.epochs_without_improvement },
  { id: 'speed', title: 'Epoch time (solid) and cases/s (dashed)', y: 'seconds', value: (e) => e.report.seconds, twin: (e) => e.report.cases_per_second, twinAxis: 'cases/s' },
];

export class Chart {
  constructor(parent, { id, title, x, y, twinAxis, log, caption, height = 170 }) {
    this.box = document.createElement('figure');
    this.box.className = 'chart';
    this.box.id = `chart-${id}`;
    this.box.dataset.hideKey = `chart_${id.replace(/-/g, '_')}`;
    const heading = document.createElement('figcaption');
    heading.textContent = title;
    this.heading = heading;
    this.area = document.createElement('div');
    this.area.setAttribute('role', 'img');
    this.area.setAttribute('aria-label', title);
    this.box.append(heading, this.area);
    if (caption) this.box.append(Object.assign(document.createElement('p'), { className: 'caption', textContent: caption }));
    parent.append(this.box);
    this.height = height;
    this.axes = { x, y, twinAxis, log };
    this.build([]);
    new ResizeObserver(() => this.plot.setSize(this.size())).observe(this.area);
  }

  size() {
    return { width: Math.max(220, this.area.clientWidth), height: this.height };
  }

  // series: [{ label, stroke, dash?, scale? }]
  build(series) {
    this.plot?.destroy();
    this.data = [[], ...series.map(() => [])];
    this.box.dataset.points = '0';
    const { x, y, twinAxis, log } = this.axes;
    const scales = { x: { time: false }, ...(log ? { y: { distr: 3 } } : {}) };
    // Epochs, trials and iterations are whole numbers: no 1.25 ticks.
    const axes = [{ label: x, size: 36, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] }, { label: y, size: 60, scale: 'y' }];
    if (twinAxis) axes.push({ label: twinAxis, side: 1, scale: 'twin', size: 60, grid: { show: false } });
    this.plot = new uPlot({
      ...this.size(),
      scales,
      axes,
      legend: { live: false },
      series: [{ label: x }, ...series.map((s) => ({ label: s.label, stroke: s.stroke, dash: s.dash, scale: s.scale ?? 'y', width: 2, spanGaps: false, points: { show: true, size: 4 } }))],
    }, this.data, this.area);
  }

  // Appends one x with a value per series (null where a series has none).
  add(x, row) {
    this.data[0].push(x);
    row.forEach((value, k) => this.data[k + 1].push(value ?? null));
    this.box.dataset.points = String(this.data[0].length);
    this.plot.setData(this.data);
  }
}

export function mountCharts(section, app, headline) {
  const container = section.querySelector('#charts');
  const charts = new Map(EPOCH_CHARTS.map((spec) => [spec.id, new Chart(spec.headline ? headline : container, { ...spec, x: 'epoch (all layers)', height: spec.headline ? 150 : 170 })]));
  const accuracy = new Chart(headline, {
    id: 'accuracy', title: 'Test accuracy of each run', x: 'run', y: 'accuracy %', height: 150,
    caption: 'The share of held-out digits the supervised layers classify right, one point per finished run: change a setting, run again, compare.',
  });
  accuracy.box.hidden = true;
  const accuracyRuns = [];
  const trials = new Chart(container, { id: 'trials', title: 'Initialisation trials: reconstruction error of each', x: 'trial', y: 'error' });
  const supervised = new Chart(container, { id: 'supervised', title: 'Supervised criterion per iteration', x: 'iteration', y: 'criterion' });
  let layers = 0;
  let epochCount = 0;
  let trialRows = [];
  let supervisedStages = [];

  function layerSeries(spec) {
    const series = [];
    for (let k = 0; k < layers; k += 1) {
      series.push({ label: `layer ${k + 1}`, stroke: colour(k) });
      if (spec.twin) series.push({ label: `layer ${k + 1} ${spec.twinAxis ?? 'held-out'}`, stroke: colour(k), dash: [6, 4], scale: spec.twinAxis ? 'twin' : 'y' });
    }
    return series;
  }

  app.on('plan', ({ steps }) => {
    section.querySelector('#charts-empty').hidden = true;
    layers = steps.filter((s) => s.kind === 'rbm').length;
    epochCount = 0;
    trialRows = [];
    supervisedStages = steps.filter((s) => s.kind !== 'rbm').map((s) => s.kind);
    for (const spec of EPOCH_CHARTS) charts.get(spec.id).build(layerSeries(spec));
    trials.build(Array.from({ length: layers }, (_, k) => ({ label: `layer ${k + 1}`, stroke: colour(k) })));
    supervised.build(supervisedStages.map((kind, k) => ({ label: kind === 'fine_tune' ? 'fine-tuning' : 'supervised stage', stroke: colour(k) })));
    supervised.box.hidden = !supervisedStages.length;
  });

  app.on('epoch', (event) => {
    epochCount += 1;
    for (const spec of EPOCH_CHARTS) {
      const row = [];
      for (let k = 0; k < layers; k += 1) {
        row.push(k === event.layer ? spec.value(event) : null);
        if (spec.twin) row.push(k === event.layer ? spec.twin(event) : null);
      }
      charts.get(spec.id).add(epochCount, row);
    }
  });

  // Trial scores arrive per layer; the chart is rebuilt with every layer's trials so far.
  app.on('layer_started', ({ layer, trial_errors }) => {
    trialRows[layer] = trial_errors ?? [];
    const length = Math.max(0, ...trialRows.map((r) => r?.length ?? 0));
    trials.build(Array.from({ length: layers }, (_, k) => ({ label: `layer ${k + 1}`, stroke: colour(k) })));
    for (let t = 0; t < length; t += 1) trials.add(t + 1, Array.from({ length: layers }, (_, k) => trialRows[k]?.[t] ?? null));
  });

  let lastIteration = 0;
  app.on('supervised_progress', ({ stage, iteration, criterion }) => {
    const index = Math.max(0, supervisedStages.indexOf(stage === 'fine_tune' ? 'fine_tune' : 'supervised'));
    const x = iteration + (index > 0 ? lastIteration : 0);
    if (index === 0) lastIteration = iteration;
    supervised.add(x, supervisedStages.map((_, k) => (k === index ? criterion : null)));
  });

  // One point per run with supervised results (results.js reports them).
  let runNumber = 0;
  app.on('plan', () => { runNumber += 1; });
  app.on('accuracy', ({ accuracy: value, run }) => {
    if (value === null || value === undefined) return;
    const x = run ?? runNumber;
    if (accuracyRuns.length && accuracyRuns[accuracyRuns.length - 1][0] === x) return;
    accuracyRuns.push([x, 100 * value]);
    accuracy.box.hidden = false;
    accuracy.build([{ label: 'test accuracy', stroke: colour(2) }]);
    for (const [run, percent] of accuracyRuns) accuracy.add(run, [percent]);
    accuracy.box.dataset.latest = (100 * value).toFixed(2);
    accuracy.heading.textContent = `Test accuracy of each run · last ${(100 * value).toFixed(2)}%`;
  });

  app.on('reset', () => {
    for (const chart of [...charts.values(), trials, supervised]) chart.build([]);
  });
}

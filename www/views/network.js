// The network drawing, like TensorFlow Playground's: the layers as columns left to right
// (pixels, the RBM stack, the supervised layers and outputs) joined by their weights. It
// follows the run (the layer in training pulses, trained layers get a ✓), opens a layer's
// settings when clicked, and adds or removes the top RBM layer.
//
// Consumes: `architecture` (and `app.architecture` at mount), `plan`, `layer_started`,
// `epoch`, `batch`, `layer_finished`, `supervised_progress`, `finished`, `reset`, `model`
// (a null summary: the model is gone), `model_loaded`, `state`; for the sparse autoencoder
// (architecture.family 'autoencoder': inputs → hidden → reconstruction) `ae_started`,
// `ae_iteration` and `ae_model`; for sparse coding (architecture.family 'sparse_coding': a
// patch's pixels → the basis) `sc_started`, `sc_step` and `sc_model`.
// Emits: `open_layer { kind: 'inputs'|'rbm'|'supervised'|'outputs', index }` and
// `edit_layers { rbm: number[] }`.
import { el } from './canvas.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
// Larger layers draw 3 units, "⋮", 3 units.
const MAX_UNITS = 8;
const MAX_RBM_LAYERS = 8;
// The drawing's height when CSS gives none; the page may set another (shorter on phones).
const DEFAULT_HEIGHT = 250;
const UNITS_TOP = 14;
// Below the units: two label lines and the progress line.
const LABELS_HEIGHT = 66;
const LINE_HEIGHT = 13;
// The labels' font as network.css sets it: decides whether a label fits its column on one
// line, on two, or only as its size.
const LABEL_FONT = '11px system-ui, sans-serif';

function svgEl(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (key === 'dataset') Object.assign(node.dataset, value);
    else node.setAttribute(key, String(value));
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

const known = (n) => Number.isInteger(n) && n > 0;

// The drawn layers of an architecture, left to right, each with its labels: `main` and
// `detail` (one line when they fit, else two), `short` (only the size, for narrow columns)
// and `description` (the accessible name and tooltip).
export function layersOf(architecture) {
  const layers = [];
  const { inputs, imageShape, rbm = [], supervised, supervisedHidden = [], outputs, outputKind } = architecture;
  const shape = Array.isArray(imageShape) && imageShape.length === 2 ? `(${imageShape[0]}×${imageShape[1]})` : '';
  const patch = architecture.family === 'sparse_coding' && architecture.patch ? ' of a patch' : '';
  const inputMain = known(inputs) ? `${inputs} ${shape ? 'pixels' : 'inputs'}` : 'inputs';
  layers.push({
    kind: 'inputs', index: 0, size: known(inputs) ? inputs : null,
    main: inputMain, detail: known(inputs) ? shape : '(no data yet)', short: known(inputs) ? String(inputs) : '?',
    description: `Input layer: ${known(inputs) ? `${inputMain}${shape ? ` ${shape}` : ''}${patch}` : 'no data loaded yet'}`,
  });
  if (architecture.family === 'sparse_coding') {
    const { bases } = architecture;
    layers.push({
      kind: 'sc_bases', index: 0, size: bases, link: 'basis', main: `bases · ${bases}`, detail: '(sparse codes)', short: String(bases),
      description: `The basis: ${bases} basis vectors; each input is rebuilt as their sum weighted by its codes, most of them zero`,
    });
    return layers;
  }
  if (architecture.family === 'autoencoder') {
    const { hidden } = architecture;
    const outputs = known(inputs) ? `${inputs} outputs` : 'outputs';
    layers.push({
      kind: 'ae_hidden', index: 0, size: hidden, link: 'encoder', main: `hidden · ${hidden}`, detail: '(sigmoid)', short: String(hidden),
      description: `Hidden layer: ${hidden} sigmoid units, the code (encoder weights W1)`,
    }, {
      kind: 'ae_output', index: 0, size: known(inputs) ? inputs : null, link: 'decoder', main: outputs, detail: '(x̂)', short: known(inputs) ? String(inputs) : '?',
      description: `Output layer: ${outputs}, the reconstruction x̂ of the input (decoder weights W2)`,
    });
    return layers;
  }
  rbm.forEach((size, k) => layers.push({
    kind: 'rbm', index: k, size, main: `RBM ${k + 1} · ${size}`, detail: '', short: String(size),
    description: `RBM layer ${k + 1}: ${size} hidden units`,
  }));
  if (supervised) {
    supervisedHidden.forEach((size, k) => layers.push({
      kind: 'supervised', index: k, size, main: `logistic · ${size}`, detail: '', short: String(size),
      description: `Supervised hidden layer ${k + 1}: ${size} logistic units`,
    }));
    const linear = outputKind === 'linear';
    const what = known(outputs) ? `${outputs} ${linear ? 'outputs' : 'classes'}` : 'outputs';
    const detail = linear ? '(linear)' : '(softmax)';
    layers.push({
      kind: 'outputs', index: 0, size: known(outputs) ? outputs : null, main: what, detail, short: known(outputs) ? String(outputs) : '?',
      description: `Output layer: ${what} ${detail}`,
    });
  }
  return layers;
}

// The unit slots of a column: 'unit' or 'more' (the "⋮").
function slotsOf(size) {
  if (size === null) return ['unit', 'unit', 'unit'];
  if (size <= MAX_UNITS) return Array(size).fill('unit');
  return ['unit', 'unit', 'unit', 'more', 'unit', 'unit', 'unit'];
}

let measure = null;
function textWidth(text) {
  measure ??= document.createElement('canvas').getContext('2d');
  measure.font = LABEL_FONT;
  return measure.measureText(text).width;
}

// Label lines that fit a column `width` wide: the label on one line, else on two (the detail,
// or what follows " · " or the size, below), else only the size.
function labelLines(layer, width) {
  const [name, size] = layer.main.split(' · ');
  const space = layer.main.indexOf(' ');
  const candidates = [
    [layer.detail ? `${layer.main} ${layer.detail}` : layer.main],
    layer.detail ? [layer.main, layer.detail] : null,
    size ? [name, size] : space > 0 ? [layer.main.slice(0, space), layer.main.slice(space + 1)] : null,
    [layer.short],
  ];
  return candidates.find((lines) => lines?.every((line) => textWidth(line) <= width)) ?? [layer.short];
}

export function mountNetwork(element, app) {
  if (!element) return null;
  const svg = svgEl('svg', { class: 'network-svg', role: 'group', 'aria-label': 'The network: its layers, left to right', preserveAspectRatio: 'xMidYMid meet' });
  const addButton = el('button', { type: 'button', id: 'network-add-layer', className: 'network-edit-button', title: `Add an RBM layer on top, as large as the current top layer (at most ${MAX_RBM_LAYERS} layers).` }, '+ layer');
  const removeButton = el('button', { type: 'button', id: 'network-remove-layer', className: 'network-edit-button', title: 'Remove the top RBM layer (one layer always stays).' }, '− layer');
  const supervisedKey = el('span', { className: 'network-key-item', dataset: { kind: 'supervised' } },
    el('span', { className: 'network-key supervised', 'aria-hidden': 'true' }, '- -'), ' supervised weights');
  const legend = el('p', { className: 'network-legend' },
    el('span', { className: 'network-key-item', dataset: { kind: 'rbm' } },
      el('span', { className: 'network-key rbm', 'aria-hidden': 'true' }, '—'), ' RBM weights (undirected, trained greedily)'),
    ' ', supervisedKey,
    el('span', { className: 'network-key-item', dataset: { kind: 'encoder', family: 'autoencoder' } },
      el('span', { className: 'network-key encoder', 'aria-hidden': 'true' }, '—'), ' encoder W1'),
    ' ', el('span', { className: 'network-key-item', dataset: { kind: 'decoder', family: 'autoencoder' } },
      el('span', { className: 'network-key decoder', 'aria-hidden': 'true' }, '—'), ' decoder W2 (trained together by L-BFGS)'),
    el('span', { className: 'network-key-item', dataset: { kind: 'basis', family: 'sparse_coding' } },
      el('span', { className: 'network-key basis', 'aria-hidden': 'true' }, '—'), ' basis B (input ≈ B · codes)'));
  element.replaceChildren(svg, el('div', { className: 'network-bar' }, legend,
    el('div', { className: 'network-edit', role: 'group', 'aria-label': 'RBM layers' }, removeButton, addButton)));

  let architecture = app.architecture ?? null;
  let drawn = { width: 0, height: 0 };
  // The run as the drawing shows it: each layer's state and progress text by `kind:index`;
  // the stage ('rbm' | 'supervised' | 'fine_tune' | ''); the plan's steps.
  const run = { states: new Map(), progress: new Map(), stage: '', steps: [] };
  // The drawn layer groups and the groups of links into them, by `kind:index`.
  let groups = new Map();
  let links = new Map();
  const key = (kind, index) => `${kind}:${index}`;

  function draw() {
    // Drawn in CSS pixels so the labels keep their size whatever the page's layout.
    const width = Math.max(280, Math.round(element.clientWidth || 600));
    const height = Math.max(150, Math.round(svg.getBoundingClientRect().height || DEFAULT_HEIGHT));
    drawn = { width, height };
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    const unitsBottom = height - LABELS_HEIGHT;
    const labelY = unitsBottom + 20;
    groups = new Map();
    links = new Map();
    if (!architecture) {
      svg.dataset.layers = '';
      svg.replaceChildren(svgEl('text', { class: 'network-empty', x: width / 2, y: height / 2, 'text-anchor': 'middle' }, 'Reading the settings…'));
      showButtons();
      return;
    }
    const layers = layersOf(architecture);
    svg.dataset.layers = layers.map((layer) => layer.size ?? '?').join(',');
    const column = width / layers.length;
    const spacing = Math.min(24, (unitsBottom - UNITS_TOP) / MAX_UNITS);
    const positions = layers.map((layer, position) => {
      const slots = slotsOf(layer.size);
      const top = (UNITS_TOP + unitsBottom) / 2 - (spacing * (slots.length - 1)) / 2;
      const x = column * (position + 0.5);
      return { layer, x, slots: slots.map((kind, k) => ({ kind, y: top + k * spacing })) };
    });
    const radius = Math.max(3, Math.min(8, column * 0.16, spacing * 0.38));

    const linkLayer = svgEl('g', { class: 'links-all' });
    for (let k = 1; k < positions.length; k += 1) {
      const from = positions[k - 1];
      const to = positions[k];
      const kind = to.layer.link ?? (to.layer.kind === 'rbm' ? 'rbm' : 'supervised');
      const group = svgEl('g', { class: `links ${kind}`, dataset: { kind, to: key(to.layer.kind, to.layer.index) } });
      for (const a of from.slots) {
        if (a.kind !== 'unit') continue;
        for (const b of to.slots) {
          if (b.kind === 'unit') group.append(svgEl('line', { x1: from.x, y1: a.y, x2: to.x, y2: b.y }));
        }
      }
      linkLayer.append(group);
      links.set(key(to.layer.kind, to.layer.index), group);
    }

    const layerGroups = positions.map(({ layer, x, slots }) => {
      const lines = labelLines(layer, column - 6);
      const progressY = labelY + lines.length * LINE_HEIGHT + 4;
      const group = svgEl('g', { class: 'layer', role: 'button', tabindex: 0, 'aria-label': `${layer.description}. Open its settings.`, dataset: { kind: layer.kind, index: layer.index, state: 'pending' } },
        svgEl('title', {}, `${layer.description}. Click for its settings.`),
        svgEl('rect', { class: 'hit', x: x - column / 2 + 2, y: 2, width: column - 4, height: height - 4, rx: 6 }),
        ...slots.map((slot) => (slot.kind === 'more'
          ? svgEl('text', { class: 'more', x, y: slot.y + 4, 'text-anchor': 'middle' }, '⋮')
          : layer.kind === 'inputs'
            ? svgEl('rect', { class: 'unit', x: x - radius, y: slot.y - radius, width: 2 * radius, height: 2 * radius, rx: 1.5 })
            : svgEl('circle', { class: 'unit', cx: x, cy: slot.y, r: radius }))),
        svgEl('text', { class: 'label', x, y: labelY, 'text-anchor': 'middle' },
          ...lines.map((line, k) => svgEl('tspan', { x, dy: k ? LINE_HEIGHT : 0 }, line))),
        svgEl('text', { class: 'progress', x, y: progressY, 'text-anchor': 'middle' }));
      const open = () => app.emit('open_layer', { kind: layer.kind, index: layer.index });
      group.addEventListener('click', open);
      group.addEventListener('keydown', (event) => {
        if (event.key !== 'Enter' && event.key !== ' ') return;
        event.preventDefault();
        open();
      });
      group.description = layer.description;
      groups.set(key(layer.kind, layer.index), group);
      return group;
    });
    // Keep keyboard focus on the same layer across a redraw.
    const focused = svg.contains(document.activeElement) ? document.activeElement : null;
    const focusedKey = focused?.dataset ? key(focused.dataset.kind, focused.dataset.index) : null;
    svg.replaceChildren(linkLayer, ...layerGroups);
    if (focusedKey && groups.has(focusedKey)) groups.get(focusedKey).focus({ preventScroll: true });
    supervisedKey.hidden = !architecture.supervised;
    showState();
    showButtons();
  }

  function showState() {
    svg.dataset.stage = run.stage;
    for (const [name, group] of groups) {
      const kind = group.dataset.kind;
      let state = run.states.get(name) ?? 'pending';
      if (kind === 'inputs') state = known(architecture?.inputs) ? 'done' : 'pending';
      group.dataset.state = state;
      const progress = group.querySelector('.progress');
      const text = state === 'training' ? (run.progress.get(name) || 'training…') : state === 'done' && kind !== 'inputs' ? '✓' : '';
      if (progress.textContent !== text) progress.textContent = text;
      const status = state === 'training' ? ` (training${run.progress.get(name) ? `: ${run.progress.get(name)}` : ''})` : state === 'done' && kind !== 'inputs' ? ' (trained)' : '';
      group.setAttribute('aria-label', `${group.description}${status}. Open its settings.`);
    }
    for (const [name, group] of links) group.dataset.state = run.states.get(name) ?? 'pending';
  }

  function showButtons() {
    const rbm = architecture?.rbm ?? [];
    addButton.disabled = app.running || !rbm.length || rbm.length >= MAX_RBM_LAYERS;
    removeButton.disabled = app.running || rbm.length <= 1;
  }

  addButton.addEventListener('click', () => {
    const rbm = architecture?.rbm ?? [];
    if (app.running || !rbm.length || rbm.length >= MAX_RBM_LAYERS) return;
    app.emit('edit_layers', { rbm: [...rbm, rbm[rbm.length - 1]] });
  });
  removeButton.addEventListener('click', () => {
    const rbm = architecture?.rbm ?? [];
    if (app.running || rbm.length <= 1) return;
    app.emit('edit_layers', { rbm: rbm.slice(0, -1) });
  });

  // The supervised layers of the current architecture (hidden ones and the outputs).
  const supervisedKeys = () => (architecture?.supervised
    ? [...(architecture.supervisedHidden ?? []).map((_, k) => key('supervised', k)), key('outputs', 0)]
    : []);
  const rbmCount = () => run.steps.filter((step) => step.kind === 'rbm').length || architecture?.rbm?.length || 0;
  function set(name, state, progress = '') {
    run.states.set(name, state);
    if (progress) run.progress.set(name, progress);
    else run.progress.delete(name);
  }
  function clearRun() {
    run.states.clear();
    run.progress.clear();
    run.stage = '';
  }
  function update(change) {
    return (payload) => {
      change(payload ?? {});
      showState();
    };
  }

  app.on('architecture', (value) => {
    architecture = value;
    draw();
  });
  app.on('plan', update(({ steps }) => {
    clearRun();
    run.steps = Array.isArray(steps) ? steps : [];
  }));
  app.on('layer_started', update(({ layer }) => {
    for (let k = 0; k < layer; k += 1) set(key('rbm', k), 'done');
    set(key('rbm', layer), 'training', 'starting…');
    run.stage = 'rbm';
  }));
  app.on('epoch', update(({ layer, report }) => {
    set(key('rbm', layer), 'training', `epoch ${report?.epoch ?? '?'}`);
    run.stage = 'rbm';
  }));
  app.on('batch', update(({ layer, batch, batches }) => {
    set(key('rbm', layer), 'training', `batch ${batch}/${batches}`);
  }));
  app.on('layer_finished', update(({ layer }) => set(key('rbm', layer), 'done')));
  app.on('supervised_progress', update(({ stage, iteration }) => {
    for (let k = 0; k < rbmCount(); k += 1) set(key('rbm', k), 'done');
    const names = supervisedKeys();
    for (const name of names) set(name, 'training');
    const fineTuning = stage === 'fine_tune';
    if (names.length) set(names[names.length - 1], 'training', `${fineTuning ? 'fine-tuning' : 'iteration'} ${iteration}`);
    run.stage = fineTuning ? 'fine_tune' : 'supervised';
  }));
  app.on('finished', update(({ stopped, family }) => {
    run.stage = '';
    if (family === 'autoencoder') {
      for (const name of [key('ae_hidden', 0), key('ae_output', 0)]) set(name, stopped ? 'pending' : 'done');
      return;
    }
    if (family === 'sparse_coding') {
      set(key('sc_bases', 0), stopped ? 'pending' : 'done');
      return;
    }
    if (stopped) {
      // What was in training did not finish (a cancelled RBM layer reports layer_finished).
      for (const [name, state] of run.states) if (state === 'training') set(name, 'pending');
      return;
    }
    for (let k = 0; k < rbmCount(); k += 1) set(key('rbm', k), 'done');
    if (!run.steps.length || run.steps.some((step) => step.kind !== 'rbm')) for (const name of supervisedKeys()) set(name, 'done');
  }));
  app.on('reset', update(clearRun));
  app.on('model', update(({ summary }) => {
    if (!summary) clearRun();
  }));
  app.on('model_loaded', update(({ summary }) => {
    clearRun();
    run.steps = [];
    (summary?.layers ?? []).forEach((_, k) => set(key('rbm', k), 'done'));
    if (summary?.supervised) for (const name of supervisedKeys()) set(name, 'done');
  }));
  app.on('state', showButtons);
  // The autoencoder trains both weight layers at once.
  const autoencoderProgress = (text) => {
    for (const name of [key('ae_hidden', 0), key('ae_output', 0)]) set(name, 'training', text);
    run.stage = 'autoencoder';
  };
  app.on('ae_started', update(() => autoencoderProgress('iteration 0')));
  app.on('ae_iteration', update(({ iteration }) => autoencoderProgress(`iteration ${iteration}`)));
  app.on('ae_model', update(({ summary }) => {
    if (!summary) clearRun();
  }));
  // Sparse coding learns its basis mini-batch by mini-batch.
  const basisProgress = (text) => {
    set(key('sc_bases', 0), 'training', text);
    run.stage = 'sparse_coding';
  };
  app.on('sc_started', update(() => basisProgress('pass 0')));
  app.on('sc_step', update(({ pass, batch, batches }) => basisProgress(`pass ${pass} · ${batch}/${batches}`)));
  app.on('sc_model', update(({ summary }) => {
    if (!summary) clearRun();
  }));

  // Drawn in CSS pixels: a new width or height redraws.
  if (typeof ResizeObserver === 'function') {
    let pending = false;
    const observer = new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        const width = Math.round(element.clientWidth);
        const height = Math.round(svg.getBoundingClientRect().height);
        if (width && height && (Math.abs(width - drawn.width) >= 1 || Math.abs(height - drawn.height) >= 1)) draw();
      });
    });
    observer.observe(element);
    observer.observe(svg);
  }
  draw();
  return { redraw: draw };
}

// The model panel: presets, the architecture (RBM layers as a list or DEEP's first/last/count
// interpolation, supervised layers and outputs), every parameter of params.js grouped with
// its default and explanation, the backend and the seed. Values that differ from the preset's
// go to the URL hash; loading a hash restores every control.
import { PARAMS, GROUPS, PRESETS, DEFAULT_PRESET, paramByKey, presetValues, parseValue, formatValue, checkValue, pageConfig, parameterCount, rbmLayers, parseSizes } from '../params.js';
import { mountAutoencoderSettings } from './autoencoder.js';
import { mountSparseCodingSettings } from './sparse_coding.js';
import { mountSequenceSettings } from './sequences.js';
import { mountLocalRbmSettings } from './local_rbm.js';

const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key in node && key !== 'list') node[key] = value;
    else node.setAttribute(key, value === true ? '' : value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// Settings outside PARAMS: [key, type, label, tip, extra attributes].
const ARCHITECTURE = {
  layer_mode: { type: 'choice', label: 'RBM layers given as', choices: [['list', 'An explicit list'], ['interp', 'First, last and count (DEEP)']], tip: 'Either list every hidden size, or give the first and last and let the sizes in between follow a straight line.' },
  layers: { type: 'text', label: 'RBM hidden sizes', tip: 'Hidden units of each RBM, bottom up, separated by commas (e.g. 500, 500, 2000).' },
  layer_first: { type: 'int', label: 'First layer', min: 1, max: 65536, tip: 'Hidden units of the bottom RBM.' },
  layer_last: { type: 'int', label: 'Last layer', min: 1, max: 65536, tip: 'Hidden units of the top RBM.' },
  layer_count: { type: 'int', label: 'Number of layers', min: 1, max: 20, tip: 'RBM layers; sizes in between are interpolated linearly.' },
  supervised: { type: 'bool', label: 'Supervised stage', tip: 'Train logistic layers and outputs on top of the RBM features to predict the labels (targets).' },
  sup_hidden: { type: 'text', label: 'Supervised hidden sizes', tip: 'Logistic hidden layers between the RBM features and the outputs, comma separated; empty: none.' },
  seed: { type: 'int', label: 'Seed', min: 0, max: 4294967295, tip: 'The same seed and settings give the same model, so a shared link reproduces a run.' },
  backend: { type: 'choice', label: 'Backend', choices: [['auto', 'Auto'], ['webgpu', 'WebGPU'], ['cpu', 'CPU threads'], ['cpu1', 'CPU single-threaded']], tip: 'Auto: WebGPU on a hardware GPU, else the CPU (a software adapter such as SwiftShader is slower than the CPU). CPU threads uses every thread the page may have.' },
};
const schemaOf = (key) => paramByKey.get(key) ?? ARCHITECTURE[key];

export function mountModel(section, app) {
  const hash = app.hash;
  const form = $('model-form');
  const controls = new Map();
  let preset = PRESETS[hash.raw('preset')] ? hash.raw('preset') : DEFAULT_PRESET;
  let base = presetValues(preset);
  const values = { ...base };
  for (const key of Object.keys(values)) {
    const raw = hash.raw(key);
    if (raw === null) continue;
    const schema = schemaOf(key);
    if (schema.type === 'text') values[key] = raw;
    else {
      const parsed = parseValue(schema, raw);
      if (parsed !== undefined && !checkValue(schema, parsed)) values[key] = parsed;
    }
  }

  function control(key) {
    const schema = schemaOf(key);
    const id = `p-${key}`;
    let input;
    if (schema.type === 'bool') input = el('input', { type: 'checkbox', id, name: key });
    else if (schema.type === 'choice') input = el('select', { id, name: key }, ...schema.choices.map(([v, label]) => new Option(label, v)));
    else if (schema.type === 'text') input = el('input', { type: 'text', id, name: key, inputMode: 'numeric', spellcheck: false });
    else input = el('input', { type: 'number', id, name: key, min: schema.min, max: schema.max, step: schema.type === 'float' ? 'any' : '1', placeholder: schema.type === 'optional-int' ? 'not set' : undefined });
    const defaultText = paramByKey.has(key) ? `Default ${formatValue(schema.default) || 'not set'}. ` : '';
    const error = el('span', { className: 'error inline-error', id: `${id}-error`, role: 'alert', hidden: true });
    const label = el('label', { className: schema.type === 'bool' ? 'setting check' : 'setting', title: `${schema.tip} ${defaultText}`.trim(), dataset: { hideKey: key, key } },
      schema.type === 'bool' ? input : null, el('span', { className: 'name' }, schema.label), schema.type === 'bool' ? null : input, error);
    input.setAttribute('aria-describedby', `${id}-error`);
    input.addEventListener('change', () => onInput(key));
    controls.set(key, { input, error, label, schema });
    return label;
  }

  function readControl(key) {
    const { input, schema } = controls.get(key);
    if (schema.type === 'bool') return input.checked;
    if (schema.type === 'choice') return input.value === '' ? null : input.value;
    if (schema.type === 'text') return input.value.trim();
    if (input.value === '') return schema.type === 'optional-int' ? null : NaN;
    return Number(input.value);
  }

  function writeControl(key, value) {
    const { input, schema } = controls.get(key);
    if (schema.type === 'bool') input.checked = !!value;
    else input.value = value === null || value === undefined ? '' : String(value);
  }

  function validate(key, value) {
    const schema = schemaOf(key);
    if (key === 'layers' || key === 'sup_hidden') {
      const sizes = parseSizes(value);
      // No RBM layers: a plain MLP, the supervised stage alone (as DEEP allows).
      if (key === 'layers' && !sizes.length && !values.supervised) return 'RBM hidden sizes: give at least one layer, or none with the supervised stage on (a plain MLP)';
      if (sizes.some((s) => !Number.isInteger(s) || s < 1 || s > 65536)) return `${schema.label}: whole numbers from 1 to 65536, separated by commas`;
      return '';
    }
    return schema.type === 'text' || schema.type === 'choice' ? '' : checkValue({ ...schema, label: schema.label }, value);
  }

  function showError(key, message) {
    const { error } = controls.get(key);
    error.textContent = message;
    error.hidden = !message;
  }

  function onInput(key) {
    const value = readControl(key);
    const problem = validate(key, value);
    showError(key, problem);
    if (problem) return;
    values[key] = value;
    hash.put(key, formatValue(value) === formatValue(base[key]) ? null : formatValue(value));
    refresh();
    if (key === 'seed') app.emit('seed_changed', { seed: value });
    // Empty RBM sizes are valid only with the supervised stage (a plain MLP): check them again.
    if (key === 'supervised') onInput('layers');
  }

  function applyPreset(name) {
    preset = name;
    base = presetValues(name);
    hash.put('preset', name === DEFAULT_PRESET ? null : name);
    for (const key of Object.keys(base)) {
      if (key === 'seed' || key === 'backend') continue;
      values[key] = base[key];
      hash.put(key, null);
      writeControl(key, values[key]);
      showError(key, '');
    }
    refresh();
  }

  // Layout: the preset and the settings people change first (layers, epochs, learning rate,
  // backend, seed) up front; everything else, group by group, under one Advanced fold.
  const presetSelect = el('select', { id: 'preset', name: 'preset' }, ...Object.entries(PRESETS).map(([name, p]) => el('option', { value: name, title: p.tip }, p.label)));
  presetSelect.value = preset;
  presetSelect.addEventListener('change', () => applyPreset(presetSelect.value));
  form.append(el('div', { className: 'preset-row', dataset: { hideKey: 'presets' } },
    el('label', { className: 'setting', title: 'Sets every parameter below; you can change them afterwards.' }, el('span', { className: 'name' }, 'Preset'), presetSelect),
    el('p', { id: 'preset-tip', className: 'tip' })));

  const UP_FRONT = ['layers', 'layer_first', 'layer_last', 'layer_count', 'epochs', 'learning_rate', 'backend', 'seed'];
  form.append(el('div', { className: 'grid up-front', id: 'up-front' }, ...UP_FRONT.map(control)),
    el('p', { className: 'arch-line tip' }, el('output', { id: 'visible-size' }, '?'), ' inputs · ', el('output', { id: 'param-count' }, '?'), ' parameters · ',
      el('span', { id: 'layer-sizes', 'aria-live': 'polite' })),
    el('p', { id: 'backend-status', className: 'tip', 'aria-live': 'polite' }));

  const architecture = el('fieldset', { className: 'group', id: 'architecture', dataset: { hideKey: 'architecture' } }, el('legend', {}, 'Architecture'),
    el('div', { className: 'grid' }, control('layer_mode'), control('supervised'), control('sup_hidden'), control('sup_output')));
  const groups = GROUPS.map((group) => {
    const params = PARAMS.filter((p) => p.group === group.id && !controls.has(p.key));
    return el('fieldset', { className: 'group', id: `group-${group.id}`, dataset: { hideKey: `group_${group.id.replace(/-/g, '_')}` } }, el('legend', {}, group.label),
      el('div', { className: 'grid' }, ...params.map((p) => control(p.key))));
  });
  const advanced = el('details', { className: 'advanced', id: 'advanced-settings' },
    el('summary', { title: 'Every other setting of the RBM layers, the supervised stage and fine-tuning; each has its default and an explanation in its tooltip.' }, `Advanced settings (${controls.size - UP_FRONT.length})`),
    architecture, ...groups);
  form.append(advanced);

  for (const key of controls.keys()) writeControl(key, values[key]);
  // The model family up front; the autoencoder's settings replace the DBN's when chosen.
  const autoencoder = mountAutoencoderSettings(form, app, { onChange: () => refresh() });
  const sparseCoding = mountSparseCodingSettings(form, app, { onChange: () => refresh() });
  const sequences = mountSequenceSettings(form, app, { onChange: () => refresh() });
  const localRbm = mountLocalRbmSettings(form, app, { onChange: () => refresh() });
  // The settings of the family shown when it is not the DBN.
  const familyPanel = () => [autoencoder, sparseCoding, sequences, localRbm].find((panel) => panel.active()) ?? null;

  function refresh() {
    autoencoder.update();
    sparseCoding.update();
    sequences.update();
    localRbm.update();
    $('preset-tip').textContent = PRESETS[preset].tip;
    const interp = values.layer_mode === 'interp';
    controls.get('layers').label.hidden = interp;
    for (const key of ['layer_first', 'layer_last', 'layer_count']) controls.get(key).label.hidden = !interp;
    for (const key of ['sup_hidden', 'sup_output']) controls.get(key).label.hidden = !values.supervised;
    for (const id of ['group-supervised', 'group-fine-tune']) $(id).hidden = !values.supervised;
    const nInputs = app.data?.n_inputs;
    const nOutputs = app.data?.target_names?.length || app.data?.class_counts?.length || 0;
    $('visible-size').textContent = nInputs ?? '?';
    $('layer-sizes').textContent = `${[nInputs ?? '?', ...rbmLayers(values)].join(' → ')}${values.supervised ? ` → supervised ${[...parseSizes(values.sup_hidden), nOutputs || 'outputs'].join(' → ')}` : ''}`;
    $('param-count').textContent = nInputs ? parameterCount(nInputs, values, nOutputs).toLocaleString() : '?';
    showBackendChoice();
    app.architecture = familyPanel() ? familyPanel().architecture() : {
      inputs: nInputs ?? null, imageShape: app.data?.image_shape ?? null, rbm: rbmLayers(values), supervised: !!values.supervised,
      supervisedHidden: parseSizes(values.sup_hidden), outputs: nOutputs || null, outputKind: values.sup_output,
    };
    app.emit('architecture', app.architecture);
  }

  function showBackendChoice() {
    const info = app.runtime;
    if (!info) return;
    const choice = values.backend;
    let text = '';
    if (choice === 'webgpu' && !info.webgpu.available) text = `WebGPU is not available here (${info.webgpu.reason}); training will run on the CPU.`;
    else if (choice === 'webgpu' || (choice === 'auto' && info.webgpu.available)) text = `WebGPU adapter: ${info.webgpu.adapter.name || info.webgpu.adapter.driver || 'unnamed'}${choice === 'auto' && /swiftshader|llvmpipe|lavapipe|warp/i.test(info.webgpu.adapter.name || '') || info.webgpu.adapter.device_type === 'Cpu' ? ' (software: Auto uses the CPU instead)' : ''}.`;
    else text = `CPU: ${info.runtime.threaded_build ? `${choice === 'cpu1' ? 1 : info.runtime.threads} thread(s)` : 'single-threaded build'}.`;
    $('backend-status').textContent = text;
  }

  app.on('data', refresh);
  app.on('ready', refresh);
  app.on('backend_shown', ({ text }) => { $('backend-status').textContent = `Now: ${text}.`; });

  function applySettings(newValues) {
    for (const [key, value] of Object.entries(newValues)) {
      if (!controls.has(key)) continue;
      values[key] = value;
      writeControl(key, value);
      showError(key, '');
      hash.put(key, formatValue(value) === formatValue(base[key]) ? null : formatValue(value));
    }
    refresh();
    if ('seed' in newValues) app.emit('seed_changed', { seed: values.seed });
  }

  // Scrolls a settings block into view and focuses one of its controls.
  function reveal(block, input) {
    block.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    input?.focus({ preventScroll: true });
    flash(block);
  }
  function flash(block) {
    block.classList.remove('flash');
    void block.offsetWidth;
    block.classList.add('flash');
  }
  // Selects the `index`-th comma-separated item of a text input.
  function selectListItem(input, index) {
    const parts = input.value.split(',');
    if (index >= parts.length) return;
    const start = parts.slice(0, index).reduce((n, part) => n + part.length + 1, 0);
    const item = parts[index];
    const lead = item.length - item.trimStart().length;
    input.setSelectionRange(start + lead, start + item.trimEnd().length);
  }

  // The network drawing's layer buttons: a layer opens the settings that shape it.
  app.on('open_layer', ({ kind, index }) => {
    if (autoencoder.openLayer(kind) || sparseCoding.openLayer(kind) || sequences.openLayer(kind) || localRbm.openLayer(kind, index)) return;
    if (kind === 'inputs') {
      reveal($('data-panel'), $('data-panel').querySelector('input:checked, input, select'));
      return;
    }
    if (kind === 'rbm') {
      const sizes = controls.get(values.layer_mode === 'interp' ? 'layer_first' : 'layers');
      reveal(sizes.label, sizes.input);
      // The layer's own size, selected in the list, so typing replaces it.
      if (values.layer_mode !== 'interp') selectListItem(sizes.input, index);
      advanced.open = true;
      flash($('group-rbm-schedule'));
      return;
    }
    advanced.open = true;
    if (!values.supervised) {
      controls.get('supervised').input.checked = true;
      onInput('supervised');
    }
    const target = kind === 'outputs' ? controls.get('sup_output') : controls.get('sup_hidden');
    reveal($('architecture'), target.input);
    flash($('group-supervised'));
  });
  // The drawing's "+ layer" / "− layer".
  app.on('edit_layers', ({ rbm }) => {
    if (app.running || familyPanel() || !Array.isArray(rbm) || !rbm.length) return;
    applySettings({ layer_mode: 'list', layers: rbm.join(',') });
  });
  refresh();

  const fieldKey = (field) => {
    if (!field) return null;
    if (field === 'layers' || field === 'n_hidden') return values.layer_mode === 'interp' ? 'layer_first' : 'layers';
    if (field === 'supervised.hidden') return 'sup_hidden';
    if (field.startsWith('supervised.')) return `sup_${field.slice(11)}`;
    if (field === 'seed') return 'seed';
    return controls.has(field) ? field : null;
  };

  return {
    values: () => ({ ...values }),
    family: () => autoencoder.family(),
    backend: () => values.backend,
    // The PageConfig, or throws naming the first invalid control (shown next to it).
    pageConfig() {
      // The other families share only the seed with the DBN's settings.
      for (const key of familyPanel() ? ['seed'] : controls.keys()) {
        const problem = validate(key, readControl(key));
        showError(key, problem);
        if (problem) {
          controls.get(key).input.focus();
          throw Object.assign(new Error(problem), { field: key });
        }
      }
      return familyPanel() ? familyPanel().pageConfig(values.seed) : pageConfig(values);
    },
    // Puts a worker error next to the control of the field it names; false if none matches.
    showFieldError(field, message) {
      if (familyPanel() && field !== 'seed') return familyPanel().showFieldError(field, message);
      const key = fieldKey(field);
      if (!key) return false;
      showError(key, message);
      controls.get(key).label.closest('details')?.setAttribute('open', '');
      return true;
    },
    clearErrors() {
      autoencoder.clearErrors();
      sparseCoding.clearErrors();
      sequences.clearErrors();
      localRbm.clearErrors();
      for (const key of controls.keys()) showError(key, '');
    },
    // Sets the controls (and the hash) to `newValues`, e.g. a restored model's settings.
    applySettings,
  };
}

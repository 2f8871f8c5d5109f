// The page settings a saved model was trained with (model.json's `config` and
// `supervised.config`, read through params.js's paths), and where the page's settings differ
// from them: a restored model must not sit beside controls that describe another model.
import { PARAMS, ARCHITECTURE_DEFAULTS, formatValue, parseSizes, rbmLayers } from './params.js';

// The hash keys that shape a model (the backend and the views' keys do not).
export const MODEL_KEYS = new Set(['preset', ...PARAMS.map((p) => p.key), ...Object.keys(ARCHITECTURE_DEFAULTS).filter((key) => key !== 'backend')]);

const LABELS = { layers: 'RBM hidden sizes', supervised: 'Supervised stage', sup_hidden: 'Supervised hidden sizes', seed: 'Seed' };
const label = (key) => LABELS[key] ?? PARAMS.find((p) => p.key === key)?.label ?? key;
const sizesText = (sizes) => sizes.join(', ');

// Page values for the settings the model records (older files may lack some: left out).
export function savedModelValues(saved) {
  const stack = saved?.config ?? {};
  const supervised = saved?.supervised?.config ?? null;
  const values = { layer_mode: 'list', layers: sizesText(stack.layers ?? []), supervised: !!saved?.supervised };
  if (stack.rbm?.seed !== undefined) values.seed = stack.rbm.seed;
  for (const p of PARAMS) {
    const isSupervised = p.path[0] === 'supervised';
    if (isSupervised && !supervised) continue;
    const value = isSupervised ? p.path.slice(1).reduce((node, part) => node?.[part], supervised) : p.path.reduce((node, part) => node?.[part], { stack });
    if (value !== undefined) values[p.key] = value;
  }
  if (supervised?.hidden) values.sup_hidden = sizesText(supervised.hidden);
  return values;
}

const shown = (value) => (typeof value === 'boolean' ? (value ? 'on' : 'off') : formatValue(value) || 'not set');

function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
  return formatValue(a) === formatValue(b);
}

// Where the page's `values` differ from the model's: [{ key, label, page, model }] as text.
export function settingDifferences(values, modelValues) {
  const differences = [];
  const supervisedKeys = new Set(['sup_hidden', ...PARAMS.filter((p) => p.path[0] === 'supervised').map((p) => p.key)]);
  for (const [key, model] of Object.entries(modelValues)) {
    if (key === 'layer_mode') continue;
    // Supervised settings matter only where both sides have a supervised stage.
    if (supervisedKeys.has(key) && !(values.supervised && modelValues.supervised)) continue;
    let page = values[key];
    if (key === 'layers') page = sizesText(rbmLayers(values));
    if (key === 'sup_hidden') page = sizesText(parseSizes(page));
    if (!same(page, model)) differences.push({ key, label: label(key), page: shown(page), model: shown(model) });
  }
  return differences;
}

// "RBM hidden sizes: 24 here, 32, 16 in the saved model; Seed: …" (the first `max`).
export function describeDifferences(differences, max = 3) {
  const shown = differences.slice(0, max).map((d) => `${d.label}: ${d.page} here, ${d.model} in the saved model`);
  const more = differences.length > max ? `; and ${differences.length - max} more` : '';
  return `${shown.join('; ')}${more}`;
}

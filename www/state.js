// The whole configuration lives in the URL hash (as in TensorFlow Playground), so a link
// reproduces a run. `<panel>_hide=1` hides a panel for embedding in teaching pages.

export const defaults = { hidden: 100, epochs: 5, lr: 0.1, batch: 100, seed: 1, backend: 'auto' };

// Settings that are words, not numbers: the values each may take.
export const choices = { backend: ['auto', 'webgpu', 'cpu'] };

export function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const settings = { ...defaults };
  for (const key of Object.keys(defaults)) {
    if (choices[key]) {
      if (choices[key].includes(params.get(key))) settings[key] = params.get(key);
      continue;
    }
    const value = Number(params.get(key));
    if (params.has(key) && Number.isFinite(value)) settings[key] = value;
  }
  const hidden = [...params.keys()].filter((k) => k.endsWith('_hide') && params.get(k) !== '0').map((k) => k.slice(0, -5));
  return { settings, hidden };
}

export function writeHash(settings, hidden) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(settings)) params.set(key, String(value));
  for (const key of hidden) params.set(`${key}_hide`, '1');
  history.replaceState(null, '', `#${params}`);
}

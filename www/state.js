// The whole configuration lives in the URL hash (as in TensorFlow Playground), so a link
// reproduces a run. Only values that differ from their defaults are written. Keys nobody has
// registered yet (a view module still loading, test hooks) are kept as they came.
// `NAME_hide=1` hides every element with data-hide-key="NAME", for embedding.

function typed(defaultValue, text) {
  if (typeof defaultValue === 'number') {
    const n = Number(text);
    return text !== '' && Number.isFinite(n) ? n : defaultValue;
  }
  if (typeof defaultValue === 'boolean') return text === '1' || text === 'true';
  return text;
}

function text(value) {
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

export function createHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const defaults = new Map();

  const write = () => {
    const hash = params.toString();
    history.replaceState(null, '', hash ? `#${hash}` : location.pathname + location.search);
  };

  const hidden = [...params.keys()].filter((k) => k.endsWith('_hide') && params.get(k) !== '0').map((k) => k.slice(0, -5));
  // A style rule, not attributes, so elements mounted later (views) hide too.
  if (hidden.length) {
    const style = document.createElement('style');
    style.id = 'hide-flags';
    style.textContent = hidden.map((key) => `[data-hide-key="${CSS.escape(key)}"]`).join(',\n') + ' { display: none !important; }';
    document.head.append(style);
  }

  return {
    hidden,
    isHidden: (key) => hidden.includes(key),
    // Typed access for modules that own a key: the value keeps the default's type.
    register(key, defaultValue) {
      defaults.set(key, defaultValue);
      return this.get(key);
    },
    get(key) {
      const fallback = defaults.get(key);
      if (!params.has(key)) return fallback;
      return fallback === undefined ? params.get(key) : typed(fallback, params.get(key));
    },
    set(key, value) {
      if (defaults.has(key) && text(value) === text(defaults.get(key))) params.delete(key);
      else params.set(key, text(value));
      write();
    },
    // Raw strings: null removes the key.
    raw(key) {
      return params.has(key) ? params.get(key) : null;
    },
    put(key, value) {
      if (value === null || value === undefined) params.delete(key);
      else params.set(key, value);
      write();
    },
    keys: () => [...params.keys()],
  };
}

// What the view panels share: drawing the worker's RGBA images, building a labelled panel and
// its controls, coalescing refreshes so a slow worker never gets a queue of requests, and
// downloading a file.

// Draws an RGBA image from the worker ({ width, height, data: Uint8ClampedArray }) at its own
// resolution; CSS scales the canvas up (image-rendering: pixelated).
export function drawImage(canvas, image) {
  if (canvas.width !== image.width) canvas.width = image.width;
  if (canvas.height !== image.height) canvas.height = image.height;
  canvas.getContext('2d').putImageData(new ImageData(image.data, image.width, image.height), 0, 0);
  canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
}

// Empties a canvas drawn by drawImage (the model it showed is gone).
export function clearImage(canvas) {
  canvas.width = 1;
  canvas.height = 1;
  delete canvas.dataset.steps;
}

// Builds a child element: el('p', { id: 'x', className: 'note', title: '…' }, 'text', child).
export function el(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === 'dataset') Object.assign(element.dataset, value);
    else if (key in element && key !== 'list') element[key] = value;
    else element.setAttribute(key, value);
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

// <section class="panel" data-hide-key=KEY> with an <h2> and a visible caption saying what
// the view shows (`caption`, kept in `section.caption` so the view can append it last);
// returns the section.
export function panel(container, { hideKey, title, heading, help, caption }) {
  const headingId = `${hideKey}-heading`;
  const section = el('section', { className: 'panel view-panel', id: `${hideKey}-panel`, 'aria-labelledby': headingId, dataset: { hideKey } },
    el('h2', { id: headingId, title: help }, heading ?? title));
  section.caption = el('p', { className: 'caption', id: `${hideKey}-caption` }, caption ?? help);
  container.append(section);
  return section;
}

// The controls of a picture, folded so the picture itself fits the first screen.
export function options(...controls) {
  return el('details', { className: 'view-options' }, el('summary', { title: 'Settings of this view' }, 'Options'), ...controls);
}

// A labelled control with a tooltip on both the label and the control.
export function field(labelText, control, { title, hideKey } = {}) {
  control.title = title;
  return el('label', { className: 'view-field', title, dataset: hideKey ? { hideKey } : {} }, `${labelText} `, control);
}

// An inline error next to a control; show('') hides it.
export function inlineError(id) {
  const element = el('span', { id, className: 'error inline-error', role: 'alert', hidden: true });
  element.show = (text) => {
    element.textContent = text;
    element.hidden = !text;
  };
  return element;
}

// Wraps an async refresh so that calls during a run mark it dirty and one more run follows:
// the newest state is always drawn, and at most one request is in flight.
export function coalesce(refresh) {
  let running = null;
  let dirty = false;
  const run = async () => {
    if (running) {
      dirty = true;
      return running;
    }
    running = (async () => {
      do {
        dirty = false;
        await refresh();
      } while (dirty);
    })();
    try {
      await running;
    } finally {
      running = null;
    }
  };
  return run;
}

// A number from an <input>, or null when it holds none.
export function readNumber(input) {
  const value = Number(input.value);
  if (input.value.trim() === '' || !Number.isFinite(value)) return null;
  return value;
}

// Saves `data` (text, bytes or a Blob) as the file `name` through a hidden link: what every
// Save model and export button does.
export function download(name, data, type = 'application/octet-stream') {
  const url = URL.createObjectURL(data instanceof Blob ? data : new Blob([data], { type }));
  const link = el('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function errorText(error) {
  return String(error?.message || error);
}

// The run's seed from the page's settings (1 when the settings do not parse right now).
export function settingsSeed(app) {
  try {
    return Number(app.settings()?.stack?.rbm?.seed) || 1;
  } catch {
    return 1;
  }
}

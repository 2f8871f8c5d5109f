// Sharing in one click: "Copy link" copies the page's URL (the hash holds every setting and
// the seed, so the link reproduces the run), and "Embed" opens a builder for an <iframe> that
// shows only the chosen parts of the page (the `NAME_hide=1` flags of state.js).
// The builder's own choices are not written to the hash: they describe another page.

const COPIED_FOR_MS = 2000;
const PREVIEW_DELAY_MS = 400;
const PREVIEW_BOX = { width: 480, height: 360 };
const SIZE_LIMITS = { min: 200, max: 4000 };
// Test hooks of main.js: never part of a link someone else opens.
const TEST_HOOKS = ['simulate_gpu_loss', 'max_fetch_bytes'];
// Per model family: everything below the fold (when all of it is hidden, so is the fold's
// heading) and the charts of the headline panel that have no option of their own (when all
// of them are hidden, so is the panel, and its column can close up).
const FAMILY_PARTS = {
  dbn: { belowFold: ['charts', 'reconstructions', 'histograms', 'dream', 'results', 'storage', 'epoch_log'], headline: [] },
  autoencoder: { belowFold: ['ae_log'], headline: ['chart_ae_cost', 'chart_ae_sparsity'] },
  sparse_coding: { belowFold: ['sc_log'], headline: ['chart_sc_objective', 'chart_sc_codes'] },
  local_rbm: { belowFold: [], headline: ['chart_lr_error'] },
  sequences: { belowFold: [], headline: ['chart_sq_error', 'chart_sq_timing'] },
};

// What an embed can show. `keys`: the hide flags an unchecked option sets; `children`: finer
// options, meaningful only while the parent is shown; `family`: the model family whose page
// has the part (none: both). The builder lists the options of the family the page shows.
const EMBED_OPTIONS = [
  { id: 'header', label: 'Title bar', keys: ['header'], tip: 'The dark bar with the title and the engine status line.' },
  {
    id: 'training', label: 'Training buttons', keys: ['training'], tip: 'The control bar: Start, Pause and the others, with the run progress.',
    children: [
      { id: 'steps', family: 'dbn', label: 'Step buttons', keys: ['step_batch', 'step_epoch'], tip: 'Step batch and Step epoch: train one mini-batch or one epoch at a time.' },
      { id: 'ae_step', family: 'autoencoder', label: 'Step button', keys: ['step_epoch'], tip: 'Step: train one iteration at a time.' },
      { id: 'sc_step', family: 'sparse_coding', label: 'Step button', keys: ['step_epoch'], tip: 'Step: train one mini-batch at a time.' },
      { id: 'lr_step', family: 'local_rbm', label: 'Step button', keys: ['step_epoch'], tip: 'Step: train one epoch at a time.' },
      { id: 'sq_step', family: 'sequences', label: 'Step button', keys: ['step_epoch'], tip: 'Step: train one chunk of steps at a time.' },
      { id: 'cancel_reset', label: 'Cancel and Reset', keys: ['cancel', 'reset'], tip: 'Cancel stops a run; Reset forgets the model.' },
    ],
  },
  { id: 'data', label: 'Data panel', keys: ['data'], tip: 'Choosing and loading the data, the held-out fraction, the class balance.' },
  { id: 'network', label: 'Network drawing', keys: ['network'], tip: 'The drawing of the network\'s layers.' },
  {
    id: 'model', label: 'Settings form', keys: ['model'], tip: 'Every model and training setting. Hidden, the embed trains with the settings of this link.',
    children: [
      { id: 'family', label: 'Model family choice', keys: ['family'], tip: 'The choice between the deep belief net, the sparse autoencoder, sparse coding, the local-patch RBM and the recurrent net. Hidden, the embed keeps the family of this link.' },
    ],
  },
  { id: 'samples', family: 'dbn', label: 'Gibbs samples', keys: ['samples'], tip: 'The Gibbs chains: what the model generates.' },
  { id: 'filters', family: 'dbn', label: 'Receptive fields (filters)', keys: ['filters'], tip: 'The weights of the hidden units, drawn as images.' },
  { id: 'ae_filters', family: 'autoencoder', label: 'Filters', keys: ['ae_filters'], tip: 'Each hidden unit\'s encoder weights, drawn as an image.' },
  { id: 'ae_reconstructions', family: 'autoencoder', label: 'Reconstructions', keys: ['ae_reconstructions'], tip: 'Digits from the data above what the autoencoder gives back.' },
  { id: 'chart_ae_cost', family: 'autoencoder', label: 'Cost curve', keys: ['chart_ae_cost'], tip: 'The cost J and its three terms, per iteration.' },
  { id: 'chart_ae_sparsity', family: 'autoencoder', label: 'ρ̂ plot', keys: ['chart_ae_sparsity'], tip: 'Each hidden unit\'s mean activation ρ̂ against the target ρ.' },
  { id: 'sc_basis', family: 'sparse_coding', label: 'Basis', keys: ['sc_basis'], tip: 'The basis vectors, drawn as images.' },
  { id: 'sc_reconstructions', family: 'sparse_coding', label: 'Reconstructions', keys: ['sc_reconstructions'], tip: 'Patches from the digits above what the basis and their codes rebuild.' },
  { id: 'chart_sc_objective', family: 'sparse_coding', label: 'Objective curve', keys: ['chart_sc_objective'], tip: 'The objective ½‖X − BA‖² + β‖A‖₁ after each mini-batch.' },
  { id: 'chart_sc_codes', family: 'sparse_coding', label: 'Codes and sparsity', keys: ['chart_sc_codes'], tip: 'The histograms of the non-zero codes and of the non-zero codes per patch, against the target sparsity.' },
  { id: 'lr_filters', family: 'local_rbm', label: 'Filters per patch position', keys: ['lr_filters'], tip: 'The filters each patch position learnt, laid out as the positions lie on the image.' },
  { id: 'chart_lr_error', family: 'local_rbm', label: 'Error curve', keys: ['chart_lr_error'], tip: 'The reconstruction error after each epoch.' },
  { id: 'sq_hidden_state', family: 'sequences', label: 'Hidden state over time', keys: ['sq_hidden_state'], tip: 'The hidden units, outputs and targets over held-out steps, and which steps were right.' },
  { id: 'sq_sensitivity', family: 'sequences', label: 'Sensitivity tensor', keys: ['sq_sensitivity'], tip: 'What RTRL carries forward: ∂a/∂w of one weight block, a tile per unit.' },
  { id: 'chart_sq_error', family: 'sequences', label: 'Error curve', keys: ['chart_sq_error'], tip: 'The mean error of each chunk of online steps.' },
  { id: 'chart_sq_timing', family: 'sequences', label: 'CPU vs GPU timing', keys: ['chart_sq_timing'], tip: 'The µs per RTRL step on the CPU and on WebGPU over n, with its button: Moore\'s crossover in the visitor\'s browser.' },
  { id: 'headline', family: 'dbn', label: 'Headline charts', keys: ['headline'], tip: 'The charts next to the pictures on the first screen.' },
  { id: 'charts', family: 'dbn', label: 'More charts (below the fold)', keys: ['charts'], tip: 'The full set of training charts below the first screen.' },
  { id: 'reconstructions', family: 'dbn', label: 'Reconstructions', keys: ['reconstructions'], tip: 'Data cases beside their reconstructions through the stack.' },
  { id: 'histograms', family: 'dbn', label: 'Hidden activations', keys: ['histograms'], tip: 'Histograms of the hidden units’ activations.' },
  { id: 'dream', family: 'dbn', label: 'Dream', keys: ['dream'], tip: 'One long Gibbs chain, shown as it wanders.' },
  { id: 'results', family: 'dbn', label: 'Supervised results', keys: ['results'], tip: 'Accuracy and the confusion matrix. Hidden, the embed also turns the supervised stage off.' },
  { id: 'storage', family: 'dbn', label: 'Save and load', keys: ['storage'], tip: 'Downloading and uploading models and logs.' },
  { id: 'epoch_log', family: 'dbn', label: 'Epoch log', keys: ['epoch_log'], tip: 'The text log, one line per epoch.' },
  { id: 'ae_log', family: 'autoencoder', label: 'Iteration log and Save model', keys: ['ae_log'], tip: 'Below the first screen: one line per iteration, and Save model.' },
  { id: 'sc_log', family: 'sparse_coding', label: 'Mini-batch log and Save model', keys: ['sc_log'], tip: 'Below the first screen: one line per mini-batch, and Save model.' },
  { id: 'about', label: 'Introduction text', keys: ['about'], tip: 'The explanation of the models under the page.' },
  { id: 'share', label: 'Share/Embed buttons', keys: ['share'], shown: false, tip: 'These Copy link and Embed buttons, inside the embed.' },
];
const forFamily = (option, family) => !option.family || option.family === family;

function el(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === 'dataset') Object.assign(element.dataset, value);
    else if (key in element) element[key] = value;
    else element.setAttribute(key, value);
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

const escapeAttribute = (text) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// The page's URL with its current settings, minus hide flags and test hooks, plus a hide flag
// for every part in `hiddenKeys`, showing the model `family`.
export function embedUrl(href, hiddenKeys, family = 'dbn') {
  const [base, hash = ''] = href.split('#');
  const params = new URLSearchParams(hash);
  for (const key of [...params.keys()]) {
    if (key.endsWith('_hide') || TEST_HOOKS.includes(key)) params.delete(key);
  }
  const parts = FAMILY_PARTS[family] ?? FAMILY_PARTS.dbn;
  if (family !== 'dbn') params.set('family', family);
  else params.delete('family');
  const hidden = new Set(hiddenKeys);
  if (parts.headline.length && parts.headline.every((key) => hidden.has(key))) hidden.add('headline');
  if (parts.belowFold.every((key) => hidden.has(key))) hidden.add('more_heading');
  for (const key of hidden) params.set(`${key}_hide`, '1');
  // Without its results the DBN's supervised stage would only cost the visitor time.
  if (family === 'dbn' && hidden.has('results')) params.set('supervised', '0');
  return `${base}#${params}`;
}

export function iframeCode(url, width, height) {
  return `<iframe src="${escapeAttribute(url)}" width="${width}" height="${height}" title="DeepBelief Playground" loading="lazy"></iframe>`;
}

// Writes `text` to the clipboard; false when the browser refuses (no secure context, an
// iframe without the permission, the visitor said no).
async function writeClipboard(text) {
  try {
    if (!navigator.clipboard?.writeText) return false;
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

function mountCopyLink(element) {
  const button = el('button', {
    type: 'button', id: 'copy-link', className: 'share-button',
    title: 'Copy a link to this page that reproduces these settings and this seed.',
  }, 'Copy link');
  const fallbackInput = el('input', {
    id: 'copy-link-fallback', type: 'text', readOnly: true, spellcheck: false,
    title: 'The link to this page with these settings: select it and copy.',
  });
  const fallback = el('div', { className: 'share-fallback', role: 'group', 'aria-label': 'Copy the link by hand', hidden: true },
    el('label', { className: 'share-fallback-note', htmlFor: 'copy-link-fallback' }, 'The browser refused the clipboard. Press Ctrl+C / ⌘C to copy:'),
    fallbackInput);
  let restore = 0;
  button.addEventListener('click', async () => {
    const url = location.href;
    clearTimeout(restore);
    if (await writeClipboard(url)) {
      fallback.hidden = true;
      button.dataset.copied = url;
      button.textContent = 'Link copied';
      restore = setTimeout(() => { button.textContent = 'Copy link'; }, COPIED_FOR_MS);
      return;
    }
    delete button.dataset.copied;
    fallbackInput.value = url;
    fallback.hidden = false;
    fallbackInput.focus();
    fallbackInput.select();
  });
  // The pop-over goes with Esc or a click anywhere else.
  fallbackInput.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      fallback.hidden = true;
      button.focus();
    }
  });
  document.addEventListener('pointerdown', (event) => {
    if (!fallback.hidden && !element.contains(event.target)) fallback.hidden = true;
  });
  element.append(button, fallback);
}

function checkbox(option, parentId) {
  const input = el('input', { type: 'checkbox', id: `embed-show-${option.id}`, checked: option.shown !== false, title: option.tip, dataset: { option: option.id } });
  const label = el('label', { className: parentId ? 'embed-option embed-suboption' : 'embed-option', title: option.tip }, input, ` ${option.label}`);
  return { input, label };
}

// A whole number of pixels in the limits, or an error message naming the field.
function readSize(input, name) {
  const value = Number(input.value);
  if (input.value.trim() !== '' && Number.isInteger(value) && value >= SIZE_LIMITS.min && value <= SIZE_LIMITS.max) return { value };
  return { error: `${name}: expected a whole number of pixels from ${SIZE_LIMITS.min} to ${SIZE_LIMITS.max}, got "${input.value}".` };
}

function mountEmbedBuilder(element, app) {
  const openButton = el('button', {
    type: 'button', id: 'embed-open', className: 'share-button', 'aria-haspopup': 'dialog',
    title: 'Build an <iframe> that puts this playground, with these settings and only the parts you choose, in another page.',
  }, 'Embed');

  const boxes = new Map();
  const optionList = el('div', { className: 'embed-options' });
  for (const option of EMBED_OPTIONS) {
    const parent = checkbox(option);
    boxes.set(option, parent.input);
    optionList.append(parent.label);
    for (const child of option.children ?? []) {
      const sub = checkbox(child, option.id);
      sub.input.dataset.parent = option.id;
      boxes.set(child, sub.input);
      optionList.append(sub.label);
    }
  }
  const shownFieldset = el('fieldset', { className: 'embed-shown' }, el('legend', {}, 'Show'), optionList);

  const width = el('input', { type: 'number', id: 'embed-width', min: SIZE_LIMITS.min, max: SIZE_LIMITS.max, step: 1, value: 960, title: 'The width of the iframe, in CSS pixels.' });
  const height = el('input', { type: 'number', id: 'embed-height', min: SIZE_LIMITS.min, max: SIZE_LIMITS.max, step: 1, value: 720, title: 'The height of the iframe, in CSS pixels.' });
  const sizeError = el('p', { id: 'embed-size-error', className: 'error inline-error', role: 'alert', hidden: true });
  const sizeFieldset = el('fieldset', { className: 'embed-size' }, el('legend', {}, 'Size'),
    el('label', { title: width.title }, 'Width ', width), el('label', { title: height.title }, 'Height ', height), sizeError);

  const code = el('textarea', { id: 'embed-code', readOnly: true, rows: 4, spellcheck: false, title: 'The HTML to paste into your page.' });
  const copyButton = el('button', { type: 'button', id: 'embed-copy', title: 'Copy the iframe code to the clipboard.' }, 'Copy code');
  const copyNote = el('span', { id: 'embed-copy-note', className: 'embed-copy-note', role: 'status' });
  const codeBlock = el('div', { className: 'embed-code-block' },
    el('label', { htmlFor: 'embed-code', title: code.title }, 'Code'), code, el('div', { className: 'embed-code-actions' }, copyButton, copyNote));

  const preview = el('iframe', { id: 'embed-preview', title: 'Preview of the embedded playground', tabIndex: -1 });
  const previewFrame = el('div', { className: 'embed-preview-box' }, preview);
  const previewBlock = el('figure', { className: 'embed-preview' }, previewFrame,
    el('figcaption', {}, 'Preview, scaled down. It reloads after each change.'));

  const closeButton = el('button', { type: 'button', id: 'embed-close', title: 'Close the embed builder (Esc).' }, 'Close');
  const dialog = el('dialog', { id: 'embed-dialog', className: 'embed-dialog', 'aria-labelledby': 'embed-title', 'aria-describedby': 'embed-intro' },
    el('div', { className: 'embed-head' }, el('h2', { id: 'embed-title' }, 'Embed this playground'), closeButton),
    el('p', { id: 'embed-intro', className: 'embed-intro' },
      'Paste the code into a web page: the playground appears with these settings and seed, showing only what is checked.'),
    el('div', { className: 'embed-body' },
      el('div', { className: 'embed-form' }, shownFieldset, sizeFieldset),
      el('div', { className: 'embed-result' }, codeBlock, previewBlock)));

  // The family the page showed when the builder opened (it cannot change while open).
  let family = 'dbn';
  const showFamilyOptions = () => {
    for (const [option, input] of boxes) input.closest('label').hidden = !forFamily(option, family);
  };
  const hiddenKeys = () => {
    const keys = [];
    for (const option of EMBED_OPTIONS.filter((o) => forFamily(o, family))) {
      if (!boxes.get(option).checked) {
        keys.push(...option.keys);
        continue;
      }
      for (const child of option.children ?? []) if (forFamily(child, family) && !boxes.get(child).checked) keys.push(...child.keys);
    }
    return keys;
  };

  let previewTimer = 0;
  const showPreview = (url, w, h) => {
    const scale = Math.min(PREVIEW_BOX.width / w, PREVIEW_BOX.height / h, 1);
    preview.width = w;
    preview.height = h;
    preview.style.transform = `scale(${scale})`;
    previewFrame.style.width = `${Math.round(w * scale)}px`;
    previewFrame.style.height = `${Math.round(h * scale)}px`;
    if (preview.getAttribute('src') !== url) preview.src = url;
  };

  // Rebuilds the code at once; the preview (a whole playground) follows after a pause.
  const update = ({ previewNow = false } = {}) => {
    for (const option of EMBED_OPTIONS) {
      for (const child of option.children ?? []) boxes.get(child).disabled = !boxes.get(option).checked;
    }
    const w = readSize(width, 'Width');
    const h = readSize(height, 'Height');
    width.setAttribute('aria-invalid', String(Boolean(w.error)));
    height.setAttribute('aria-invalid', String(Boolean(h.error)));
    sizeError.textContent = [w.error, h.error].filter(Boolean).join(' ');
    sizeError.hidden = !w.error && !h.error;
    if (w.error || h.error) return;
    const url = embedUrl(location.href, hiddenKeys(), family);
    code.value = iframeCode(url, w.value, h.value);
    copyNote.textContent = '';
    clearTimeout(previewTimer);
    if (previewNow) showPreview(url, w.value, h.value);
    else previewTimer = setTimeout(() => showPreview(url, w.value, h.value), PREVIEW_DELAY_MS);
  };

  dialog.addEventListener('input', (event) => { if (event.target !== code) update(); });
  dialog.addEventListener('change', (event) => { if (event.target !== code) update(); });
  openButton.addEventListener('click', () => {
    family = app?.family in FAMILY_PARTS ? app.family : 'dbn';
    showFamilyOptions();
    update({ previewNow: true });
    dialog.showModal();
  });
  closeButton.addEventListener('click', () => dialog.close());
  // A closed builder must not keep a second engine training in the background.
  dialog.addEventListener('close', () => {
    clearTimeout(previewTimer);
    preview.src = 'about:blank';
  });
  copyButton.addEventListener('click', async () => {
    if (await writeClipboard(code.value)) {
      copyNote.textContent = 'Copied.';
      copyButton.dataset.copied = code.value;
      return;
    }
    code.focus();
    code.select();
    copyNote.textContent = 'The browser refused the clipboard. Press Ctrl+C / ⌘C to copy the selected code.';
  });
  code.addEventListener('focus', () => code.select());

  element.append(openButton);
  // In <body>, not in the dark header, so none of the header's styles reach it.
  document.body.append(dialog);
}

export function mountShare(element, app) {
  element.classList.add('share');
  mountCopyLink(element);
  mountEmbedBuilder(element, app);
}

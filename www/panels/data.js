// The data panel: the built-in MNIST at once; IDX files (drop or pick), IDX by URL, or a DEEP
// database with input and target columns chosen by name; thumbnails, counts, class balance
// and the held-out split. Errors appear next to the control that caused them; a failed load
// keeps the current data (the engine replaces data only when the new data parses).
import { drawImage } from '../views/canvas.js';

const $ = (id) => document.getElementById(id);

function showError(element, message) {
  element.textContent = message ?? '';
  element.hidden = !message;
}

const isLabelsFile = (file) => /label|idx1/i.test(file.name);

export function mountData(section, app) {
  const hash = app.hash;
  hash.register('data', 'default');
  hash.register('held_out', 0.1);
  hash.register('images_url', '');
  hash.register('labels_url', '');
  // How to load the current data again (a restarted engine); buffers are kept as copies
  // because the ones sent to the worker are transferred.
  let lastLoad = { cmd: 'loadDefault', args: {} };
  const errorOf = { default: $('data-error'), file: $('idx-error'), url: $('url-error'), database: $('db-error') };

  function showSource(source) {
    for (const form of section.querySelectorAll('[data-source-form]')) form.hidden = form.dataset.sourceForm !== source;
    const radio = section.querySelector(`input[name=data-source][value="${source}"]`);
    if (radio) radio.checked = true;
  }

  section.querySelectorAll('input[name=data-source]').forEach((radio) => radio.addEventListener('change', () => {
    showSource(radio.value);
    if (radio.value === 'default') load('default', 'loadDefault', {});
  }));

  const cloneArgs = (args) => structuredClone(args);

  async function load(source, cmd, args, transfer = [], kept = args) {
    const errorElement = errorOf[source];
    showError(errorElement, '');
    if (app.running) {
      showError(errorElement, 'Training is running: cancel it before loading other data.');
      return null;
    }
    try {
      const summary = await app.rpc(cmd, args, transfer);
      lastLoad = { cmd, args: kept };
      $('url-prompt').hidden = true;
      hash.set('data', source);
      if (source !== 'url') { hash.set('images_url', ''); hash.set('labels_url', ''); }
      await applyHeldOut();
      return summary;
    } catch (error) {
      showError(errorElement, error.message);
      return null;
    }
  }

  async function applyHeldOut() {
    const fraction = Number($('held-out').value);
    showError($('held-out-error'), '');
    try {
      await app.rpc('setHeldOut', { fraction, seed: app.seed() });
      hash.set('held_out', fraction);
    } catch (error) {
      showError($('held-out-error'), error.message);
    }
  }
  $('held-out').addEventListener('change', () => {
    if (!$('held-out').checkValidity()) {
      showError($('held-out-error'), `Held-out fraction: expected a value from 0 to 0.5`);
      return;
    }
    applyHeldOut();
  });
  // The seed draws the held-out cases, so a link's seed gives its split.
  app.on('seed_changed', () => {
    if (app.data && !app.running) applyHeldOut();
  });

  // IDX files: picked or dropped; the labels file is told apart by its name (idx1, labels).
  async function loadFiles(images, labels) {
    if (!images) {
      showError($('idx-error'), 'Choose an IDX images file (idx3), and optionally its labels (idx1).');
      return;
    }
    const imageBuffer = await images.arrayBuffer();
    const labelBuffer = labels ? await labels.arrayBuffer() : null;
    const args = { images: { name: images.name, buffer: imageBuffer }, labels: labels ? { name: labels.name, buffer: labelBuffer } : null };
    const kept = cloneArgs(args);
    await load('file', 'loadIdx', args, [imageBuffer, labelBuffer].filter(Boolean), kept);
  }
  $('idx-images').addEventListener('change', () => loadFiles($('idx-images').files[0], $('idx-labels').files[0]));
  $('idx-labels').addEventListener('change', () => { if ($('idx-images').files[0]) loadFiles($('idx-images').files[0], $('idx-labels').files[0]); });
  $('idx-load').addEventListener('click', () => loadFiles($('idx-images').files[0], $('idx-labels').files[0]));
  const drop = $('idx-drop');
  drop.addEventListener('dragover', (event) => { event.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    const files = [...event.dataTransfer.files];
    loadFiles(files.find((f) => !isLabelsFile(f)), files.find(isLabelsFile));
  });
  drop.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); $('idx-images').click(); }
  });

  $('url-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const imagesUrl = $('url-images').value.trim();
    const labelsUrl = $('url-labels').value.trim();
    if (!imagesUrl) {
      showError($('url-error'), 'Enter the URL of an IDX images file.');
      return;
    }
    await loadUrls(imagesUrl, labelsUrl);
  });

  async function loadUrls(imagesUrl, labelsUrl) {
    const summary = await load('url', 'loadIdxUrl', { imagesUrl, labelsUrl: labelsUrl || null, maxBytes: app.maxFetchBytes });
    if (summary) { hash.set('images_url', imagesUrl); hash.set('labels_url', labelsUrl); }
    return summary;
  }

  // A link's URLs are shown, not fetched: a link must not make the page download from
  // anywhere, or anything large, without the visitor agreeing.
  function askToLoad(imagesUrl, labelsUrl) {
    $('url-prompt-images').textContent = imagesUrl;
    $('url-prompt-labels').textContent = labelsUrl;
    $('url-prompt-labels-part').hidden = !labelsUrl;
    $('url-prompt-cap').textContent = `${Math.round(app.maxFetchBytes / 2 ** 20)} MiB`;
    $('url-prompt').hidden = false;
  }
  $('url-prompt-load').addEventListener('click', async () => {
    $('url-prompt').hidden = true;
    await loadUrls($('url-prompt-images').textContent, $('url-prompt-labels').textContent);
  });
  $('url-prompt-dismiss').addEventListener('click', () => {
    $('url-prompt').hidden = true;
    showSource('default');
    hash.set('data', 'default');
    hash.set('images_url', '');
    hash.set('labels_url', '');
  });

  // DEEP database: read the column names first, then load with the chosen ones.
  let database = null;
  $('db-file').addEventListener('change', async () => {
    const file = $('db-file').files[0];
    showError($('db-error'), '');
    $('db-load').disabled = true;
    if (!file) return;
    const text = await file.text();
    try {
      const columns = await app.rpc('databaseColumns', { name: file.name, text });
      database = { name: file.name, text };
      for (const select of [$('db-inputs'), $('db-targets')]) select.replaceChildren(...columns.map((name) => new Option(name, name)));
      $('db-load').disabled = false;
    } catch (error) {
      showError($('db-error'), error.message);
    }
  });
  $('db-load').addEventListener('click', () => {
    const chosen = (select) => [...select.selectedOptions].map((o) => o.value);
    const targets = chosen($('db-targets'));
    const inputs = chosen($('db-inputs')).filter((name) => !targets.includes(name));
    if (!database) return;
    load('database', 'loadDatabase', { ...database, inputs, targets });
  });

  app.on('data', ({ summary, preview }) => {
    const shape = summary.image_shape ? ` (${summary.image_shape[0]}×${summary.image_shape[1]})` : '';
    const classes = summary.class_counts?.length ? `, ${summary.class_counts.length} classes` : '';
    const targets = !summary.class_counts?.length && summary.target_names?.length ? `, targets ${summary.target_names.join(', ')}` : '';
    const name = /^mnist-default-/.test(summary.name) ? 'Built-in MNIST digits' : summary.name;
    $('data-summary').textContent = `${name}: ${summary.n_cases.toLocaleString()} cases of ${summary.n_inputs} inputs${shape}${classes}${targets}`;
    $('data-summary').title = summary.name;
    // A load that worked clears every source's earlier error.
    for (const element of Object.values(errorOf)) showError(element, '');
    $('data-summary').dataset.cases = summary.n_cases;
    $('data-summary').dataset.inputs = summary.n_inputs;
    const train = summary.n_train ?? summary.n_cases;
    const heldOut = summary.n_held_out ?? 0;
    $('data-counts').textContent = `${train.toLocaleString()} training cases · ${heldOut.toLocaleString()} held out`;
    if (preview) drawImage($('data-preview'), preview);
    drawClassBalance(summary);
  });

  // One bar per class on one scale (the tallest class fills the track), the held-out cases
  // stacked on the training ones in a lighter shade; the caption gives the scale.
  function drawClassBalance(summary) {
    const counts = summary.class_counts ?? [];
    const names = summary.class_names?.length ? summary.class_names : counts.map((_, k) => String(k));
    const heldOut = summary.held_out_class_counts ?? [];
    const most = Math.max(1, ...counts);
    const segment = (kind, cases, bottom) => {
      const fill = document.createElement('span');
      fill.className = `fill ${kind}`;
      fill.style.bottom = `${(100 * bottom) / most}%`;
      fill.style.height = `${(100 * cases) / most}%`;
      return fill;
    };
    const bars = counts.map((count, k) => {
      const held = Math.min(count, heldOut[k] ?? 0);
      const bar = document.createElement('div');
      bar.className = 'bar';
      bar.title = `${names[k]}: ${count.toLocaleString()} cases, ${(count - held).toLocaleString()} training and ${held.toLocaleString()} held out`;
      bar.setAttribute('role', 'img');
      bar.setAttribute('aria-label', bar.title);
      Object.assign(bar.dataset, { count, heldOut: held });
      const track = document.createElement('span');
      track.className = 'track';
      track.append(segment('train', count - held, 0), segment('held-out', held, count - held));
      const label = document.createElement('span');
      label.className = 'label';
      label.textContent = names[k];
      bar.append(track, label);
      return bar;
    });
    $('class-balance').replaceChildren(...bars);
    const least = counts.length ? Math.min(...counts) : 0;
    $('class-balance-scale').textContent = `Cases per class, to one scale: from ${least.toLocaleString()} to ${most.toLocaleString()} (the tallest bar).`;
    $('class-balance-figure').hidden = !counts.length;
  }

  return {
    // The data choice of the hash: a URL is offered for loading (fetched only on the
    // visitor's click); picked files cannot be reloaded, so the built-in data loads and the
    // panel says so.
    async loadInitial() {
      $('held-out').value = hash.get('held_out');
      const source = hash.get('data');
      if (source === 'url' && hash.get('images_url')) {
        showSource('url');
        $('url-images').value = hash.get('images_url');
        $('url-labels').value = hash.get('labels_url');
        askToLoad(hash.get('images_url'), hash.get('labels_url'));
        const summary = await app.rpc('loadDefault').catch((error) => showError($('data-error'), error.message));
        if (summary) await applyHeldOut();
        return;
      }
      if (source === 'file' || source === 'database') {
        showSource(source);
        showError(errorOf[source], 'The shared link used files of its own: choose them again. The built-in data is loaded meanwhile.');
        const summary = await app.rpc('loadDefault').catch((error) => showError($('data-error'), error.message));
        if (summary) await applyHeldOut();
        return;
      }
      // A visitor who already picked another source while the engine started keeps it.
      const picked = section.querySelector('input[name=data-source]:checked')?.value ?? 'default';
      showSource(picked);
      await load('default', 'loadDefault', {});
    },
    async reload() {
      const args = cloneArgs(lastLoad.args);
      const transfer = [args.images?.buffer, args.labels?.buffer].filter(Boolean);
      try {
        await app.rpc(lastLoad.cmd, args, transfer);
        await applyHeldOut();
      } catch (error) {
        showError($('data-error'), error.message);
      }
    },
  };
}

// Save and load: download the model (the CLI's model.json) or upload one, keep the latest in
// IndexedDB (saved when training ends and after a load, restored on the next visit once data
// of its visible size is loaded), and export DEEP.LOG and the activation file.
import { download, el, errorText, field, inlineError, panel } from './views/canvas.js';
import { createStore, del as idbDel, get as idbGet, set as idbSet } from './vendor/idb-keyval.js';
import { MODEL_KEYS, describeDifferences, savedModelValues, settingDifferences } from './model-settings.js';

const SAVED_KEY = 'latest';

// One object store of saved models, through idb-keyval (vendored from npm by the build).
const models = createStore('deepbelief-playground', 'models');
const get = (key) => idbGet(key, models);
const set = (key, value) => idbSet(key, value, models);
const del = (key) => idbDel(key, models);

function describeModel(summary) {
  if (!summary) return 'no model';
  const sizes = [summary.layers[0]?.[0], ...summary.layers.map(([, hidden]) => hidden)].join('–');
  const supervised = summary.supervised ? ` + supervised (${[...summary.supervised.hidden, summary.supervised.n_outputs].join('–')})` : '';
  return `RBM stack ${sizes}${supervised}, ${summary.parameters.toLocaleString()} parameters`;
}

// The CLI's activation selections (SECTION:LAYER, numbered from 1 as in DEEP) the model offers.
function activationChoices(summary) {
  const rbm = summary?.layers?.length || 1;
  const options = Array.from({ length: rbm }, (_, k) => el('option', { value: `unsupervised:${k + 1}`, title: `Hidden units of RBM ${k + 1}` }, `RBM ${k + 1}`));
  summary?.supervised?.hidden.forEach((units, k) => options.push(el('option', { value: `supervised:${k + 1}`, title: `Supervised hidden layer ${k + 1} (${units} units)` }, `Supervised ${k + 1}`)));
  if (summary?.supervised) options.push(el('option', { value: 'output:1', title: 'The class probabilities of the output layer' }, 'Output'));
  return options;
}

export function mountStorage(container, app) {
  const section = panel(container, {
    hideKey: 'storage', heading: 'Save and load',
    help: 'Download the trained model or load one; the page also keeps the latest model in this browser, so a reload keeps the work.',
  });
  const saveButton = el('button', { id: 'model-download', type: 'button', title: 'Download the current model as model.json (the command-line tool reads it too).' }, 'Download model.json');
  const upload = el('input', { id: 'model-upload', type: 'file', accept: '.json,application/json' });
  const uploadError = inlineError('model-upload-error');
  const forget = el('button', { id: 'model-forget', type: 'button', title: 'Delete the model this browser keeps; the model on the page stays.' }, 'Forget saved model');
  const status = el('p', { id: 'storage-status', className: 'view-note', role: 'status', 'aria-live': 'polite' }, 'No model saved in this browser yet.');
  const restoreSaved = el('button', { id: 'storage-restore-saved', type: 'button', hidden: true, title: "Load the model saved in this browser and set the settings to the ones it was trained with." }, 'Restore it with its settings');
  const logButton = el('button', { id: 'export-log', type: 'button', title: "Download DEEP.LOG: every layer's initialisation trials, epochs and stopping reason." }, 'Export DEEP.LOG');
  const layer = el('select', { id: 'activation-layer' }, ...activationChoices(null));
  const activationsButton = el('button', { id: 'export-activations', type: 'button', title: "Download the chosen layer's hidden activations for every data case, as DEEP writes them." }, 'Export activations');
  const exportError = inlineError('export-error');
  section.append(
    el('div', { className: 'view-controls', dataset: { hideKey: 'model_files' } },
      saveButton,
      field('Load model.json', upload, { title: 'Load a model.json saved by this page or by the command-line tool; the current model stays if the file is bad.' }),
      uploadError, forget),
    status, restoreSaved,
    el('div', { className: 'view-controls', dataset: { hideKey: 'exports' } },
      logButton, field('Activations of', layer, { title: 'Which RBM layer\'s activations to export.' }), activationsButton, exportError));

  let restoreTried = false;
  // The text of the model last saved or restored, for a restarted engine.
  let lastSavedText = null;
  // A saved model left out beside a link's settings, until "Restore it with its settings".
  let pending = null;
  const dropPending = () => {
    pending = null;
    restoreSaved.hidden = true;
  };

  const showStatus = (text) => { status.textContent = text; };

  async function summary() {
    return app.rpc('model_summary').catch(() => null);
  }

  // Saves the model in IndexedDB and hands the text to the page (J-core restarts a worker from it).
  async function keep(reason) {
    // A newer model replaces the saved one that was left out.
    dropPending();
    let text;
    try {
      text = await app.rpc('model_save');
    } catch (error) {
      showStatus(`Could not save the model: ${errorText(error)}`);
      return;
    }
    const modelSummary = await summary();
    const entry = { text, savedAt: new Date().toISOString(), nVisible: modelSummary?.layers?.[0]?.[0] ?? null, summary: modelSummary };
    lastSavedText = text;
    app.emit('model_saved', { text });
    try {
      await set(SAVED_KEY, entry);
      showStatus(`${reason} Saved in this browser at ${new Date(entry.savedAt).toLocaleTimeString()}: ${describeModel(modelSummary)}.`);
      status.dataset.saved = entry.savedAt;
    } catch (error) {
      showStatus(`${reason} This browser would not keep it (${errorText(error)}); download it to keep it.`);
    }
  }

  async function restore(dataSummary) {
    let entry;
    try {
      entry = await get(SAVED_KEY);
    } catch (error) {
      showStatus(`This browser's saved model could not be read (${errorText(error)}).`);
      return;
    }
    if (!entry) return;
    if (entry.nVisible !== dataSummary.n_inputs) {
      showStatus(`The saved model (${entry.nVisible} inputs) does not fit this data (${dataSummary.n_inputs} inputs), so it was not restored; it stays saved.`);
      return;
    }
    // The model and the controls must agree. A link's own settings are what it shares, so
    // they stand and the model waits for a click; without any, the model's settings are set.
    let modelValues = {};
    try {
      modelValues = savedModelValues(JSON.parse(entry.text));
    } catch {
      // Not JSON: loading it below reports what is wrong.
    }
    const differences = settingDifferences(app.settingValues(), modelValues);
    if (differences.length && app.hash.keys().some((key) => MODEL_KEYS.has(key))) {
      pending = { entry, modelValues, differences };
      restoreSaved.hidden = false;
      status.dataset.notRestored = entry.savedAt;
      showStatus(`The model saved in this browser was not restored, because this link's settings differ from the ones it was trained with (${describeDifferences(differences)}). It stays saved.`);
      return;
    }
    await restoreEntry(entry, modelValues, differences);
  }

  async function restoreEntry(entry, modelValues, differences) {
    try {
      const restored = await app.rpc('model_load', { name: 'saved model', text: entry.text });
      lastSavedText = entry.text;
      app.emit('model_saved', { text: entry.text });
      if (differences.length) app.applySettings(modelValues);
      app.emit('model_loaded', { summary: restored, name: "this browser's saved model" });
      status.dataset.restored = entry.savedAt;
      const settings = differences.length ? ` The settings below are the model's (they differed: ${describeDifferences(differences)}).` : '';
      showStatus(`Restored the model saved at ${new Date(entry.savedAt).toLocaleString()}: ${describeModel(restored)}.${settings}`);
    } catch (error) {
      showStatus(`The saved model could not be restored (${errorText(error)}).`);
    }
  }
  restoreSaved.addEventListener('click', async () => {
    if (!pending) return;
    const { entry, modelValues, differences } = pending;
    dropPending();
    await restoreEntry(entry, modelValues, differences);
  });

  saveButton.addEventListener('click', async () => {
    try {
      download('model.json', await app.rpc('model_save'), 'application/json');
      uploadError.show('');
    } catch (error) {
      uploadError.show(`Download: ${errorText(error)}`);
    }
  });

  upload.addEventListener('change', async () => {
    const [file] = upload.files;
    if (!file) return;
    uploadError.show('');
    try {
      const text = await file.text();
      const loaded = await app.rpc('model_load', { name: file.name, text });
      app.emit('model_loaded', { summary: loaded, name: file.name });
      await keep(`Loaded ${file.name}: ${describeModel(loaded)}.`);
    } catch (error) {
      uploadError.show(`${file.name}: ${errorText(error)}. The current model is unchanged.`);
    } finally {
      upload.value = '';
    }
  });

  forget.addEventListener('click', async () => {
    dropPending();
    await del(SAVED_KEY).catch(() => {});
    delete status.dataset.saved;
    showStatus('This browser no longer keeps a saved model.');
  });

  logButton.addEventListener('click', async () => {
    try {
      download('DEEP.LOG', await app.rpc('export_deep_log'), 'text/plain');
      exportError.show('');
    } catch (error) {
      exportError.show(`DEEP.LOG: ${errorText(error)}`);
    }
  });

  activationsButton.addEventListener('click', async () => {
    const selection = layer.value;
    try {
      download(`activations-${selection.replace(/:/g, '-')}.txt`, await app.rpc('export_activations', { selection }), 'text/plain');
      exportError.show('');
    } catch (error) {
      exportError.show(`Activations: ${errorText(error)}`);
    }
  });

  app.on('model', ({ summary: modelSummary, checkpoint }) => {
    if (checkpoint) {
      lastSavedText = checkpoint;
      app.emit('model_saved', { text: checkpoint });
    }
    const previous = layer.value;
    layer.replaceChildren(...activationChoices(modelSummary));
    if ([...layer.options].some((option) => option.value === previous)) layer.value = previous;
  });
  app.on('finished', ({ stopped, restarted, error, family }) => {
    // A restarted engine has no model yet: `worker_restarted` below gives it the saved one.
    // Another family's run leaves the DBN's model as it was (its own Save model is in its view).
    if (restarted || (family && family !== 'dbn')) return;
    keep(error ? 'Training stopped by an error; the model so far is kept.' : stopped ? 'Training stopped; the model so far is kept.' : 'Training finished.');
  });
  // Cancelling a blocking stage on a non-isolated page replaces the engine: it gets the last
  // saved model back.
  app.on('worker_restarted', async () => {
    if (lastSavedText === null) return;
    try {
      const restored = await app.rpc('model_load', { name: 'saved model', text: lastSavedText });
      showStatus(`The engine was restarted; the last saved model is back: ${describeModel(restored)}.`);
    } catch (error) {
      showStatus(`The engine was restarted, but the last saved model could not be reloaded (${errorText(error)}).`);
    }
  });
  app.on('data', ({ summary: dataSummary }) => {
    if (restoreTried) return;
    restoreTried = true;
    restore(dataSummary);
  });
  return { keep, restore };
}

// The Web Worker owns the wasm module (and through it any GPU device). The page sends it
// commands and draws what comes back (docs/PAGE.md, "Worker protocol"), so training never
// blocks the UI.
//
// Build choice: the threaded package needs SharedArrayBuffer, which browsers only grant to
// cross-origin isolated pages; anywhere else (plain static servers, iframes) we load the
// single-threaded package. WebGPU works in both.
import { createTrainingRun } from './worker/training.js';
import { createAutoencoderRun } from './worker/autoencoder.js';
import { createSparseCodingRun } from './worker/sparse_coding.js';
import { createSequencesRun } from './worker/sequences.js';
import { createLocalRbmRun } from './worker/local_rbm.js';
import { fetchBytes, MAX_FETCH_BYTES } from './worker/fetch.js';

const isolated = self.crossOriginIsolated === true;
let wasm = null;
let playground = null;
let runtime = null;
let webgpu = null;
// Replays the last successful data load (and held-out split) into a fresh Playground (reset).
let replayData = null;
let heldOut = null;
// Shared with the page when isolated: the page sets [0] = 1 to stop a blocking supervised stage.
const cancelFlag = isolated ? new Int32Array(new SharedArrayBuffer(4)) : null;

const post = (event, body = {}) => self.postMessage({ event, ...body });
const message = (error) => String(error?.message ?? error);

async function loadEngine() {
  wasm = isolated ? await import('./pkg-mt/deepbelief.js') : await import('./pkg/deepbelief.js');
  await wasm.default();
  if (isolated) await wasm.initThreadPool(navigator.hardwareConcurrency || 2);
  runtime = wasm.runtime_info();
  runtime.distinct_threads = wasm.distinct_threads_used();
  runtime.isolated = isolated;
  playground = new wasm.Playground();
}

async function checkWebGpu() {
  if (!('gpu' in navigator)) return { available: false, reason: 'this browser has no WebGPU' };
  try {
    const report = await wasm.webgpu_check();
    // wgpu leaves the adapter name empty on the web; the browser's own info names it.
    const info = (await navigator.gpu.requestAdapter())?.info;
    const name = [info?.vendor, info?.architecture, info?.description].filter(Boolean).join(' ');
    return { available: true, ...report, adapter: { ...report.adapter, name: report.adapter.name || name } };
  } catch (error) {
    return { available: false, reason: message(error) };
  }
}

const baseName = (url) => decodeURIComponent(new URL(url, self.location.href).pathname.split('/').pop() || url);

// Runs `load` (which replaces the data only if it parses), remembers how to repeat it, and
// tells the page.
function adoptData(load) {
  if (anyRun()) throw new Error('training is running: cancel it before loading other data');
  const summary = load(playground);
  replayData = load;
  heldOut = null;
  return announceData(summary);
}

function announceData(summary) {
  const preview = playground.data_preview(100, 20);
  post('data', { summary, preview });
  post('model', { summary: modelSummary() });
  return summary;
}

function modelSummary() {
  return playground.model_summary?.() ?? null;
}



const training = createTrainingRun({
  get playground() { return playground; },
  post,
  cancelFlag,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
  modelSummary,
});

// The sparse autoencoder's run (issue 17): one family trains at a time; the shared commands
// (pause, resume, step, cancel) go to whichever is running.
const autoencoder = createAutoencoderRun({
  get playground() { return playground; },
  get wasm() { return wasm; },
  post,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
});
// Sparse coding's run (issue 18), the third family, alike.
const sparseCoding = createSparseCodingRun({
  get playground() { return playground; },
  get wasm() { return wasm; },
  post,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
});
// The Sequences mode's recurrent nets (issue 20), alike.
const sequences = createSequencesRun({
  get playground() { return playground; },
  get wasm() { return wasm; },
  post,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
});
// The Local RBM mode's local-patch layer (issue 19), alike.
const localRbm = createLocalRbmRun({
  get playground() { return playground; },
  get wasm() { return wasm; },
  post,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
});
const familyRuns = { autoencoder, sparse_coding: sparseCoding, sequences, local_rbm: localRbm };
// The family run in progress, if any (else the DBN's commands apply).
const activeFamily = () => Object.values(familyRuns).find((r) => r.active()) ?? null;
const anyRun = () => training.active() || !!activeFamily();

const core = {
  async loadDefault() {
    const [images, labels] = await Promise.all([
      fetchBytes('./data/mnist-default-images-idx3-ubyte.gz'),
      fetchBytes('./data/mnist-default-labels-idx1-ubyte.gz'),
    ]);
    return adoptData((p) => p.load_idx('mnist-default-images-idx3-ubyte.gz', images, 'mnist-default-labels-idx1-ubyte.gz', labels));
  },
  // { images: {name, buffer}, labels?: {name, buffer} } with transferred ArrayBuffers.
  async loadIdx({ images, labels }) {
    const imageBytes = new Uint8Array(images.buffer);
    const labelBytes = labels ? new Uint8Array(labels.buffer) : undefined;
    return adoptData((p) => p.load_idx(images.name, imageBytes, labels?.name, labelBytes));
  },
  // `maxBytes` may lower the download cap (a test hook), never raise it.
  async loadIdxUrl({ imagesUrl, labelsUrl, maxBytes = MAX_FETCH_BYTES }) {
    const cap = { maxBytes: Math.min(Number(maxBytes) || MAX_FETCH_BYTES, MAX_FETCH_BYTES) };
    const [images, labels] = await Promise.all([fetchBytes(imagesUrl, cap), labelsUrl ? fetchBytes(labelsUrl, cap) : null]);
    return adoptData((p) => p.load_idx(baseName(imagesUrl), images, labels ? baseName(labelsUrl) : undefined, labels ?? undefined));
  },
  async databaseColumns({ name, text }) {
    return playground.database_columns(name, text);
  },
  async loadDatabase({ name, text, inputs = [], targets = [] }) {
    return adoptData((p) => p.load_database(name, text, inputs, targets));
  },
  // `seed`: the page's seed, which draws the held-out cases of each class (or of the data
  // when they have no classes).
  async setHeldOut({ fraction, seed }) {
    if (anyRun()) throw new Error('training is running: cancel it before changing the held-out split');
    const summary = playground.set_held_out(fraction, seed ?? undefined);
    heldOut = { fraction, seed };
    return announceData(summary);
  },
  async dataPreview({ count = 100, columns = 20 }) {
    return playground.data_preview(count, columns);
  },
  async caseImages({ cases, columns = 10 }) {
    return playground.case_images(Uint32Array.from(cases), columns);
  },
  async train(args) {
    const family = familyRuns[args.config?.family];
    for (const other of Object.values(familyRuns)) if (other !== family) await other.cancel();
    if (family) {
      await training.cancel();
      return family.start(args);
    }
    return training.start(args);
  },
  pause: () => (activeFamily() ? activeFamily().pause() : training.pause()),
  resume: () => (activeFamily() ? activeFamily().resume() : training.resume()),
  stepBatch: () => (activeFamily() ? activeFamily().step() : training.stepBatch()),
  stepEpoch: () => (activeFamily() ? activeFamily().step() : training.stepEpoch()),
  cancel: () => (activeFamily() ? activeFamily().cancel() : training.cancel()),
  // A fresh engine state with the same data: the model, chains and history go.
  async reset() {
    await autoencoder.reset();
    await sparseCoding.reset();
    await sequences.reset();
    await localRbm.reset();
    await training.cancel();
    await training.finishedPromise();
    // The chains and the dream belong to the model that goes.
    await commands.chains_stop?.();
    await commands.dream_stop?.();
    const fresh = new wasm.Playground();
    if (replayData) {
      replayData(fresh);
      if (heldOut !== null) fresh.set_held_out(heldOut.fraction, heldOut.seed ?? undefined);
    }
    playground.free?.();
    playground = fresh;
    post('model', { summary: null });
    return { reset: true };
  },
  async status() {
    return { running: anyRun(), paused: training.paused() || !!activeFamily()?.paused(), runtime, webgpu };
  },
  // The family the page shows: the DBN's Gibbs chains and dream, hidden while another family
  // is shown, pause there (no work, no frames) and go on where they were when the DBN is back.
  async showFamily({ family }) {
    const held = !!family && family !== 'dbn';
    await commands.live_hold?.({ held });
    return { family, samplingPaused: held };
  },
};

// Files commands that www/worker/views.js (storage) may replace with its own.
const files = {
  async saveModel() {
    return playground.save_model();
  },
  async loadModel({ name, text }) {
    if (anyRun()) throw new Error('training is running: cancel it before loading a model');
    const summary = playground.load_model(name, text);
    post('model', { summary });
    return summary;
  },
  async modelSummary() {
    return modelSummary();
  },
};

let commands = { ...files, ...autoencoder.commands, ...sparseCoding.commands, ...sequences.commands, ...localRbm.commands, ...core };

const viewContext = {
  get playground() { return playground; },
  get wasm() { return wasm; },
  post,
  trainingOnGpu: () => training.onGpu(),
  isTraining: () => training.active(),
  isolated,
};

// The field a wasm error names ("learning_rate: expected …", "invalid setting
// supervised.momentum: …"), so the page can put the message next to that control.
function errorField(text) {
  const match = /^(?:invalid (?:setting|training settings:?) )?((?:supervised\.)?[a-z][a-z0-9_]*): /.exec(text);
  return match ? match[1] : undefined;
}

const engineReady = (async () => {
  await loadEngine();
  try {
    const views = await import('./worker/views.js');
    commands = { ...files, ...views.viewCommands(viewContext), ...autoencoder.commands, ...sparseCoding.commands, ...sequences.commands, ...localRbm.commands, ...core };
  } catch (error) {
    // Before the view handlers exist the page still trains; the views say they are missing.
    if (!/Failed to fetch|Cannot find module|error loading/i.test(message(error))) post('notice', { message: `view commands failed to load: ${message(error)}` });
  }
  webgpu = await checkWebGpu();
  post('ready', { runtime, webgpu, cancelFlag });
})();
engineReady.catch((error) => post('startup_failed', { message: message(error) }));

self.onmessage = async ({ data: { id, cmd, args } }) => {
  try {
    await engineReady;
    const handler = commands[cmd];
    if (!handler) throw new Error(`unknown command "${cmd}"`);
    const result = await handler(args ?? {});
    self.postMessage({ id, result });
  } catch (error) {
    const text = message(error);
    self.postMessage({ id, error: { message: text, field: error?.field ?? errorField(text) } });
  }
};

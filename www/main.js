// Page wiring: builds the `app` object (docs/PAGE.md, "Page"), mounts the panels, charts,
// views and storage, and restarts the engine when a cancel cannot reach it.
import { createRpc } from './rpc.js';
import { createHash } from './state.js';
import { mountData } from './panels/data.js';
import { mountModel } from './panels/model.js';
import { mountTraining } from './panels/training.js';
import { mountCharts } from './views/charts.js';
import { mountLayout } from './layout.js';

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const hash = createHash();
const rpc = createRpc(() => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' }));
let ready = null;
let markReady;
const resetReady = () => { ready = new Promise((resolve) => { markReady = resolve; }); };
resetReady();

export const app = {
  rpc: (cmd, args = {}, transfer = []) => rpc.call(cmd, args, transfer),
  on: rpc.on,
  emit: rpc.emit,
  hash,
  // { runtime, webgpu } once the engine has started.
  runtime: null,
  // The last DataSummary and ModelSummary the worker reported.
  data: null,
  model: null,
  running: false,
  paused: false,
  whenReady: () => ready,
  settings: () => model.pageConfig(),
  // The seed control's value (it also draws the held-out cases).
  seed: () => model.values().seed,
  // Every control's value, and setting them (a restored model's settings).
  settingValues: () => model.values(),
  applySettings: (values) => model.applySettings(values),
  // Test hook (not a setting, so not written back): destroy the WebGPU device after this many
  // GPU epochs, to exercise the fall-back to the CPU end to end.
  simulateGpuLossAfter: Number(hash.raw('simulate_gpu_loss')) || 0,
  // The most bytes a data URL may download (the worker's cap, 256 MiB); the test hook
  // max_fetch_bytes can only lower it.
  maxFetchBytes: Math.min(Number(hash.raw('max_fetch_bytes')) || 2 ** 28, 2 ** 28),
  cancel,
};
window.app = app;

app.on('ready', ({ runtime, webgpu, cancelFlag }) => {
  app.runtime = { runtime, webgpu };
  app.cancelFlag = cancelFlag ?? null;
  showRuntime();
  markReady(app.runtime);
});
app.on('startup_failed', ({ message }) => {
  $('status').textContent = `The engine failed to start: ${message}`;
  $('status').dataset.failed = 'true';
});
app.on('worker_error', ({ message }) => app.emit('notice', { message: `Engine error: ${message}` }));
app.on('data', ({ summary }) => { app.data = summary; });
app.on('model', ({ summary }) => { app.model = summary; });
app.on('state', ({ running, paused }) => { app.running = running; app.paused = paused; });
app.on('backend', (info) => showTrainingBackend(info));

function cpuDescription(runtime, threads = runtime.threads) {
  if (!runtime.threaded_build) return `single-threaded${runtime.isolated ? '' : ', page not cross-origin isolated'}`;
  return threads === 1 ? 'one thread of the threaded build' : `${threads} threads`;
}

const isSoftware = (webgpu) => webgpu.adapter?.device_type === 'Cpu' || /swiftshader|llvmpipe|lavapipe|warp/i.test(webgpu.adapter?.name || '');

// In words for the status line; the technical details (the start-up check of the GPU
// against the CPU) are in its tooltip.
function describeRuntime() {
  const { runtime, webgpu } = app.runtime;
  const cpu = runtime.threaded_build
    ? `${runtime.threads} CPU threads`
    : `a single-threaded CPU${runtime.isolated ? '' : ' (this page is not cross-origin isolated)'}`;
  const gpu = webgpu.available
    ? `WebGPU on ${webgpu.adapter.name || webgpu.adapter.driver || 'this GPU'}${isSoftware(webgpu) ? ' (a software GPU)' : ''}`
    : 'no WebGPU in this browser';
  return `${cpu} · ${gpu}`;
}

function runtimeDetails() {
  const { runtime, webgpu } = app.runtime;
  const cpu = runtime.threaded_build
    ? `CPU: threaded build, ${runtime.threads} workers (${runtime.distinct_threads} ran at start-up)`
    : `CPU: single-threaded build${runtime.isolated ? '' : ' (the page is not cross-origin isolated, so no shared memory for threads)'}`;
  const gpu = webgpu.available
    ? `WebGPU: ${webgpu.adapter.name || webgpu.adapter.driver || 'adapter'}; its start-up kernels matched the CPU to ${webgpu.max_abs_error.toExponential(1)}`
    : `WebGPU: not available (${webgpu.reason})`;
  return `${cpu}. ${gpu}.`;
}

function showRuntime() {
  const status = $('status');
  const { runtime, webgpu } = app.runtime;
  status.textContent = `Ready · ${describeRuntime()}`;
  status.title = runtimeDetails();
  status.dataset.threads = runtime.distinct_threads;
  status.dataset.threadedBuild = runtime.threaded_build;
  status.dataset.webgpu = webgpu.available;
}

// What actually trains and why, in the status line and next to the backend control.
function showTrainingBackend({ backend, adapter, threads, reason }) {
  const status = $('status');
  status.dataset.trainingBackend = backend;
  const where = backend === 'webgpu'
    ? `Training on WebGPU (${adapter})`
    : `Training on the CPU (${cpuDescription(app.runtime.runtime, threads)})`;
  status.textContent = where;
  status.title = `${reason ? `${reason}. ` : ''}${runtimeDetails()}`;
  app.emit('backend_shown', { text: `${where}${reason ? `: ${reason}` : ''}` });
}
app.on('finished', () => {
  const status = $('status');
  if (status.dataset.trainingBackend) status.textContent = status.textContent.replace(/^Training on/, 'Trained on');
});

// Cancel works at any time. Between training units the worker answers at once. A blocking
// supervised stage reads the shared flag when the page is cross-origin isolated; otherwise
// the worker cannot hear us, so it is replaced and the data and last saved model reloaded
// (storage listens for `worker_restarted`).
async function cancel() {
  if (app.cancelFlag) Atomics.store(app.cancelFlag, 0, 1);
  const reply = app.rpc('cancel').then(() => true, () => true);
  if (await Promise.race([reply, sleep(1500).then(() => false)])) return { restarted: false };
  // An autoencoder iteration or a sparse coding mini-batch always ends, and the worker hears
  // Cancel right after it.
  if (app.cancelFlag || (app.family && app.family !== 'dbn')) {
    await reply;
    return { restarted: false };
  }
  resetReady();
  // Nothing may start until the fresh engine has its data back.
  app.runtime = null;
  app.data = null;
  rpc.restart();
  app.emit('notice', { message: 'Cancelled: the engine was restarted; the data and the last saved model are reloaded.' });
  app.emit('state', { running: false, paused: false });
  app.emit('finished', { stopped: true, restarted: true });
  await ready;
  await dataPanel.reload();
  app.emit('worker_restarted', {});
  return { restarted: true };
}

const dataPanel = mountData($('data-panel'), app);
const model = mountModel($('model-panel'), app);
mountTraining($('training-panel'), app, model);
mountCharts($('charts-panel'), app, $('headline-charts'));

// The views and storage modules come from another part of the project; the page trains
// without them.
async function mountOptional(path, exportName, element) {
  try {
    const module = await import(path);
    await module[exportName](element, app);
  } catch (error) {
    if (!/Failed to fetch|error loading|Cannot find/i.test(String(error?.message))) console.warn(`${path}:`, error);
    if (element instanceof HTMLElement) element.dataset.unavailable = String(error?.message ?? error);
  }
}
const layout = mountLayout();
// A family switch shows other panels: the columns and pictures fit again.
app.on('family', () => layout.update());
// The worker hears which family shows (a fresh worker too): the DBN's chains and dream pause
// while the autoencoder does. body[data-dbn-sampling] is 'paused' or 'running' once it answered.
async function tellFamily() {
  const family = app.family;
  try {
    const { samplingPaused } = await app.rpc('showFamily', { family });
    if (family === app.family) document.body.dataset.dbnSampling = samplingPaused ? 'paused' : 'running';
  } catch (error) {
    app.emit('notice', { message: `The engine did not hear the family change: ${error.message}` });
  }
}
app.on('ready', tellFamily);
app.on('family', tellFamily);
Promise.all([
  mountOptional('./views/index.js', 'mountViews', { pictures: $('pictures'), more: $('views') }),
  mountOptional('./views/network.js', 'mountNetwork', $('network-drawing')),
  mountOptional('./views/autoencoder.js', 'mountAutoencoderViews', { pictures: $('pictures'), headline: $('headline-charts'), more: $('views') }),
  mountOptional('./views/sparse_coding.js', 'mountSparseCodingViews', { pictures: $('pictures'), headline: $('headline-charts'), more: $('views') }),
  mountOptional('./views/sequences.js', 'mountSequenceViews', { pictures: $('pictures'), headline: $('headline-charts'), more: $('views') }),
  mountOptional('./views/local_rbm.js', 'mountLocalRbmViews', { pictures: $('pictures'), headline: $('headline-charts'), more: $('views') }),
  mountOptional('./share.js', 'mountShare', $('share')),
  mountOptional('./storage.js', 'mountStorage', $('storage')),
]).then(layout.update);
// A link inside the page that changes the hash (the intro's "try this" links) is a new
// configuration: reload so every panel reads it. The page's own writes use replaceState,
// which fires no hashchange.
window.addEventListener('hashchange', () => location.reload());

ready.then(() => dataPanel.loadInitial());

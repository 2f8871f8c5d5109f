// Page wiring: settings form ⇄ URL hash, commands to the worker, worker reports to views.
import { readHash, writeHash } from './state.js';
import { drawImage } from './views/canvas.js';
import { ErrorChart } from './views/error-chart.js';

const $ = (id) => document.getElementById(id);
// Test hook (not a setting, so not written back to the hash): destroy the WebGPU device after
// this many GPU epochs, to exercise the fall-back to the CPU end to end.
const simulateGpuLossAfter = Number(new URLSearchParams(location.hash.slice(1)).get('simulate_gpu_loss')) || 0;

const fields = { hidden: $('hidden'), epochs: $('epochs'), lr: $('learning-rate'), batch: $('batch-size'), seed: $('seed'), backend: $('backend') };
const { settings, hidden } = readHash();
for (const [key, input] of Object.entries(fields)) input.value = settings[key];
for (const key of hidden) document.querySelectorAll(`[data-hide-key="${key}"]`).forEach((el) => el.setAttribute('data-hidden-by-hash', ''));

const chart = new ErrorChart($('error-chart'));
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
let totalEpochs = 0;
let runtimeInfo = null;
let webgpuInfo = null;

function currentSettings() {
  return Object.fromEntries(Object.entries(fields).map(([key, input]) => [key, key === 'backend' ? input.value : Number(input.value)]));
}

function adapterName(webgpu) {
  return webgpu?.adapter?.name || webgpu?.adapter?.driver || 'adapter';
}

// Auto takes WebGPU when a hardware adapter exists. A software one (SwiftShader, llvmpipe,
// WARP) runs the kernels on the CPU far slower than the CPU path itself, so Auto skips it;
// choosing WebGPU explicitly still uses it. WebGPU without any adapter says so next to the
// control and trains on the CPU.
function isSoftwareAdapter(webgpu) {
  return webgpu?.adapter?.device_type === 'Cpu' || /swiftshader|llvmpipe|lavapipe|warp/i.test(adapterName(webgpu));
}

function resolveBackend(choice) {
  const available = webgpuInfo?.available === true;
  if (choice === 'cpu') return { backend: 'cpu' };
  if (available && choice === 'auto' && isSoftwareAdapter(webgpuInfo)) return { backend: 'cpu' };
  if (available) return { backend: 'webgpu' };
  if (choice === 'webgpu') return { backend: 'cpu', error: `WebGPU is not available (${webgpuInfo?.reason || 'no adapter'}); training on the CPU instead.` };
  return { backend: 'cpu' };
}

function showBackendChoice() {
  if (!webgpuInfo) return;
  showError($('backend-error'), resolveBackend(fields.backend.value).error || '');
}
fields.backend.addEventListener('change', showBackendChoice);

function showNotice(message) {
  const notice = $('train-notice');
  notice.textContent = message;
  notice.hidden = !message;
}

function cpuDescription(runtime) {
  if (!runtime) return 'CPU';
  return runtime.threaded_build ? `${runtime.threads} threads` : 'single-threaded';
}

function showError(element, message) {
  element.textContent = message;
  element.hidden = !message;
}

$('settings').addEventListener('input', () => writeHash(currentSettings(), hidden));
$('settings').addEventListener('submit', (event) => {
  event.preventDefault();
  const s = currentSettings();
  if (!$('settings').reportValidity()) return;
  showError($('train-error'), '');
  showNotice('');
  const choice = resolveBackend(s.backend);
  showError($('backend-error'), choice.error || '');
  if (choice.error) showNotice('WebGPU is not available, so this run trains on the CPU.');
  chart.reset();
  $('epoch-log').replaceChildren();
  totalEpochs = s.epochs;
  $('progress').max = s.epochs;
  $('progress').value = 0;
  $('progress-text').textContent = `Training epoch 1 of ${s.epochs}…`;
  $('train').disabled = true;
  $('stop').disabled = false;
  writeHash(s, hidden);
  worker.postMessage({
    type: 'train',
    backend: choice.backend,
    simulateGpuLossAfter,
    // The quick-demo preset: Hinton's fixed schedule with a single initialisation trial.
    config: {
      layers: [s.hidden],
      rbm: {
        schedule: 'fixed', epochs: s.epochs, learning_rate: s.lr, batch_size: s.batch, seed: s.seed,
        initial_momentum: 0.5, final_momentum: 0.9, weight_penalty: 0.0002, cd_k_start: 1, cd_k_end: 1,
        sparsity_penalty: 0, init_trials: 1,
      },
      monitor_cases: 500,
    },
  });
});
$('stop').addEventListener('click', () => {
  worker.postMessage({ type: 'stop' });
  $('stop').disabled = true;
});

function describeRuntime(runtime, webgpu) {
  const cpu = runtime.threaded_build
    ? `CPU: threaded, ${runtime.threads} workers (${runtime.distinct_threads} ran)`
    : `CPU: single-threaded${runtime.isolated ? '' : ' (page not cross-origin isolated)'}`;
  const gpu = webgpu.available
    ? `WebGPU: available (${webgpu.adapter.name || webgpu.adapter.driver || 'adapter'}; check error ${webgpu.max_abs_error.toExponential(1)})`
    : `WebGPU: not available (${webgpu.reason})`;
  return `${cpu} · ${gpu}`;
}

function showTrainingBackend(backend, reason) {
  const status = $('status');
  status.dataset.trainingBackend = backend;
  const where = backend === 'webgpu'
    ? `Training on WebGPU (${adapterName(webgpuInfo)})`
    : `Training on the CPU (${cpuDescription(runtimeInfo)}${reason ? `; ${reason}` : ''})`;
  status.textContent = `${where} · ${describeRuntime(runtimeInfo, webgpuInfo)}`;
}

const handlers = {
  ready({ runtime, webgpu }) {
    runtimeInfo = runtime;
    webgpuInfo = webgpu;
    showBackendChoice();
    $('status').textContent = describeRuntime(runtime, webgpu);
    $('status').dataset.threads = runtime.distinct_threads;
    $('status').dataset.threadedBuild = runtime.threaded_build;
    $('status').dataset.webgpu = webgpu.available;
  },
  data({ summary, preview }) {
    const classes = summary.class_counts.length ? `, ${summary.class_counts.length} classes` : '';
    const shape = summary.image_shape ? ` (${summary.image_shape[0]}×${summary.image_shape[1]})` : '';
    $('data-summary').textContent = `${summary.name}: ${summary.n_cases.toLocaleString()} cases of ${summary.n_inputs} inputs${shape}${classes}`;
    drawImage($('data-preview'), preview);
    $('train').disabled = false;
  },
  backend({ backend, reason }) {
    showTrainingBackend(backend, reason);
  },
  notice({ message }) {
    showNotice(message);
  },
  epoch({ report, filters, samples, steps }) {
    chart.add(report.epoch, report.reconstruction_error);
    const item = document.createElement('li');
    item.dataset.epoch = report.epoch;
    item.dataset.error = report.reconstruction_error;
    item.textContent = `error ${report.reconstruction_error.toFixed(5)} · ${report.seconds.toFixed(2)} s · ${Math.round(report.cases_per_second).toLocaleString()} cases/s`;
    $('epoch-log').append(item);
    $('progress').value = report.epoch;
    $('progress-text').textContent = report.epoch < totalEpochs ? `Training epoch ${report.epoch + 1} of ${totalEpochs}…` : 'Finishing…';
    drawImage($('filters'), filters);
    drawImage($('samples'), samples);
    $('sample-steps').textContent = steps;
  },
  samples({ samples, steps }) {
    drawImage($('samples'), samples);
    $('sample-steps').textContent = steps;
  },
  done({ stopped }) {
    $('progress-text').textContent = stopped ? 'Stopped; the model trained so far is kept.' : 'Done. The Gibbs chains keep sampling from the model.';
    $('train').disabled = false;
    $('stop').disabled = true;
  },
  error({ where, message }) {
    const target = where === 'train' ? $('train-error') : where === 'startup' ? $('data-error') : $('train-error');
    showError(target, message);
    if (where === 'startup') $('status').textContent = `Engine failed to start: ${message}`;
    $('train').disabled = where === 'startup';
    $('stop').disabled = true;
  },
};

worker.onmessage = ({ data }) => handlers[data.type]?.(data);
worker.onerror = (event) => showError($('train-error'), `worker error: ${event.message}`);

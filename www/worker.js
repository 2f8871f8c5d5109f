// The Web Worker owns the wasm module (and through it any GPU device). The page only sends
// commands and draws what comes back, so training never blocks the UI.
//
// Build choice: the threaded package needs SharedArrayBuffer, which browsers only grant to
// cross-origin isolated pages; anywhere else (plain static servers, iframes) we load the
// single-threaded package. WebGPU works in both.

const isolated = self.crossOriginIsolated === true;
let wasm = null;
let playground = null;
let stopRequested = false;
let sampling = null;

const post = (type, body = {}) => self.postMessage({ type, ...body });
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

async function loadEngine() {
  wasm = isolated ? await import('./pkg-mt/deepbelief.js') : await import('./pkg/deepbelief.js');
  await wasm.default();
  if (isolated) await wasm.initThreadPool(navigator.hardwareConcurrency || 2);
  const runtime = wasm.runtime_info();
  runtime.distinct_threads = wasm.distinct_threads_used();
  runtime.isolated = isolated;
  playground = new wasm.Playground();
  return runtime;
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
    return { available: false, reason: String(error.message || error) };
  }
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function loadDefaultData() {
  const [images, labels] = await Promise.all([
    fetchBytes('./data/mnist-default-images-idx3-ubyte.gz'),
    fetchBytes('./data/mnist-default-labels-idx1-ubyte.gz'),
  ]);
  const summary = playground.load_idx('mnist-default-images-idx3-ubyte.gz', images, 'mnist-default-labels-idx1-ubyte.gz', labels);
  post('data', { summary, preview: playground.data_preview(100, 20) });
}

// Posts one epoch: the report, the first-layer filters and a few more Gibbs steps (on the
// WebGPU device while training runs there, else on the CPU).
async function postEpoch(event, state, config) {
  if (!state.chainsStarted) {
    playground.start_chains(10, true, BigInt(config.rbm.seed));
    state.chainsStarted = true;
  }
  let samples = null;
  if (state.useGpu) {
    try {
      samples = await playground.gpu_advance_chains(20, 10);
    } catch (error) {
      post('notice', { message: `Gibbs sampling on WebGPU failed (${String(error.message || error)}); sampling on the CPU` });
    }
  }
  if (!samples) samples = playground.advance_chains(20, 10);
  post('epoch', { layer: event.layer, report: event.report, filters: playground.filters_image(100, 10), samples, steps: Number(playground.chain_steps()) });
}

// The WebGPU device, created once per worker and reused across layers and runs. Resolves to
// the adapter summary, or throws when there is none.
let gpuSummary = null;
// Test hook: GPU epochs after which the device is destroyed (0: never).
let simulateGpuLossAfter = 0;
let gpuEpochsDone = 0;
async function connectGpu() {
  if (!gpuSummary) gpuSummary = await playground.gpu_connect();
  return gpuSummary;
}

// Trains the layer just started on the GPU, epoch by epoch. On a failed epoch the layer
// continues on the CPU from the last downloaded weights.
async function trainLayerOnGpu(state, config) {
  const reason = playground.gpu_begin_layer();
  if (reason) {
    gpuSummary = null; // the next run asks for the device again if this one lost it
    post('notice', { message: `This layer trains on the CPU: ${reason}` });
    post('backend', { backend: 'cpu', reason });
    return;
  }
  while (playground.gpu_layer_active()) {
    if (stopRequested) playground.cancel();
    if (!playground.gpu_layer_active()) break;
    let event;
    try {
      event = await playground.gpu_epoch();
    } catch (error) {
      const message = String(error.message || error);
      playground.gpu_fall_back();
      gpuSummary = null;
      state.useGpu = false;
      post('notice', { message: `WebGPU failed (${message}); continuing on the CPU` });
      post('backend', { backend: 'cpu', reason: 'WebGPU failed' });
      return;
    }
    await postEpoch(event, state, config);
    gpuEpochsDone += 1;
    if (gpuEpochsDone === simulateGpuLossAfter) playground.gpu_simulate_loss();
    await yieldToEvents();
  }
}

async function train(config, backend) {
  stopSampling();
  stopRequested = false;
  playground.start_training(config);
  const state = { chainsStarted: false, useGpu: false };
  if (backend === 'webgpu') {
    try {
      const adapter = await connectGpu();
      state.useGpu = true;
      post('backend', { backend: 'webgpu', adapter });
    } catch (error) {
      post('notice', { message: `WebGPU could not start (${String(error.message || error)}); training on the CPU` });
      post('backend', { backend: 'cpu', reason: 'WebGPU could not start' });
    }
  } else {
    post('backend', { backend: 'cpu' });
  }
  while (!playground.training_finished()) {
    if (stopRequested) playground.cancel();
    const event = playground.step();
    if (event.event === 'epoch') {
      await postEpoch(event, state, config);
    } else {
      post(event.event, event);
      if (event.event === 'layer_started' && state.useGpu) await trainLayerOnGpu(state, config);
    }
    await yieldToEvents();
  }
  post('done', { stopped: stopRequested });
  playground.start_chains(10, true, BigInt(config.rbm.seed));
  startSampling();
}

// After training the chains keep running so the samples can be watched evolving.
function startSampling() {
  const tick = () => {
    const samples = playground.advance_chains(5, 10);
    post('samples', { samples, steps: Number(playground.chain_steps()) });
    sampling = setTimeout(tick, 100);
  };
  sampling = setTimeout(tick, 100);
}

function stopSampling() {
  clearTimeout(sampling);
  sampling = null;
}

self.onmessage = async ({ data: message }) => {
  try {
    if (message.type === 'train') {
      simulateGpuLossAfter = message.simulateGpuLossAfter || 0;
      gpuEpochsDone = 0;
      await train(message.config, message.backend);
    }
    else if (message.type === 'stop') stopRequested = true;
  } catch (error) {
    post('error', { where: message.type, message: String(error.message || error) });
  }
};

(async () => {
  try {
    const runtime = await loadEngine();
    const webgpu = await checkWebGpu();
    post('ready', { runtime, webgpu });
    await loadDefaultData();
  } catch (error) {
    post('error', { where: 'startup', message: String(error.message || error) });
  }
})();

// The Web Worker owns the wasm module (and through it any GPU device). The page sends it
// commands and draws what comes back (docs/PAGE.md, "Worker protocol"), so training never
// blocks the UI.
//
// Build choice: the threaded package needs SharedArrayBuffer, which browsers only grant to
// cross-origin isolated pages; anywhere else (plain static servers, iframes) we load the
// single-threaded package. WebGPU works in both.
const isolated = self.crossOriginIsolated === true;
let wasm = null;
let playground = null;
let runtime = null;
let webgpu = null;
// Replays the last successful data load (and held-out split) into a fresh Playground (reset).
let replayData = null;
let heldOutFraction = null;
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

async function fetchBytes(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`${url}: could not be fetched (${message(error)}; the server must allow cross-origin requests)`);
  }
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
  return new Uint8Array(await response.arrayBuffer());
}

const baseName = (url) => decodeURIComponent(new URL(url, self.location.href).pathname.split('/').pop() || url);

// Runs `load` (which replaces the data only if it parses), remembers how to repeat it, and
// tells the page.
function adoptData(load) {
  if (training.active()) throw new Error('training is running: cancel it before loading other data');
  const summary = load(playground);
  replayData = load;
  heldOutFraction = null;
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


const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

// Auto takes WebGPU when a hardware adapter exists. A software one (SwiftShader, llvmpipe,
// WARP) runs the kernels on the CPU far slower than the CPU path itself, so Auto skips it;
// choosing WebGPU explicitly still uses it.
function adapterName(info) {
  return info?.adapter?.name || info?.adapter?.driver || 'adapter';
}
function isSoftwareAdapter(info) {
  return info?.adapter?.device_type === 'Cpu' || /swiftshader|llvmpipe|lavapipe|warp/i.test(adapterName(info));
}

// The training run: RBM layers unit by unit (yielding between units so pause, step and
// cancel interleave), WebGPU layers epoch by epoch, then the blocking supervised stage.
function createTrainingRun(env) {
  let run = null;
  let gpuEpochsDone = 0;
  let wake = null;

  const playground = () => env.playground;
  // Units never overlap: a step command waits for the loop's unit in flight (a GPU epoch).
  let lock = Promise.resolve();
  const exclusive = (fn) => {
    const next = lock.then(fn);
    lock = next.catch(() => {});
    return next;
  };
  const postState = () => env.post('state', { running: !!run?.active, paused: !!run?.paused, stage: run?.stage ?? null });
  const wakeLoop = () => { wake?.(); wake = null; };

  // 1: the CPU engine on one thread; 0: every pool thread. The threaded build cannot get
  // its pool back after 1 (rayon), so a later "CPU threads" run says it stays on one thread.
  function setThreads(n) {
    if (typeof playground().set_cpu_threads !== 'function') return { threads: env.runtime.threads };
    try {
      return { threads: playground().set_cpu_threads(n) };
    } catch (error) {
      return { threads: 1, note: 'this worker already runs the CPU on one thread (reload the page for every thread)' };
    }
  }

  async function chooseBackend(choice) {
    const { threads, note } = setThreads(choice === 'cpu1' ? 1 : 0);
    const cpu = (reason) => ({ backend: 'cpu', threads, reason: note ? `${reason}; ${note}` : reason });
    if (choice === 'cpu' || choice === 'cpu1') return cpu(choice === 'cpu1' ? 'CPU single-threaded was chosen' : 'CPU was chosen');
    if (!env.webgpu?.available) return cpu(`WebGPU is not available (${env.webgpu?.reason || 'no adapter'})`);
    if (choice === 'auto' && isSoftwareAdapter(env.webgpu)) return cpu(`Auto skips the software WebGPU adapter (${adapterName(env.webgpu)}), which is slower than the CPU`);
    try {
      await playground().gpu_connect(); // creates the device once; later calls reuse it
      return { backend: 'webgpu', adapter: adapterName(env.webgpu), threads };
    } catch (error) {
      return cpu(`WebGPU could not start (${message(error)})`);
    }
  }

  function postGreedy(event) {
    const { event: name, ...body } = event;
    if (name === 'finished') return;
    env.post(name, body);
  }

  // Moves the layer just started onto the GPU; on refusal it stays on the CPU.
  function beginGpuLayer() {
    const reason = playground().gpu_begin_layer();
    if (!reason) return;
    run.useGpu = false;
    env.post('notice', { message: `This layer trains on the CPU: ${reason}` });
    env.post('backend', { backend: 'cpu', threads: run.threads, reason });
  }

  async function gpuEpoch() {
    let event;
    try {
      event = await playground().gpu_epoch();
    } catch (error) {
      playground().gpu_fall_back();
      run.useGpu = false;
      env.post('notice', { message: `WebGPU failed (${message(error)}); continuing on the CPU` });
      env.post('backend', { backend: 'cpu', threads: run.threads, reason: 'WebGPU failed' });
      return 'fell_back';
    }
    postGreedy(event);
    gpuEpochsDone += 1;
    if (gpuEpochsDone === run.simulateGpuLossAfter) playground().gpu_simulate_loss();
    return 'epoch';
  }

  // One unit of greedy work: a layer's initialisation, one epoch, or closing a layer.
  async function runUnit() {
    if (run.useGpu && playground().gpu_layer_active()) return gpuEpoch();
    const event = playground().step();
    postGreedy(event);
    if (event.event === 'layer_started' && run.useGpu) beginGpuLayer();
    return event.event;
  }

  // After Cancel: the layer in training stops where it is and joins the model.
  function closeCurrentLayer() {
    playground().cancel();
    for (let guard = 0; guard < 4 && !playground().training_finished(); guard += 1) {
      const event = playground().step();
      postGreedy(event);
      if (event.event === 'layer_finished') break;
    }
  }

  function runSupervised() {
    if (!playground().supervised_pending?.()) return;
    run.stage = 'supervised';
    postState();
    env.post('model', { summary: env.modelSummary() }); // the RBM stack, kept if the stage is cancelled
    if (env.cancelFlag) Atomics.store(env.cancelFlag, 0, 0);
    const summary = playground().train_supervised((progress) => env.post('supervised_progress', progress), env.cancelFlag ?? undefined);
    env.post('supervised_done', { summary });
    if (summary?.stopped) run.stopRequested = true; // the shared cancel flag ended the stage
  }

  async function loop() {
    try {
      while (!run.stopRequested && !playground().training_finished()) {
        if (run.paused) {
          await new Promise((resolve) => { wake = resolve; });
          continue;
        }
        await exclusive(runUnit);
        await yieldToEvents();
      }
      if (run.stopRequested) closeCurrentLayer();
      else runSupervised();
    } catch (error) {
      env.post('notice', { message: `Training stopped: ${message(error)}` });
      run.failed = message(error);
    }
    const stopped = run.stopRequested || !!run.failed;
    run.active = false;
    run.paused = false;
    run.stage = null;
    env.post('finished', { stopped, error: run.failed ?? null });
    env.post('model', { summary: env.modelSummary() });
    postState();
    run.done();
  }

  function requireRun(what) {
    if (!run?.active) throw new Error(`${what}: no training is running (press Start)`);
  }

  return {
    active: () => !!run?.active,
    paused: () => !!run?.paused,
    onGpu: () => !!run?.active && run.useGpu && playground().gpu_layer_active(),
    finishedPromise: () => run?.finished ?? Promise.resolve(),
    // { config: PageConfig, backend, paused?, simulateGpuLossAfter? } → Plan. A run in
    // progress is cancelled first.
    async start({ config, backend = 'auto', paused = false, simulateGpuLossAfter = 0 }) {
      if (run?.active) {
        run.stopRequested = true;
        wakeLoop();
        await run.finished;
      }
      const plan = playground().start_training(config);
      let done;
      run = { active: true, paused, stopRequested: false, useGpu: false, stage: 'rbm', simulateGpuLossAfter, finished: new Promise((r) => { done = r; }) };
      run.done = done;
      gpuEpochsDone = 0;
      env.post('plan', plan);
      const chosen = await chooseBackend(backend);
      run.useGpu = chosen.backend === 'webgpu';
      run.threads = chosen.threads;
      env.post('backend', chosen);
      postState();
      loop();
      return plan;
    },
    pause() {
      requireRun('pause');
      run.paused = true;
      postState();
      return { paused: true };
    },
    resume() {
      requireRun('resume');
      run.paused = false;
      wakeLoop();
      postState();
      return { paused: false };
    },
    // One mini-batch; a layer on the GPU first moves to the CPU exactly (its checkpoint).
    async stepBatch() {
      requireRun('step batch');
      if (!run.paused) this.pause();
      if (playground().training_finished()) throw new Error('step batch: every RBM layer has finished (press Resume for the rest)');
      if (typeof playground().step_batch !== 'function') throw new Error('step batch: this engine build has no step_batch');
      return exclusive(() => {
        const event = playground().step_batch();
        postGreedy(event);
        if (event.event === 'layer_started' && run.useGpu) beginGpuLayer();
        return event;
      });
    },
    // Greedy units up to and including the next epoch.
    async stepEpoch() {
      requireRun('step epoch');
      if (!run.paused) this.pause();
      for (let guard = 0; guard < 4 && !playground().training_finished(); guard += 1) {
        const kind = await exclusive(runUnit);
        if (kind === 'epoch') return { event: 'epoch' };
      }
      return { event: playground().training_finished() ? 'finished' : 'layer' };
    },
    async cancel() {
      if (!run?.active) return { stopped: false };
      run.stopRequested = true;
      if (env.cancelFlag) Atomics.store(env.cancelFlag, 0, 1);
      playground().cancel();
      wakeLoop();
      await run.finished;
      return { stopped: true };
    },
  };
}

const training = createTrainingRun({
  get playground() { return playground; },
  post,
  cancelFlag,
  get runtime() { return runtime; },
  get webgpu() { return webgpu; },
  modelSummary,
});

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
  async loadIdxUrl({ imagesUrl, labelsUrl }) {
    const [images, labels] = await Promise.all([fetchBytes(imagesUrl), labelsUrl ? fetchBytes(labelsUrl) : null]);
    return adoptData((p) => p.load_idx(baseName(imagesUrl), images, labels ? baseName(labelsUrl) : undefined, labels ?? undefined));
  },
  async databaseColumns({ name, text }) {
    return playground.database_columns(name, text);
  },
  async loadDatabase({ name, text, inputs = [], targets = [] }) {
    return adoptData((p) => p.load_database(name, text, inputs, targets));
  },
  async setHeldOut({ fraction }) {
    if (training.active()) throw new Error('training is running: cancel it before changing the held-out split');
    const summary = playground.set_held_out(fraction);
    heldOutFraction = fraction;
    return announceData(summary);
  },
  async dataPreview({ count = 100, columns = 20 }) {
    return playground.data_preview(count, columns);
  },
  async caseImages({ cases, columns = 10 }) {
    return playground.case_images(Uint32Array.from(cases), columns);
  },
  train: (args) => training.start(args),
  pause: () => training.pause(),
  resume: () => training.resume(),
  stepBatch: () => training.stepBatch(),
  stepEpoch: () => training.stepEpoch(),
  cancel: () => training.cancel(),
  // A fresh engine state with the same data: the model, chains and history go.
  async reset() {
    await training.cancel();
    await training.finishedPromise();
    const fresh = new wasm.Playground();
    if (replayData) {
      replayData(fresh);
      if (heldOutFraction !== null) fresh.set_held_out(heldOutFraction);
    }
    playground.free?.();
    playground = fresh;
    post('model', { summary: null });
    return { reset: true };
  },
  async status() {
    return { running: training.active(), paused: training.paused(), runtime, webgpu };
  },
};

// Files commands that www/worker/views.js (storage) may replace with its own.
const files = {
  async saveModel() {
    return playground.save_model();
  },
  async loadModel({ name, text }) {
    if (training.active()) throw new Error('training is running: cancel it before loading a model');
    const summary = playground.load_model(name, text);
    post('model', { summary });
    return summary;
  },
  async modelSummary() {
    return modelSummary();
  },
};

let commands = { ...files, ...core };

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
    commands = { ...files, ...views.viewCommands(viewContext), ...core };
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

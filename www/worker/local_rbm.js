// The Local RBM mode's run in the worker (issue 19): a wasm LocalRbmTrainer
// (src/web/local_rbm.rs) trains a local-patch RBM layer, or a greedy stack of them, an epoch
// per `step()` (CD-1 on WebGPU where the engine has it, else the CPU; a lost device hands the
// run to the CPU; the next layer starts when one is done), yielding between epochs so Pause,
// Step and Cancel interleave; plus the filters view command. `worker.js` creates one with
// `createLocalRbmRun(env)`.
//
// Events: `lr_started {backend, backend_reason, source, positions, positions_side, hidden_units,
// weights, parameters, cases, epochs, total_epochs, stack, layers: [...]}`, `lr_epoch {layer,
// layers, epoch, epochs, total_epoch, total_epochs, reconstruction_error, seconds, backend,
// backend_reason, started_layer, layer_done, done}` after each epoch (`layer` 0-based),
// `lr_model {summary | null}`; and the shared `state` (stage 'local_rbm'), `busy`, `backend`,
// `notice` and `finished {stopped, error, family: 'local_rbm'}`.

const message = (error) => String(error?.message ?? error);
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

export function createLocalRbmRun(env) {
  let trainer = null;
  let info = null;
  let run = null;
  let wake = null;
  // Chunks and the view reads never overlap (the trainer refuses a second call in flight).
  let lock = Promise.resolve();
  const exclusive = (fn) => {
    const next = lock.then(fn);
    lock = next.catch(() => {});
    return next;
  };
  const postState = () => env.post('state', { running: !!run?.active, paused: !!run?.paused, stage: run?.active ? 'local_rbm' : null });
  const wakeLoop = () => { wake?.(); wake = null; };
  const adapterName = () => env.webgpu?.adapter?.name || env.webgpu?.adapter?.driver || 'adapter';

  function requireRun(what) {
    if (!run?.active) throw new Error(`${what}: no training is running (press Start)`);
  }
  function requireTrainer(what) {
    if (!trainer || !info) throw new Error(`${what}: no local RBM yet (press Start)`);
    return trainer;
  }

  async function epochOnce(current) {
    let result;
    const below = current.last;
    if (below?.layer_done && !below.done) env.post('busy', { message: `Propagating the crops through layer ${below.layer + 1} and drawing layer ${below.layer + 2}…` });
    try {
      result = await exclusive(() => {
        if (current.loseGpuAfter > 0 && current.epochs === current.loseGpuAfter) trainer.simulate_gpu_loss?.();
        return trainer.step();
      });
    } catch (error) {
      current.failed = message(error);
      current.stopRequested = true;
      wakeLoop();
      throw error;
    }
    current.epochs += 1;
    const onGpu = result.backend === 'gpu';
    if (onGpu !== current.onGpu) {
      // A lost device, or a layer above that the device cannot hold (or that it can).
      current.onGpu = onGpu;
      if (!onGpu) env.post('notice', { message: result.started_layer ? `Layer ${result.layer + 1} trains on the CPU: ${result.backend_reason}` : `WebGPU failed; ${result.backend_reason}` });
      env.post('backend', { backend: onGpu ? 'webgpu' : 'cpu', adapter: onGpu ? adapterName() : undefined, threads: env.runtime?.threads, reason: (!onGpu && result.backend_reason) || undefined });
    }
    current.last = result;
    env.post('lr_epoch', result);
    if (result.done) {
      current.finishedEpochs = true;
      wakeLoop();
    }
    return result;
  }

  async function loop(current) {
    try {
      env.post('busy', { message: 'Cutting the crops and drawing the layer…' });
      info = await exclusive(() => trainer.start());
      env.post('lr_started', info);
      env.post('lr_model', { summary: info });
      current.onGpu = info.backend === 'gpu';
      env.post('backend', { backend: current.onGpu ? 'webgpu' : 'cpu', adapter: current.onGpu ? adapterName() : undefined, threads: env.runtime?.threads, reason: info.backend_reason || undefined });
      current.started = true;
      while (!current.stopRequested && !current.finishedEpochs) {
        if (current.paused) {
          await new Promise((resolve) => { wake = resolve; });
          continue;
        }
        await epochOnce(current);
        await yieldToEvents();
      }
    } catch (error) {
      current.failed ??= message(error);
    }
    if (current.failed) env.post('notice', { message: `Training stopped: ${current.failed}` });
    current.active = false;
    current.paused = false;
    env.post('finished', { stopped: current.stopRequested || !!current.failed, error: current.failed ?? null, family: 'local_rbm' });
    postState();
    current.resolve();
  }

  const cancel = async () => {
    if (!run?.active) return { stopped: false };
    run.stopRequested = true;
    wakeLoop();
    await run.finished;
    return { stopped: true };
  };

  const pause = () => {
    requireRun('pause');
    run.paused = true;
    postState();
    return { paused: true };
  };

  const commands = {
    // The filters per patch position of `layer` (0-based; the first when absent) as RGBA
    // {width, height, data}: a grid of the positions, each cell the first `perPosition` filters
    // of that position (one cell when shared); above the first layer projected to the image.
    lr_filters: async ({ perPosition = 9, layer = 0 } = {}) => exclusive(() => requireTrainer('filters').layer_filters(layer, perPosition)),
    // The reconstruction error per epoch of `layer` (0-based), or of every layer in order.
    lr_errors: async ({ layer } = {}) => Array.from(layer === undefined ? requireTrainer('errors').errors() : requireTrainer('errors').layer_errors(layer)),
    // The layers as the CLI's local_rbm.bin (bytes), each as of its last finished epoch.
    lr_model_file: async () => exclusive(() => requireTrainer('save model').model_file()),
    lr_status: async () => ({ running: !!run?.active, paused: !!run?.paused, summary: info }),
  };

  return {
    commands,
    active: () => !!run?.active,
    paused: () => !!run?.paused,
    // { config: { family: 'local_rbm', local_rbm: config }, paused?, simulateGpuLossAfter? }
    // → { family, steps }. A bad setting throws (naming the field) before anything changes.
    async start({ config, paused = false, simulateGpuLossAfter = 0 }) {
      if (typeof env.wasm?.LocalRbmTrainer !== 'function') throw new Error('this build of the engine has no local RBMs (rebuild the wasm packages: npm start)');
      await cancel();
      const settings = { ...(config.local_rbm ?? {}) };
      const adapter = env.webgpu?.available ? (env.webgpu.adapter?.name || env.webgpu.adapter?.driver) : '';
      if (adapter) settings.adapter_name = adapter;
      const fresh = new env.wasm.LocalRbmTrainer(env.playground, settings);
      await exclusive(() => {
        trainer?.free?.();
        trainer = fresh;
        info = null;
      });
      env.post('lr_model', { summary: null });
      let resolve;
      run = {
        active: true, paused, stopRequested: false, finishedEpochs: false, started: false, onGpu: false, epochs: 0,
        loseGpuAfter: Number(simulateGpuLossAfter) || 0, finished: new Promise((r) => { resolve = r; }),
      };
      run.resolve = resolve;
      postState();
      loop(run);
      return { family: 'local_rbm', steps: [{ kind: 'local_rbm', label: 'Local RBM' }] };
    },
    pause,
    resume() {
      requireRun('resume');
      run.paused = false;
      wakeLoop();
      postState();
      return { paused: false };
    },
    // One epoch (pauses first); after a layer's last, the first of the layer above.
    async step() {
      requireRun('step');
      if (!run.paused) pause();
      const current = run;
      while (!current.started && current.active) await yieldToEvents();
      if (!current.active || current.finishedEpochs) throw new Error('step: the run has ended');
      return epochOnce(current);
    },
    cancel,
    async reset() {
      await cancel();
      await exclusive(() => {
        trainer?.free?.();
        trainer = null;
        info = null;
      });
      env.post('lr_model', { summary: null });
    },
  };
}

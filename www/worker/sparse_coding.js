// Sparse coding's run in the worker (issue 18): a wasm SparseCodingTrainer
// (src/web/sparse_coding.rs) driven one `step()` (one mini-batch: its code step and basis step)
// at a time, yielding between steps so Pause, Step and Cancel interleave, plus the view
// commands that read the trainer. The trainer of the last run stays after it ends (its views,
// Save model) until the next Start or Reset. `worker.js` creates one with
// `createSparseCodingRun(env)`; `env` gives the wasm module, the Playground (whose loaded data
// the trainer cuts its patches from), `post`, the runtime and WebGPU info.
//
// Events: `sc_started {backend, backend_reason, beta, beta_search, objective, nonzero_fraction,
// n_inputs, n_bases, cases, tile, patch, batches, passes, sparsity, seconds}` once β is chosen
// and the session started, `sc_step {pass, batch, batches, passes, step, objective,
// objective_after_codes, nonzero_fraction, batch_nonzero_fraction, code_iterations,
// basis_iterations, seconds, done, backend}` after each mini-batch, `sc_model {summary | null}`
// when a trainer comes or goes; and the shared `state` (stage 'sparse_coding'), `busy`,
// `backend`, `notice` and `finished {stopped, error, family: 'sparse_coding'}`.

const message = (error) => String(error?.message ?? error);
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

export function createSparseCodingRun(env) {
  let trainer = null;
  // What start() answered for the current trainer (null before it has).
  let info = null;
  let run = null;
  let wake = null;

  // Start and step never overlap (the trainer refuses a second step in flight). The view
  // commands are synchronous reads of the trainer's snapshot of its last step, so they answer
  // at once, even while a device step is awaited.
  let lock = Promise.resolve();
  const exclusive = (fn) => {
    const next = lock.then(fn);
    lock = next.catch(() => {});
    return next;
  };
  const postState = () => env.post('state', { running: !!run?.active, paused: !!run?.paused, stage: run?.active ? 'sparse_coding' : null });
  const wakeLoop = () => { wake?.(); wake = null; };
  const summary = () => (trainer && info
    ? { n_inputs: info.n_inputs, n_bases: info.n_bases, cases: info.cases, tile: info.tile, patch: info.patch, beta: info.beta, backend: info.backend }
    : null);

  function requireRun(what) {
    if (!run?.active) throw new Error(`${what}: no training is running (press Start)`);
  }
  function requireTrainer(what) {
    if (!trainer || !info) throw new Error(`${what}: no sparse coding basis yet (press Start)`);
    return trainer;
  }

  // One mini-batch; posts its event. The trainer keeps the basis and codes of the last good
  // step through a failed one: a step that failed on the device is taken again on the CPU (the
  // session's rule), with a notice; any other failure ends the run, the basis kept for its
  // views and Save model.
  async function stepOnce(current) {
    let result;
    try {
      result = await exclusive(async () => {
        if (current.onGpu && current.loseGpuAfter > 0 && current.deviceSteps >= current.loseGpuAfter) trainer.simulate_gpu_loss?.();
        return trainer.step();
      });
    } catch (error) {
      if (current.onGpu) {
        current.onGpu = false;
        env.post('notice', { message: `WebGPU failed (${message(error)}); continuing on the CPU from the last mini-batch.` });
        env.post('backend', { backend: 'cpu', threads: env.runtime?.threads, reason: `WebGPU failed: ${message(error)}` });
        return null;
      }
      current.failed = message(error);
      current.stopRequested = true;
      wakeLoop();
      throw error;
    }
    if (current.onGpu) current.deviceSteps += 1;
    if (current.onGpu && result.backend === 'cpu') {
      current.onGpu = false;
      env.post('backend', { backend: 'cpu', threads: env.runtime?.threads, reason: result.backend_reason || undefined });
    }
    env.post('sc_step', result);
    if (result.done) {
      current.done = true;
      wakeLoop();
    }
    return result;
  }

  async function loop(current, config) {
    try {
      const gpu = config.backend !== 'cpu' && env.webgpu?.available;
      const beta = config.beta ? '' : ` and choosing β for ${Math.round(1000 * (config.sparsity ?? 0.05)) / 10}% non-zero codes`;
      env.post('busy', { message: `Cutting the patches${beta}${gpu ? ' (on WebGPU the kernels compile first)' : ''}…` });
      info = await exclusive(() => trainer.start());
      env.post('sc_started', info);
      env.post('sc_model', { summary: summary() });
      const onGpu = info.backend === 'gpu';
      current.onGpu = onGpu;
      const adapter = env.webgpu?.adapter?.name || env.webgpu?.adapter?.driver || 'adapter';
      env.post('backend', { backend: onGpu ? 'webgpu' : 'cpu', adapter: onGpu ? adapter : undefined, threads: env.runtime?.threads, reason: info.backend_reason || undefined });
      current.started = true;
      while (!current.stopRequested && !current.done) {
        if (current.paused) {
          await new Promise((resolve) => { wake = resolve; });
          continue;
        }
        await stepOnce(current);
        await yieldToEvents();
      }
    } catch (error) {
      current.failed ??= message(error);
    }
    if (current.failed) env.post('notice', { message: `Training stopped: ${current.failed}` });
    current.active = false;
    current.paused = false;
    env.post('finished', { stopped: current.stopRequested || !!current.failed, error: current.failed ?? null, family: 'sparse_coding' });
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
    // Images and figures of the current trainer, for the views.
    sc_bases: async ({ maxTiles = 400 } = {}) => requireTrainer('bases').bases(maxTiles),
    sc_histogram: async ({ bins = 41 } = {}) => requireTrainer('code histogram').code_histogram(bins),
    sc_reconstructions: async ({ count = 10 } = {}) => requireTrainer('reconstructions').reconstructions(count),
    sc_model_json: async () => requireTrainer('save model').model_json(),
    sc_status: async () => ({ running: !!run?.active, paused: !!run?.paused, summary: summary() }),
  };

  return {
    commands,
    active: () => !!run?.active,
    paused: () => !!run?.paused,
    // { config: { family: 'sparse_coding', sparse_coding }, paused?, simulateGpuLossAfter? } →
    // { family, steps }. A bad setting throws (naming the field) before anything changes: the
    // last trainer stays. `simulateGpuLossAfter` (a test hook): the device is destroyed after
    // that many device steps.
    async start({ config, paused = false, simulateGpuLossAfter = 0 }) {
      if (typeof env.wasm?.SparseCodingTrainer !== 'function') throw new Error('this build of the engine has no sparse coding (rebuild the wasm packages: npm start)');
      await cancel();
      const settings = { ...(config.sparse_coding ?? {}) };
      // Auto skips a software adapter, which only the browser can name.
      const adapter = env.webgpu?.available ? (env.webgpu.adapter?.name || env.webgpu.adapter?.driver) : '';
      if (adapter) settings.adapter_name = adapter;
      const fresh = new env.wasm.SparseCodingTrainer(env.playground, settings);
      await exclusive(() => {
        trainer?.free?.();
        trainer = fresh;
        info = null;
      });
      env.post('sc_model', { summary: null });
      let resolve;
      run = {
        active: true, paused, stopRequested: false, done: false, started: false, onGpu: false, deviceSteps: 0,
        loseGpuAfter: Number(simulateGpuLossAfter) || 0, finished: new Promise((r) => { resolve = r; }),
      };
      run.resolve = resolve;
      postState();
      loop(run, settings);
      return { family: 'sparse_coding', steps: [{ kind: 'sparse_coding', label: 'Sparse coding' }] };
    },
    pause,
    resume() {
      requireRun('resume');
      run.paused = false;
      wakeLoop();
      postState();
      return { paused: false };
    },
    // One mini-batch (pauses first).
    async step() {
      requireRun('step');
      if (!run.paused) pause();
      const current = run;
      while (!current.started && current.active) await yieldToEvents();
      if (!current.active || current.done) throw new Error('step: the run has ended');
      return stepOnce(current);
    },
    cancel,
    // Forgets the trainer (the DBN's reset goes on in worker.js).
    async reset() {
      await cancel();
      await exclusive(() => {
        trainer?.free?.();
        trainer = null;
        info = null;
      });
      env.post('sc_model', { summary: null });
    },
  };
}

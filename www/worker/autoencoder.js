// The sparse autoencoder's run in the worker (issue 17): a wasm AutoencoderTrainer
// (src/web/autoencoder.rs) driven one `step()` at a time, yielding between iterations so
// Pause, Step and Cancel interleave, plus the view commands that read the trainer. The
// trainer of the last run stays after it ends (its views, Save model) until the next Start
// or Reset. `worker.js` creates one with `createAutoencoderRun(env)`; `env` gives the wasm
// module, the Playground (whose loaded data the trainer copies), `post`, the runtime and
// WebGPU info.
//
// Events: `ae_started {backend, backend_reason, cost, n_visible, n_hidden, cases, iterations,
// sparsity}` once the first cost is known, `ae_iteration {iteration, iterations, cost,
// evaluations, seconds, done, stop, sparsity}` after each iteration (`sparsity`: the trainer's
// `{rho, rho_hat}` at that point, or null), `ae_model {summary | null}` when a trainer comes or goes;
// and the shared `state` (stage 'autoencoder'), `busy`, `backend`, `notice` and `finished
// {stopped, error, family: 'autoencoder'}`.

const message = (error) => String(error?.message ?? error);
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));
// The contract's defaults (UFLDL's exercise), for a config that leaves them out.
const DEFAULT_ITERATIONS = 400;

export function createAutoencoderRun(env) {
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
  const postState = () => env.post('state', { running: !!run?.active, paused: !!run?.paused, stage: run?.active ? 'autoencoder' : null });
  const wakeLoop = () => { wake?.(); wake = null; };
  const summary = () => (trainer && info ? { n_visible: info.n_visible, n_hidden: info.n_hidden, cases: info.cases, backend: info.backend } : null);

  // ρ̂ travels with each event, so the plot shows exactly the start and every iteration.
  const sparsityNow = () => {
    try {
      return trainer.sparsity();
    } catch {
      return null;
    }
  };

  function requireRun(what) {
    if (!run?.active) throw new Error(`${what}: no training is running (press Start)`);
  }
  function requireTrainer(what) {
    if (!trainer || !info) throw new Error(`${what}: no autoencoder yet (press Start)`);
    return trainer;
  }

  // One iteration; posts its event. The trainer keeps its last good parameters through a
  // failed step, so nothing trained is lost: a step that failed on the device goes on on the
  // CPU (the trainer's rule), with a notice; any other failure ends the run, the model kept
  // for its views and Save model.
  async function iterate(current) {
    let result;
    try {
      result = await exclusive(async () => {
        if (current.onGpu && current.loseGpuAfter > 0 && current.deviceSteps >= current.loseGpuAfter) trainer.simulate_gpu_loss?.();
        return { ...(await trainer.step()), sparsity: sparsityNow() };
      });
    } catch (error) {
      if (current.onGpu) {
        current.onGpu = false;
        env.post('notice', { message: `WebGPU failed (${message(error)}); continuing on the CPU from the last iteration.` });
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
    env.post('ae_iteration', { ...result, iterations: current.iterations });
    if (result.done) {
      current.done = true;
      wakeLoop();
    }
    return result;
  }

  async function loop(current, config) {
    try {
      const gpu = config.backend !== 'cpu' && env.webgpu?.available;
      env.post('busy', { message: gpu ? 'Preparing the autoencoder (on WebGPU its kernels compile first)…' : 'Preparing the autoencoder…' });
      let sparsity;
      info = await exclusive(async () => {
        const started = await trainer.start();
        sparsity = sparsityNow();
        return started;
      });
      env.post('ae_started', { ...info, iterations: current.iterations, sparsity });
      env.post('ae_model', { summary: summary() });
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
        await iterate(current);
        await yieldToEvents();
      }
    } catch (error) {
      current.failed ??= message(error);
    }
    if (current.failed) env.post('notice', { message: `Training stopped: ${current.failed}` });
    current.active = false;
    current.paused = false;
    env.post('finished', { stopped: current.stopRequested || !!current.failed, error: current.failed ?? null, family: 'autoencoder' });
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
    ae_filters: async ({ maxTiles = 400 } = {}) => requireTrainer('filters').filters(maxTiles),
    ae_sparsity: async () => requireTrainer('sparsity').sparsity(),
    ae_reconstructions: async ({ count = 10 } = {}) => requireTrainer('reconstructions').reconstructions(count),
    ae_model_json: async () => requireTrainer('save model').model_json(),
    ae_status: async () => ({ running: !!run?.active, paused: !!run?.paused, summary: summary() }),
  };

  return {
    commands,
    active: () => !!run?.active,
    paused: () => !!run?.paused,
    // { config: { family: 'autoencoder', autoencoder }, paused?, simulateGpuLossAfter? } →
    // { family, steps }. A bad setting throws (naming the field) before anything changes: the
    // last trainer stays. `simulateGpuLossAfter` (a test hook): the device is destroyed after
    // that many device iterations.
    async start({ config, paused = false, simulateGpuLossAfter = 0 }) {
      if (typeof env.wasm?.AutoencoderTrainer !== 'function') throw new Error('this build of the engine has no sparse autoencoder (rebuild the wasm packages: npm start)');
      await cancel();
      const settings = { ...(config.autoencoder ?? {}) };
      // Auto skips a software adapter, which only the browser can name.
      const adapter = env.webgpu?.available ? (env.webgpu.adapter?.name || env.webgpu.adapter?.driver) : '';
      if (adapter) settings.adapter_name = adapter;
      const fresh = new env.wasm.AutoencoderTrainer(env.playground, settings);
      await exclusive(() => {
        trainer?.free?.();
        trainer = fresh;
        info = null;
      });
      env.post('ae_model', { summary: null });
      let resolve;
      run = {
        active: true, paused, stopRequested: false, done: false, started: false, onGpu: false, deviceSteps: 0,
        loseGpuAfter: Number(simulateGpuLossAfter) || 0, iterations: settings.iterations ?? DEFAULT_ITERATIONS, finished: new Promise((r) => { resolve = r; }),
      };
      run.resolve = resolve;
      postState();
      loop(run, settings);
      return { family: 'autoencoder', steps: [{ kind: 'autoencoder', label: 'Sparse autoencoder' }] };
    },
    pause,
    resume() {
      requireRun('resume');
      run.paused = false;
      wakeLoop();
      postState();
      return { paused: false };
    },
    // One iteration (pauses first).
    async step() {
      requireRun('step');
      if (!run.paused) pause();
      const current = run;
      while (!current.started && current.active) await yieldToEvents();
      if (!current.active || current.done) throw new Error('step: the run has ended');
      return iterate(current);
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
      env.post('ae_model', { summary: null });
    },
  };
}

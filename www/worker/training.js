// The training run of the worker: RBM layers unit by unit, the supervised stage, and the
// pause/step/cancel commands that steer it. Where each unit trains (WebGPU or the CPU, and the
// fall-back) is the engine's: `unit()` says what to post. `worker.js` creates one with
// `createTrainingRun(env)`; `env` gives the engine, `post`, the cancel flag and the runtime.

const message = (error) => String(error?.message ?? error);
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

function adapterName(info) {
  return info?.adapter?.name || info?.adapter?.driver || 'adapter';
}

// The training run: RBM layers unit by unit (yielding between units so pause, step and
// cancel interleave), then the supervised stage (blocking on the CPU; on the device a promise).
export function createTrainingRun(env) {
  let run = null;
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

  // The rule (CPU, WebGPU, or Auto, which skips software adapters) is the engine's, the same
  // as the command line's; the worker only tells it what the browser knows.
  async function chooseBackend(choice) {
    const { threads, note } = setThreads(choice === 'cpu1' ? 1 : 0);
    const cpu = (reason) => ({ backend: 'cpu', threads, reason: note ? `${reason}; ${note}` : reason });
    if (choice === 'cpu1') return cpu('CPU single-threaded was chosen');
    const unavailable = env.webgpu?.available ? undefined : (env.webgpu?.reason || 'no adapter');
    if (choice !== 'cpu' && !unavailable) env.post('busy', { message: 'Connecting to the GPU…' });
    // Creates the device once; later runs reuse it.
    const chosen = await playground().choose_backend(choice, adapterName(env.webgpu), unavailable);
    if (chosen.backend === 'webgpu') return { backend: 'webgpu', adapter: adapterName(env.webgpu), threads };
    return cpu(chosen.reason);
  }

  const postEvent = ({ event, ...body }) => env.post(event, body);

  function postGreedy(event) {
    if (event.event !== 'finished') postEvent(event);
  }

  // One unit of greedy work: a layer's initialisation, one epoch, or closing a layer. The
  // engine may ask for a notice first (the first WebGPU epoch compiles its kernels).
  async function runUnit() {
    const before = playground().before_unit();
    if (before) postEvent(before);
    const { unit, post } = await playground().unit();
    post.forEach(postEvent);
    return unit.event;
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

  // The supervised stage on the device (Toman's adaptive rule when the run trains on WebGPU):
  // a promise, so the worker hears Cancel between submissions; each submission's epochs are
  // posted as they come back. A device that refuses or is lost hands the rest to the CPU
  // inside the engine, and its notice is posted.
  async function runSupervisedOnDevice() {
    env.post('busy', { message: 'Compiling the WebGPU kernels… (the first epochs on the GPU wait for them)' });
    const done = await playground().train_supervised_device((progress) => {
      env.post('supervised_progress', progress);
      return !run.stopRequested;
    });
    done.post.forEach(postEvent);
    const summary = playground().finish_supervised_device();
    env.post('supervised_done', { summary });
    if (summary?.stopped) run.stopRequested = true;
  }

  async function runSupervised() {
    if (!playground().supervised_pending?.()) return;
    run.stage = 'supervised';
    postState();
    // Without isolation, cancelling the blocking stage restarts the worker: the page keeps this
    // copy of the RBM stack to give the new engine (with isolation the shared flag stops it).
    // The device's stage hears Cancel between submissions, but a slow one may still be restarted.
    let checkpoint;
    if (!env.cancelFlag) {
      try { checkpoint = playground().save_model(); } catch { checkpoint = undefined; }
    }
    env.post('model', { summary: env.modelSummary(), checkpoint });
    const place = playground().supervised_place?.();
    if (place?.device) return runSupervisedOnDevice();
    if (place?.notice) env.post('notice', { message: place.notice });
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
      else await runSupervised();
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
    onGpu: () => !!run?.active && playground().training_on_gpu(),
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
      playground().simulate_gpu_loss_after(simulateGpuLossAfter);
      run = { active: true, paused, stopRequested: false, stage: 'rbm', finished: new Promise((r) => { done = r; }) };
      run.done = done;
      env.post('plan', plan);
      env.post('backend', await chooseBackend(backend));
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
      return exclusive(() => {
        const { unit, post } = playground().batch_unit();
        post.forEach(postEvent);
        return unit;
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

// The Sequences mode's run in the worker (issue 20): a wasm SequenceTrainer
// (src/web/recurrent.rs) trains a recurrent net online on a generated task, `chunk` steps per
// `train()` call (RTRL on WebGPU where the engine has it, several steps per submission; else
// the CPU), yielding between chunks so Pause, Step and Cancel interleave; plus the view
// commands (the held-out sequence, a sensitivity tensor, Save model) and the CPU-vs-GPU timing
// (`sq_time`: the wasm `rtrl_time`). `worker.js` creates one with `createSequencesRun(env)`.
//
// Events: `sq_started {backend, backend_reason, task, layers, parameters, tensor_values,
// trainer, blocks, steps, chunk}`, `sq_chunk {step, steps, mean_error, accuracy, bit_accuracy,
// errors, seconds, microseconds_per_step, backend, backend_reason, total, done}` after each
// chunk, `sq_model {summary | null}`; and the shared `state` (stage 'sequences'), `busy`,
// `backend`, `notice` and `finished {stopped, error, family: 'sequences'}`.

const message = (error) => String(error?.message ?? error);
const yieldToEvents = () => new Promise((resolve) => setTimeout(resolve, 0));

export function createSequencesRun(env) {
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
  const postState = () => env.post('state', { running: !!run?.active, paused: !!run?.paused, stage: run?.active ? 'sequences' : null });
  const wakeLoop = () => { wake?.(); wake = null; };

  function requireRun(what) {
    if (!run?.active) throw new Error(`${what}: no training is running (press Start)`);
  }
  function requireTrainer(what) {
    if (!trainer || !info) throw new Error(`${what}: no recurrent net yet (press Start)`);
    return trainer;
  }

  async function chunkOnce(current) {
    const steps = Math.min(current.chunk, current.total - current.done);
    let result;
    try {
      result = await exclusive(() => {
        if (current.loseGpuAfter > 0 && current.chunks === current.loseGpuAfter) trainer.simulate_gpu_loss?.();
        return trainer.train(steps);
      });
    } catch (error) {
      current.failed = message(error);
      current.stopRequested = true;
      wakeLoop();
      throw error;
    }
    current.chunks += 1;
    current.done += steps;
    if (current.onGpu && result.backend === 'cpu') {
      current.onGpu = false;
      env.post('notice', { message: `WebGPU failed; ${result.backend_reason}` });
      env.post('backend', { backend: 'cpu', threads: env.runtime?.threads, reason: result.backend_reason || undefined });
    }
    const done = current.done >= current.total;
    env.post('sq_chunk', { ...result, total: current.total, done });
    if (done) {
      current.finishedSteps = true;
      wakeLoop();
    }
    return result;
  }

  async function loop(current) {
    try {
      env.post('busy', { message: 'Building the recurrent net…' });
      info = await exclusive(() => trainer.start());
      env.post('sq_started', { ...info, steps: current.total, chunk: current.chunk });
      env.post('sq_model', { summary: info });
      current.onGpu = info.backend === 'gpu';
      const adapter = env.webgpu?.adapter?.name || env.webgpu?.adapter?.driver || 'adapter';
      env.post('backend', { backend: current.onGpu ? 'webgpu' : 'cpu', adapter: current.onGpu ? adapter : undefined, threads: env.runtime?.threads, reason: info.backend_reason || undefined });
      current.started = true;
      while (!current.stopRequested && !current.finishedSteps) {
        if (current.paused) {
          await new Promise((resolve) => { wake = resolve; });
          continue;
        }
        await chunkOnce(current);
        await yieldToEvents();
      }
    } catch (error) {
      current.failed ??= message(error);
    }
    if (current.failed) env.post('notice', { message: `Training stopped: ${current.failed}` });
    current.active = false;
    current.paused = false;
    env.post('finished', { stopped: current.stopRequested || !!current.failed, error: current.failed ?? null, family: 'sequences' });
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
    // The trained net run forward over a held-out stretch of the task (the heat map).
    sq_sequence: async ({ steps = 40 } = {}) => exclusive(() => requireTrainer('sequence').sequence(steps)),
    // A sensitivity tensor of the last step (or null where RTRL keeps none).
    sq_sensitivity: async ({ block, layer }) => exclusive(() => requireTrainer('sensitivity').sensitivity(block, layer)),
    sq_model_json: async () => requireTrainer('save model').model_json(),
    // µs per step of Moore's adder at `bits` on the CPU or WebGPU (the timing chart).
    sq_time: async ({ bits, gpu = false, steps = 5 }) => {
      if (typeof env.wasm?.rtrl_time !== 'function') throw new Error('this build of the engine has no RTRL timing (rebuild the wasm packages)');
      if (gpu && !env.webgpu?.available) throw new Error('WebGPU is not available here');
      return exclusive(() => env.wasm.rtrl_time(env.playground, bits, gpu, steps));
    },
    sq_status: async () => ({ running: !!run?.active, paused: !!run?.paused, summary: info }),
  };

  return {
    commands,
    active: () => !!run?.active,
    paused: () => !!run?.paused,
    // { config: { family: 'sequences', sequences: config, steps, chunk }, paused?,
    //   simulateGpuLossAfter? } → { family, steps }. A bad setting throws (naming the field)
    // before anything changes.
    async start({ config, paused = false, simulateGpuLossAfter = 0 }) {
      if (typeof env.wasm?.SequenceTrainer !== 'function') throw new Error('this build of the engine has no recurrent nets (rebuild the wasm packages: npm start)');
      await cancel();
      const settings = { ...(config.sequences ?? {}) };
      const adapter = env.webgpu?.available ? (env.webgpu.adapter?.name || env.webgpu.adapter?.driver) : '';
      if (adapter) settings.adapter_name = adapter;
      const fresh = new env.wasm.SequenceTrainer(env.playground, settings);
      await exclusive(() => {
        trainer?.free?.();
        trainer = fresh;
        info = null;
      });
      env.post('sq_model', { summary: null });
      let resolve;
      run = {
        active: true, paused, stopRequested: false, finishedSteps: false, started: false, onGpu: false, chunks: 0, done: 0,
        total: Math.max(1, Number(config.steps) || 20000), chunk: Math.max(1, Number(config.chunk) || 200),
        loseGpuAfter: Number(simulateGpuLossAfter) || 0, finished: new Promise((r) => { resolve = r; }),
      };
      run.resolve = resolve;
      postState();
      loop(run);
      return { family: 'sequences', steps: [{ kind: 'sequences', label: 'Sequences' }] };
    },
    pause,
    resume() {
      requireRun('resume');
      run.paused = false;
      wakeLoop();
      postState();
      return { paused: false };
    },
    // One chunk (pauses first).
    async step() {
      requireRun('step');
      if (!run.paused) pause();
      const current = run;
      while (!current.started && current.active) await yieldToEvents();
      if (!current.active || current.finishedSteps) throw new Error('step: the run has ended');
      return chunkOnce(current);
    },
    cancel,
    async reset() {
      await cancel();
      await exclusive(() => {
        trainer?.free?.();
        trainer = null;
        info = null;
      });
      env.post('sq_model', { summary: null });
    },
  };
}

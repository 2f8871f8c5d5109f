// Worker-side handlers of the view, results and model-file commands (docs/PAGE.md). The
// Gibbs chains and the dream run here on timers that yield between ticks, so training steps,
// other commands and the page's requests interleave with them and nothing blocks.

// Every tick waits at least this long, so a fast chain never starves the training loop.
const MIN_TICK_MS = 15;
// While the model is missing (before the first layer is initialised) a loop polls slowly.
const IDLE_RETRY_MS = 500;

const message = (error) => String(error?.message || error);
const seedOf = (seed) => BigInt(Math.max(0, Math.floor(Number(seed) || 0)));

// A sampling loop that advances `every` steps per tick at `speed` steps per second
// (0 pauses it) and posts each frame. `advance(steps)` resolves to an Image.
class LiveLoop {
  constructor(advance, post) {
    this.advance = advance;
    this.post = post;
    this.every = 10;
    this.speed = 50;
    this.timer = null;
    this.running = false;
    this.generation = 0;
    // Held while the page shows the other model family: no ticks whatever the speed; let go,
    // the chain goes on where it was.
    this.held = false;
  }

  hold(held) {
    this.held = held;
    this.schedule(0);
  }

  configure({ every, speed }) {
    if (every !== undefined) this.every = Math.max(1, Math.floor(every));
    if (speed !== undefined) this.speed = Math.max(0, Number(speed));
    if (this.running) this.schedule(0);
  }

  start(settings) {
    this.configure(settings);
    this.running = true;
    this.generation += 1;
    this.schedule(0);
  }

  stop() {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = null;
  }

  schedule(delay) {
    clearTimeout(this.timer);
    this.timer = null;
    if (!this.running || this.speed === 0 || this.held) return;
    this.timer = setTimeout(() => this.tick(), Math.max(MIN_TICK_MS, delay));
  }

  async tick() {
    const generation = this.generation;
    const started = performance.now();
    let frame;
    try {
      frame = await this.advance(this.every);
    } catch (error) {
      // A restart or a new run while a device read-back was in flight makes this frame stale.
      if (generation !== this.generation) return;
      this.post({ error: message(error) });
      this.schedule(IDLE_RETRY_MS);
      return;
    }
    if (generation !== this.generation || !this.running) return;
    this.post(frame);
    const budget = (1000 * this.every) / this.speed;
    this.schedule(budget - (performance.now() - started));
  }
}

export function viewCommands(ctx) {
  let chainsOnGpuFailed = false;
  let chainColumns = 10;

  // On the WebGPU device while training runs there (the weights are already on it), else on
  // the CPU; a device failure moves these chains to the CPU until they are restarted.
  const chains = new LiveLoop(async (steps) => {
    const pg = ctx.playground;
    if (ctx.trainingOnGpu() && !chainsOnGpuFailed) {
      try {
        const image = await pg.gpu_advance_chains(steps, chainColumns);
        return { image, steps: Number(pg.chain_steps()), device: 'webgpu' };
      } catch (error) {
        chainsOnGpuFailed = true;
        ctx.post('notice', { message: `Gibbs sampling on WebGPU failed (${message(error)}); the chains continue on the CPU` });
      }
    }
    const image = pg.advance_chains(steps, chainColumns);
    return { image, steps: Number(pg.chain_steps()), device: 'cpu' };
  }, (body) => ctx.post('samples', body));

  let lastChains = null;
  function startChainsWith({ count = 10, fromData = true, cases = null, seed = 1, columns = 10, every, speed }) {
    ctx.playground.start_chains(count, fromData, cases ? Uint32Array.from(cases) : null, seedOf(seed));
    chainColumns = Math.max(1, Math.floor(columns));
    chainsOnGpuFailed = false;
    chains.start({ every, speed });
  }

  let lastDreamSeed = null;
  const dream = new LiveLoop(async (steps) => {
    const pg = ctx.playground;
    const image = pg.advance_dream(steps);
    return { image, steps: Number(pg.dream_steps()) };
  }, (body) => ctx.post('dream', body));

  // Each case as its own tile, so the page can caption it (true and predicted labels).
  const caseTiles = (cases) => Array.from(cases, (index) => ({ case: index, image: ctx.playground.case_images(Uint32Array.of(index), 1) }));

  // Every misclassified case's true and predicted class, from the off-diagonal cells.
  function misclassifiedLabels(classification) {
    const labels = new Map();
    const n = classification.counts.length;
    for (let truth = 0; truth < n; truth += 1) {
      for (let predicted = 0; predicted < n; predicted += 1) {
        if (truth === predicted || !classification.counts[truth][predicted]) continue;
        for (const index of ctx.playground.confusion_cases(truth, predicted, classification.counts[truth][predicted])) labels.set(index, { truth, predicted });
      }
    }
    return labels;
  }

  return {
    async view_filters({ count = 100, columns = 10, mode = 'grey' } = {}) {
      return ctx.playground.filters_image(count, columns, mode);
    },

    async view_histograms({ bins = 20 } = {}) {
      return ctx.playground.hidden_histograms(bins);
    },

    async view_reconstructions({ count = 20, columns = 10 } = {}) {
      return ctx.playground.reconstructions(count, columns);
    },

    // Starts (or restarts) the chains; `cases` (an array of case indices) picks data starts,
    // null with fromData the first `count` cases, fromData false random top states.
    async chains_start(args = {}) {
      chains.stop();
      startChainsWith(args);
      lastChains = args;
      return { steps: Number(ctx.playground.chain_steps()) };
    },

    async chains_configure({ every, speed } = {}) {
      chains.configure({ every, speed });
      return { running: chains.running, every: chains.every, speed: chains.speed };
    },

    async chains_stop() {
      chains.stop();
      return { running: false };
    },

    // While the page shows the autoencoder the DBN's chains and dream are hidden: they wait.
    async live_hold({ held = true } = {}) {
      chains.hold(held);
      dream.hold(held);
      return { held };
    },

    async dream_start({ seed = 1, every, speed } = {}) {
      dream.stop();
      ctx.playground.start_dream(seedOf(seed));
      lastDreamSeed = seed;
      dream.start({ every, speed });
      return { steps: Number(ctx.playground.dream_steps()) };
    },

    async dream_configure({ every, speed } = {}) {
      dream.configure({ every, speed });
      return { running: dream.running, every: dream.every, speed: dream.speed };
    },

    async dream_stop() {
      dream.stop();
      return { running: false };
    },

    async results_classification() {
      return ctx.playground.classification();
    },

    async results_confusion_examples({ truth, predicted, max = 40 } = {}) {
      return caseTiles(ctx.playground.confusion_cases(truth, predicted, max));
    },

    async results_misclassified({ max = 40 } = {}) {
      const labels = misclassifiedLabels(ctx.playground.classification());
      return caseTiles(ctx.playground.misclassified(max)).map((tile) => ({ ...tile, ...labels.get(tile.case) }));
    },

    async model_save() {
      return ctx.playground.save_model();
    },

    // Replaces the model with the one in `text`; the current one stays if it does not load.
    async model_load({ name = 'model.json', text } = {}) {
      if (ctx.isTraining()) throw Object.assign(new Error('stop training before loading a model'), { field: 'model_upload' });
      const summary = ctx.playground.load_model(name, text);
      // Loading drops the chains and the dream; running ones go on from the new model.
      if (chains.running && lastChains) startChainsWith(lastChains);
      if (dream.running && lastDreamSeed !== null) {
        ctx.playground.start_dream(seedOf(lastDreamSeed));
        dream.start({});
      }
      ctx.post('model', { summary });
      return summary;
    },

    async model_summary() {
      return ctx.playground.model_summary();
    },

    async export_deep_log() {
      return ctx.playground.deep_log();
    },

    // `selection`: the CLI's SECTION:LAYER[:NEURON], e.g. unsupervised:0 or output:0.
    async export_activations({ selection = 'unsupervised:0' } = {}) {
      return ctx.playground.activations(selection);
    },
  };
}

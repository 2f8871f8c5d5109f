// The training panel: Start, Pause/Resume, Step batch, Step epoch, Cancel, Reset; the run's
// steps as DEEP lists them with the current one marked and the percent done; notices and the
// epoch log.
const $ = (id) => document.getElementById(id);

function showText(element, message) {
  element.textContent = message ?? '';
  element.hidden = !message;
}

export function mountTraining(section, app, model) {
  const buttons = {
    start: $('train-start'), pause: $('train-pause'), stepBatch: $('train-step-batch'),
    stepEpoch: $('train-step-epoch'), cancel: $('train-cancel'), reset: $('train-reset'),
  };
  // The run as the panel follows it: plan steps, epochs per layer, where it is.
  let run = null;
  let busy = false;

  function setButtons() {
    const ready = !!app.runtime && !!app.data;
    const running = app.running;
    buttons.start.disabled = !ready || running || busy;
    buttons.pause.disabled = !running || run?.stage === 'supervised';
    buttons.pause.textContent = app.paused ? 'Resume' : 'Pause';
    buttons.pause.setAttribute('aria-pressed', String(app.paused));
    buttons.stepBatch.disabled = !running || run?.stage === 'supervised' || run?.rbmDone;
    buttons.stepEpoch.disabled = buttons.stepBatch.disabled;
    buttons.cancel.disabled = !running;
    buttons.reset.disabled = !ready || busy || (!app.model && !app.autoencoderModel && !app.sparseCodingModel && !app.sequenceModel && !app.localRbmModel && !running);
  }

  async function command(cmd, errorTarget = $('train-error')) {
    showText(errorTarget, '');
    try {
      return await app.rpc(cmd);
    } catch (error) {
      showText(errorTarget, error.message);
      return null;
    } finally {
      setButtons();
    }
  }

  buttons.start.addEventListener('click', async () => {
    showText($('train-error'), '');
    showText($('train-notice'), '');
    model.clearErrors();
    let config;
    try {
      config = model.pageConfig();
    } catch (error) {
      showText($('train-error'), `Fix the setting first: ${error.message}`);
      return;
    }
    busy = true;
    setButtons();
    delete $('train-status').dataset.finished;
    delete $('train-status').dataset.busySeen;
    $('train-progress').dataset.epochs = '0';
    // The other families' progress comes as `run_progress` (panels/autoencoder.js, sparse_coding.js).
    run = config.family
      ? { family: config.family, layers: 0, supervised: null, layer: 0, epoch: 0, epochs: 0, steps: [], stage: config.family, rbmDone: false }
      : { epochsPerLayer: config.stack.rbm.epochs, layers: config.stack.layers.length, supervised: config.supervised, layer: 0, epoch: 0, epochs: 0, steps: [], stage: 'rbm', rbmDone: false };
    $('epoch-log').replaceChildren();
    try {
      await app.rpc('train', { config, backend: model.backend(), simulateGpuLossAfter: app.simulateGpuLossAfter });
    } catch (error) {
      if (!(error.field && model.showFieldError(error.field, error.message))) showText($('train-error'), error.message);
      else showText($('train-error'), `Fix the setting first: ${error.message}`);
      run = null;
    } finally {
      busy = false;
      setButtons();
    }
  });
  buttons.pause.addEventListener('click', () => command(app.paused ? 'resume' : 'pause'));
  buttons.stepBatch.addEventListener('click', () => command('stepBatch'));
  buttons.stepEpoch.addEventListener('click', () => command('stepEpoch'));
  buttons.cancel.addEventListener('click', async () => {
    buttons.cancel.disabled = true;
    await app.cancel();
    setButtons();
  });
  buttons.reset.addEventListener('click', async () => {
    await command('reset');
    run = null;
    $('train-steps').replaceChildren();
    $('epoch-log').replaceChildren();
    setProgress(0, 'Reset: no model. The data stays.');
    app.emit('reset', {});
  });

  // The progress line: what the run is doing in words, "Paused" while paused.
  let statusText = '';
  function setProgress(fraction, text) {
    const percent = Math.max(0, Math.min(100, fraction * 100));
    $('train-progress').value = percent;
    $('train-progress').dataset.percent = percent.toFixed(1);
    statusText = `${text}${run ? ` · ${Math.floor(percent)}% done` : ''}`;
    showStatus();
  }
  function showStatus() {
    const paused = app.running && app.paused;
    $('train-status').textContent = paused ? `Paused (Resume goes on) · ${statusText}` : statusText;
    $('train-status').dataset.paused = String(paused);
  }
  // Slow work with no progress of its own (connecting to the GPU, compiling its kernels).
  app.on('busy', ({ message }) => {
    if (!run) return;
    $('train-status').textContent = message;
    $('train-status').dataset.busy = message;
    $('train-status').dataset.busySeen = message;
  });

  // Steps of the plan: RBM layers count by epochs (at most `epochs`; a layer that converges
  // early jumps to its end), the supervised stages by iterations.
  function fraction() {
    if (!run) return 0;
    const units = run.steps.length || 1;
    const index = run.currentStep ?? 0;
    let within = 0;
    if (run.stage === 'rbm') within = Math.min(1, (run.epoch + (run.batchFraction ?? 0)) / run.epochsPerLayer);
    else if (run.stage === 'supervised' && run.supervised) {
      const max = run.fineTuning ? run.supervised.fine_tune_max_iterations : run.supervised.max_iterations;
      within = Math.min(1, run.iteration / max);
    }
    return (index + within) / units;
  }

  function markSteps() {
    const items = $('train-steps').children;
    [...items].forEach((item, k) => {
      let state = 'pending';
      if (k < run.currentStep) state = 'done';
      else if (k === run.currentStep) state = !run.over ? 'current' : run.stopped ? 'stopped' : 'done';
      item.dataset.state = state;
      if (state === 'current') item.setAttribute('aria-current', 'step');
      else item.removeAttribute('aria-current');
    });
  }

  app.on('plan', ({ steps }) => {
    if (!run) return;
    run.steps = steps;
    run.currentStep = 0;
    $('train-steps').replaceChildren(...steps.map((step) => {
      const item = document.createElement('li');
      item.dataset.kind = step.kind;
      item.textContent = step.label;
      return item;
    }));
    markSteps();
    setProgress(0, 'Starting…');
  });
  app.on('layer_started', ({ layer, trial_errors }) => {
    if (!run) return;
    run.layer = layer;
    run.epoch = 0;
    run.currentStep = layer;
    markSteps();
    setProgress(fraction(), `Layer ${layer + 1}: initialised (${trial_errors?.length ?? 0} trial${trial_errors?.length === 1 ? '' : 's'})`);
  });
  app.on('epoch', ({ layer, report }) => {
    if (!run) return;
    run.epoch = report.epoch;
    run.batchFraction = 0;
    run.epochs += 1;
    $('train-progress').dataset.epochs = run.epochs;
    const item = document.createElement('li');
    Object.assign(item.dataset, { layer, epoch: report.epoch, error: report.reconstruction_error });
    item.textContent = `layer ${layer + 1} epoch ${report.epoch}: error ${report.reconstruction_error.toFixed(5)} · ${report.seconds.toFixed(2)} s · ${Math.round(report.cases_per_second).toLocaleString()} cases/s${report.stop ? ` · stopped: ${typeof report.stop === 'string' ? report.stop : JSON.stringify(report.stop)}` : ''}`;
    $('epoch-log').append(item);
    setProgress(fraction(), `Layer ${layer + 1} of ${run.layers}: epoch ${report.epoch} of at most ${run.epochsPerLayer}`);
  });
  app.on('batch', ({ layer, batch, batches, reconstruction_error }) => {
    if (!run) return;
    run.batchFraction = batch / batches;
    setProgress(fraction(), `Layer ${layer + 1}: batch ${batch} of ${batches} (error ${Number(reconstruction_error).toFixed(5)})`);
  });
  app.on('layer_finished', ({ layer }) => {
    if (!run) return;
    run.epoch = run.epochsPerLayer;
    if (layer + 1 >= run.layers) run.rbmDone = true;
    const more = layer + 1 < run.steps.length && app.paused ? ' (paused: Resume goes on)' : '';
    setProgress((layer + 1) / (run.steps.length || 1), `Layer ${layer + 1} finished${more}`);
    setButtons();
  });
  app.on('supervised_progress', ({ stage, iteration, criterion }) => {
    if (!run) return;
    run.stage = 'supervised';
    run.rbmDone = true;
    run.fineTuning = stage === 'fine_tune';
    run.iteration = iteration;
    run.currentStep = run.steps.findIndex((s) => s.kind === (run.fineTuning ? 'fine_tune' : 'supervised'));
    markSteps();
    setProgress(fraction(), `${run.fineTuning ? 'Fine-tuning' : 'Supervised stage'}: iteration ${iteration}, criterion ${Number(criterion).toPrecision(5)}`);
    setButtons();
  });
  app.on('finished', ({ stopped, error }) => {
    if (!run) return;
    run.over = true;
    run.stopped = stopped;
    if (!stopped) run.currentStep = run.steps.length - 1;
    markSteps();
    const kept = { autoencoder: 'the model keeps its last iteration', sparse_coding: 'the basis keeps its last mini-batch' }[run.family] ?? 'the layers trained so far are kept';
    const text = error ? `Stopped by an error: ${error}` : stopped ? `Cancelled; ${kept}.` : `Done${run.progressText ? `: ${run.progressText}` : ''}. Change a setting and Start again to compare.`;
    if (!stopped) setProgress(1, text);
    else {
      statusText = text;
      $('train-status').textContent = text;
    }
    $('train-status').dataset.finished = stopped ? 'stopped' : 'done';
  });
  // A family's own progress in words (the autoencoder's iterations and J).
  app.on('run_progress', ({ fraction, text }) => {
    if (!run) return;
    run.progressText = text;
    setProgress(fraction, text);
  });
  app.on('state', ({ stage }) => {
    if (run && stage) run.stage = stage;
    if (app.running) delete $('train-status').dataset.finished;
    if (!$('train-status').dataset.busy) showStatus();
    setButtons();
  });
  // Any progress ends a busy message.
  for (const event of ['layer_started', 'epoch', 'batch', 'layer_finished', 'supervised_progress', 'run_progress', 'finished']) {
    app.on(event, () => { delete $('train-status').dataset.busy; });
  }
  // A model from a file or this browser's storage replaces whatever the last run or Reset
  // left: the status describes it (the storage panel names the file).
  app.on('model_loaded', ({ summary }) => {
    if (app.running || !summary?.layers?.length) return;
    run = null;
    $('train-steps').replaceChildren();
    const sizes = [summary.layers[0][0], ...summary.layers.map(([, hidden]) => hidden)].join('–');
    const supervised = summary.supervised ? ' with supervised layers' : '';
    setProgress(0, `Model loaded: RBM stack ${sizes}${supervised}. Start trains a new one from scratch.`);
  });
  app.on('notice', ({ message }) => showText($('train-notice'), message));
  for (const event of ['ready', 'data', 'model', 'ae_model', 'sc_model']) app.on(event, setButtons);
  setButtons();
}

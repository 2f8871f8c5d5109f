// The sparse autoencoder family (issue 17), in both builds: a link with family=autoencoder shows
// its settings and views (and hides the DBN's), trains live (J falls, the filters change, the
// mean ρ̂ moves toward ρ, reconstructions are drawn, the network shows 784 → hidden → 784),
// Pause stops the iterations and Step adds one, Cancel keeps the model, Save model downloads
// it; a DBN's chains and dream pause in the worker while the autoencoder is shown; a bad value
// in the link names its field; the settings survive a reload; and (threaded build) WebGPU
// starts from the CPU's cost.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, closeAll, openPage, waitReady, waitFinished, canvasStats, screenshot } from './lib.mjs';

after(closeAll);

const SMALL_AE = 'family=autoencoder&hidden=25&iterations=5&cases=500&seed=3';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const iteration = (page) => page.evaluate(() => Number(document.getElementById('chart-ae-cost').dataset.iteration ?? -1));
const shown = (page, selector) => page.evaluate((sel) => {
  const element = document.querySelector(sel);
  return !!element && element.checkVisibility();
}, selector);

// Records every frame of the filters and the ρ̂ plot as it is drawn (a run of a few
// iterations may end before the test could look).
async function recordFrames(page) {
  await page.evaluate(() => {
    window.aeFrames = { filters: [], means: [] };
    const canvas = document.getElementById('ae-filters-canvas');
    const checksum = () => {
      const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let sum = 0;
      for (let k = 0; k < pixels.length; k += 4) sum = (sum * 31 + pixels[k]) % 1_000_000_007;
      return sum;
    };
    new MutationObserver(() => { if (canvas.dataset.drawn) window.aeFrames.filters.push(checksum()); }).observe(canvas, { attributes: true, attributeFilter: ['data-drawn'] });
    const figure = document.getElementById('chart-ae-sparsity');
    new MutationObserver(() => { if (figure.dataset.mean) window.aeFrames.means.push(Number(figure.dataset.mean)); }).observe(figure, { attributes: true, attributeFilter: ['data-drawn'] });
  });
}

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('a family=autoencoder link trains live: J falls, the filters change, ρ̂ moves toward ρ, reconstructions drawn', async () => {
      const { page, problems } = await openPage(build, `${SMALL_AE}&ae_backend=cpu`);
      try {
        await waitReady(page);
        // The family and its settings from the link; the DBN's settings and views are hidden.
        assert.equal(await page.inputValue('#family'), 'autoencoder');
        // The worker heard it: DBN chains a restored model would start stay paused.
        await page.waitForFunction(() => document.body.dataset.dbnSampling === 'paused', null, { timeout: 10_000 });
        assert.equal(await page.inputValue('#ae-hidden'), '25');
        assert.equal(await page.inputValue('#ae-iterations'), '5');
        assert.equal(await page.inputValue('#ae-cases'), '500');
        assert.equal(await page.inputValue('#ae-rho'), '0.1');
        for (const id of ['#ae-hidden', '#ae-rho', '#ae-lambda', '#ae-beta', '#ae-method', '#ae-iterations', '#ae-cases', '#ae-backend', '#p-seed', '#ae-filters-canvas', '#ae-reconstructions-canvas', '#chart-ae-cost', '#chart-ae-sparsity']) {
          assert.ok(await shown(page, id), `${id} should show for the autoencoder`);
        }
        for (const id of ['#preset', '#p-layers', '#p-epochs', '#advanced-settings', '#samples-canvas', '#filters-canvas', '#chart-recon', '#train-step-batch', '#network-add-layer', '#ae-sgd']) {
          assert.equal(await shown(page, id), false, `${id} should be hidden for the autoencoder`);
        }
        const untitled = await page.$$eval('#autoencoder-settings :is(input, select)', (controls) => controls.filter((c) => !c.closest('[title]')?.title).map((c) => c.id));
        assert.deepEqual(untitled, [], 'every autoencoder control has a tooltip');
        assert.match(await page.textContent('#ae-arch-line'), /784 → 25 → 784 · 40,009 parameters/);
        await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,25,784', null, { timeout: 10_000 });
        assert.deepEqual(await page.$$eval('#network-drawing .links', (groups) => groups.map((g) => g.dataset.kind)), ['encoder', 'decoder']);
        assert.equal(await page.textContent('#train-step-epoch'), 'Step');

        await recordFrames(page);
        await page.click('#train-start');
        const run = await waitFinished(page, 180_000);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
        assert.equal(run.backend, 'cpu');
        const status = await page.textContent('#train-status');
        assert.match(status, /Iteration 5 \/ 5 · J = [\d.]+/, status);

        // J fell, in the chart, the log and the progress line alike.
        const chart = await page.$eval('#chart-ae-cost', (box) => ({ ...box.dataset }));
        assert.equal(chart.iteration, '5');
        assert.ok(Number(chart.last) < Number(chart.first), `J went from ${chart.first} to ${chart.last}`);
        const log = await page.$$eval('#ae-log li', (items) => items.map((li) => [Number(li.dataset.iteration), Number(li.dataset.cost)]));
        assert.deepEqual(log.map(([k]) => k), [0, 1, 2, 3, 4, 5]);
        assert.equal(log[0][1], Number(chart.first));
        assert.equal(log[5][1], Number(chart.last));
        assert.ok(status.includes(`J = ${Number(chart.last).toPrecision(5)}`), status);

        // The live views: the filters changed from their first frame, ρ̂ moved toward ρ.
        await page.waitForFunction(() => Number(document.getElementById('chart-ae-sparsity').dataset.drawn || 0) >= 2 && window.aeFrames.filters.length >= 2, null, { timeout: 30_000 });
        const frames = await page.evaluate(() => window.aeFrames);
        assert.notEqual(frames.filters.at(-1), frames.filters[0], 'the filters did not change while training');
        const sparsity = await page.$eval('#chart-ae-sparsity', (figure) => ({ ...figure.dataset }));
        assert.equal(sparsity.units, '25');
        assert.equal(Number(sparsity.target), 0.1);
        const first = Number(sparsity.firstMean);
        const last = Number(sparsity.mean);
        assert.equal(first, frames.means[0]);
        assert.ok(Math.abs(last - 0.1) < Math.abs(first - 0.1), `mean ρ̂ went from ${first} to ${last}, not toward 0.1`);
        const filters = await canvasStats(page, '#ae-filters-canvas');
        assert.ok(filters.width >= 5 * 28 && filters.height >= 5 * 28 && filters.distinctGreys > 20, JSON.stringify(filters));
        const reconstructions = await canvasStats(page, '#ae-reconstructions-canvas');
        assert.ok(reconstructions.width >= 10 * 28 && reconstructions.height >= 2 * 28 && reconstructions.distinctGreys > 20, JSON.stringify(reconstructions));
        for (const id of ['ae_filters-caption', 'ae_reconstructions-caption', 'ae-sparsity-caption']) {
          assert.ok((await page.textContent(`#${id}`)).length > 60, `${id} says what the view shows`);
        }

        const states = await page.$$eval('#network-drawing g.layer', (groups) => groups.map((g) => `${g.dataset.kind}:${g.dataset.state}`));
        assert.deepEqual(states, ['inputs:done', 'ae_hidden:done', 'ae_output:done']);

        // Save model downloads the trainer's model_json().
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#ae-save-model')]);
        assert.equal(download.suggestedFilename(), 'autoencoder.json');
        const saved = await (await import('node:fs/promises')).readFile(await download.path(), 'utf8');
        assert.equal(saved, await page.evaluate(() => window.app.rpc('ae_model_json')));
        JSON.parse(saved);
        // The first screen (1280×720) holds Start, the network and both pictures, and the
        // headline charts start on it (scrolled back to the top: Save model scrolled down).
        await page.evaluate(() => window.scrollTo(0, 0));
        const onScreen = await page.evaluate((selectors) => selectors.map((sel) => {
          const r = document.querySelector(sel).getBoundingClientRect();
          return [sel, r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth, Math.round(r.top)];
        }), ['#train-start', '#train-status', '#network-drawing svg', '#ae-filters-canvas', '#ae-reconstructions-canvas', '#chart-ae-cost']);
        for (const [sel, inside, top] of onScreen.slice(0, -1)) assert.ok(inside, `${sel} is not wholly on the first screen`);
        assert.ok(onScreen.at(-1)[2] < 720 - 100, `the cost chart starts too low: ${onScreen.at(-1)[2]}`);
        await screenshot(page, `autoencoder-${build.name}-trained`);
        const { createRequire } = await import('node:module');
        await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
        const violations = await page.evaluate(async () => (await window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })).violations
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
        assert.deepEqual(violations, [], 'axe-core: WCAG 2 A/AA on the trained autoencoder page');
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('Pause stops the iterations, Step adds one, Cancel keeps the model', async () => {
      const { page, problems } = await openPage(build, 'family=autoencoder&hidden=25&iterations=400&cases=500&ae_backend=cpu');
      try {
        await waitReady(page);
        await page.click('#train-start');
        await page.waitForFunction(() => Number(document.getElementById('chart-ae-cost').dataset.iteration ?? -1) >= 2, null, { timeout: 120_000 });
        await page.click('#train-pause');
        await page.waitForFunction(() => window.app.paused && /^Paused/.test(document.getElementById('train-status').textContent));
        await sleep(500);
        const paused = await iteration(page);
        await sleep(2000);
        assert.equal(await iteration(page), paused, 'iterations went on while paused');
        assert.ok(paused < 400);

        await page.click('#train-step-epoch');
        await page.waitForFunction((k) => Number(document.getElementById('chart-ae-cost').dataset.iteration) === k + 1, paused, { timeout: 60_000 });
        await sleep(1000);
        assert.equal(await iteration(page), paused + 1, 'Step trains exactly one iteration');
        assert.equal(await page.evaluate(() => window.app.paused), true);

        await page.click('#train-cancel');
        const run = await waitFinished(page, 60_000);
        assert.equal(run.finished, 'stopped');
        assert.match(await page.textContent('#train-status'), /Cancelled; the model keeps its last iteration/);
        // Nothing trained is lost: the model still draws and saves.
        const image = await page.evaluate(() => window.app.rpc('ae_filters', { maxTiles: 25 }));
        assert.ok(image.width > 1);
        assert.equal(await page.isDisabled('#ae-save-model'), false);
        assert.equal(await page.isDisabled('#family'), false, 'the family can change again once the run ended');

        // Reset forgets the autoencoder: its views empty, Save model is off.
        assert.equal(await page.isDisabled('#train-reset'), false, 'Reset is there for a trained autoencoder');
        await page.click('#train-reset');
        await page.waitForFunction(() => document.getElementById('ae-filters-canvas').width === 1 && document.getElementById('ae-save-model').disabled, null, { timeout: 30_000 });
        assert.deepEqual(await page.evaluate(() => ({
          reconstructions: document.getElementById('ae-reconstructions-canvas').width,
          log: document.querySelectorAll('#ae-log li').length,
          mean: document.getElementById('chart-ae-sparsity').dataset.mean ?? null,
          points: document.getElementById('chart-ae-cost').dataset.points,
          layers: [...document.querySelectorAll('#network-drawing g.layer')].map((g) => g.dataset.state),
        })), { reconstructions: 1, log: 0, mean: null, points: '0', layers: ['done', 'pending', 'pending'] });
        await assert.rejects(page.evaluate(() => window.app.rpc('ae_filters', { maxTiles: 25 })), /no autoencoder yet/);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });
  });
}

// Every `samples` and `dream` frame the worker posts from now on, with its step count.
async function recordLiveFrames(page) {
  await page.evaluate(() => {
    window.liveFrames = { samples: [], dream: [] };
    for (const kind of ['samples', 'dream']) window.app.on(kind, ({ steps, error }) => { if (!error) window.liveFrames[kind].push(steps); });
  });
}
const liveFrames = (page) => page.evaluate(() => ({ samples: [...window.liveFrames.samples], dream: [...window.liveFrames.dream] }));

for (const build of builds) {
  test(`${build.name} build: a DBN's Gibbs chains and dream pause in the worker while the autoencoder is shown, and go on where they were when the DBN is back`, async () => {
    const { page, problems } = await openPage(build, 'layers=32&epochs=1&init_trials=1&supervised=0&backend=cpu&monitor_cases=200&chain_speed=200&chain_every=5&dream_speed=200&dream_every=5');
    try {
      await waitReady(page);
      assert.equal(await page.evaluate(() => document.body.dataset.dbnSampling), 'running');
      await page.click('#train-start');
      const run = await waitFinished(page, 120_000);
      assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
      await recordLiveFrames(page);
      await page.waitForFunction(() => window.liveFrames.samples.length >= 3 && window.liveFrames.dream.length >= 3, null, { timeout: 30_000 });
      // The visitor pauses the dream by hand: coming back must not start it again.
      await page.click('#dream-pause');
      await sleep(500);

      await page.selectOption('#family', 'autoencoder');
      await page.waitForFunction(() => document.body.dataset.dbnSampling === 'paused', null, { timeout: 10_000 });
      // A frame already being drawn when the worker heard may still arrive.
      await sleep(500);
      const atPause = await liveFrames(page);
      await sleep(2500);
      const later = await liveFrames(page);
      assert.equal(later.samples.length, atPause.samples.length, `chain frames went on while the autoencoder was shown: ${JSON.stringify(later.samples.slice(atPause.samples.length, atPause.samples.length + 5))}`);
      assert.equal(later.dream.length, atPause.dream.length, 'dream frames went on while the autoencoder was shown');

      await page.selectOption('#family', 'dbn');
      await page.waitForFunction(() => document.body.dataset.dbnSampling === 'running', null, { timeout: 10_000 });
      await page.waitForFunction((n) => window.liveFrames.samples.length >= n + 3, atPause.samples.length, { timeout: 30_000 });
      const back = await liveFrames(page);
      // The same chains, 5 steps a frame from where they stopped, not restarted.
      assert.deepEqual(back.samples.slice(atPause.samples.length, atPause.samples.length + 3), [1, 2, 3].map((k) => atPause.samples.at(-1) + 5 * k));
      assert.equal(back.dream.length, atPause.dream.length, 'the dream the visitor paused stays paused');
      assert.equal(await page.textContent('#dream-pause'), 'Resume');
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
}

test('a bad value in the link names its field; Start refuses it (single-threaded build)', async () => {
  const { page, problems } = await openPage(builds[1], 'family=autoencoder&hidden=25&rho=2&iterations=5&cases=500&family_hide=1');
  try {
    await waitReady(page);
    // family_hide: an embed fixes the family; its settings still show.
    assert.equal(await shown(page, '#family'), false);
    assert.ok(await shown(page, '#ae-hidden'));
    assert.equal(await page.inputValue('#ae-rho'), '2', 'the bad value stays where it can be fixed');
    const error = await page.textContent('#ae-rho-error');
    assert.ok(await shown(page, '#ae-rho-error'));
    assert.match(error, /\(rho\): expected a value from 0\.0001 to 0\.9999, got 2/);
    await page.click('#train-start');
    await page.waitForFunction(() => !document.getElementById('train-error').hidden);
    assert.match(await page.textContent('#train-error'), /Fix the setting first: .*\(rho\)/);
    assert.equal(await page.evaluate(() => window.app.running), false);
    // Fixed, it trains.
    await page.fill('#ae-rho', '0.05');
    await page.dispatchEvent('#ae-rho', 'change');
    assert.equal(await shown(page, '#ae-rho-error'), false);
    assert.match(await page.evaluate(() => location.hash), /rho=0\.05/);
    await page.click('#train-start');
    const run = await waitFinished(page, 180_000);
    assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
    assert.equal(await page.$eval('#chart-ae-sparsity', (figure) => figure.dataset.target), '0.05');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('the family and its settings live in the hash and survive a reload; the DBN is the default (single-threaded build)', async () => {
  const { page, problems } = await openPage(builds[1], '');
  try {
    await waitReady(page);
    assert.equal(await page.inputValue('#family'), 'dbn');
    assert.equal(await shown(page, '#autoencoder-settings'), false);
    assert.equal(await shown(page, '#ae-filters-canvas'), false);
    assert.equal(await shown(page, '#samples-canvas'), true);

    await page.selectOption('#family', 'autoencoder');
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,196,784');
    await page.fill('#ae-hidden', '36');
    await page.dispatchEvent('#ae-hidden', 'change');
    await page.fill('#ae-iterations', '7');
    await page.dispatchEvent('#ae-iterations', 'change');
    await page.selectOption('#ae-method', 'sgd');
    await page.fill('#ae-learning_rate', '0.5');
    await page.dispatchEvent('#ae-learning_rate', 'change');
    await page.selectOption('#ae-backend', 'cpu');
    assert.ok(await shown(page, '#ae-sgd'), 'the SGD settings show for SGD');
    const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
    assert.deepEqual(Object.fromEntries(['family', 'hidden', 'iterations', 'method', 'ae_learning_rate', 'ae_backend'].map((k) => [k, hash.get(k)])),
      { family: 'autoencoder', hidden: '36', iterations: '7', method: 'sgd', ae_learning_rate: '0.5', ae_backend: 'cpu' });
    assert.equal(hash.get('rho'), null, 'defaults stay out of the link');

    await page.reload();
    await waitReady(page);
    assert.equal(await page.inputValue('#family'), 'autoencoder');
    assert.deepEqual(await page.evaluate(() => ['ae-hidden', 'ae-iterations', 'ae-method', 'ae-learning_rate', 'ae-backend', 'ae-rho'].map((id) => document.getElementById(id).value)),
      ['36', '7', 'sgd', '0.5', 'cpu', '0.1']);
    assert.ok(await shown(page, '#ae-sgd'));
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,36,784');
    const config = await page.evaluate(() => window.app.settings());
    assert.deepEqual(config, { family: 'autoencoder', autoencoder: { seed: 1, hidden: 36, rho: 0.1, lambda: 0.003, beta: 3, method: 'sgd', iterations: 7, cases: 2000, backend: 'cpu', batch_size: 100, learning_rate: 0.5, momentum: 0.9 } });
    // SGD trains too: one epoch an iteration.
    await page.click('#train-start');
    const run = await waitFinished(page, 180_000);
    assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
    const chart = await page.$eval('#chart-ae-cost', (box) => ({ ...box.dataset }));
    assert.equal(chart.iteration, '7');
    assert.ok(Number(chart.last) < Number(chart.first), `SGD: J went from ${chart.first} to ${chart.last}`);

    // Back to the DBN: its settings and views return, the link drops the family.
    await page.selectOption('#family', 'dbn');
    assert.equal(await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('family')), null);
    assert.ok(await shown(page, '#preset') && await shown(page, '#samples-canvas') && await shown(page, '#train-step-batch'));
    assert.equal(await page.textContent('#train-step-epoch'), 'Step epoch');
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,64,32,10');
    assert.ok((await page.evaluate(() => window.app.settings())).stack, 'the DBN page config again');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('threaded build: the autoencoder on WebGPU starts from the CPU\'s cost and lowers J, and goes on on the CPU when the device is lost', async () => {
  const variants = { webgpu: 'ae_backend=webgpu', cpu: 'ae_backend=cpu', lost: 'ae_backend=webgpu&simulate_gpu_loss=2' };
  const runs = {};
  for (const [name, hash] of Object.entries(variants)) {
    const { page, problems } = await openPage(builds[0], `family=autoencoder&hidden=16&iterations=4&cases=200&seed=5&${hash}`);
    try {
      await waitReady(page);
      assert.equal(await page.evaluate(() => document.getElementById('status').dataset.webgpu), 'true');
      await page.click('#train-start');
      const run = await waitFinished(page, 240_000);
      assert.equal(run.finished, 'done', `${name}: ${run.status} ${run.notice}`);
      const log = await page.$$eval('#ae-log li', (items) => items.map((li) => [Number(li.dataset.iteration), Number(li.dataset.cost)]));
      runs[name] = { ...run, log };
      assert.deepEqual(log.map(([k]) => k), [0, 1, 2, 3, 4], `${name}: every iteration once`);
      for (let k = 1; k < log.length; k += 1) assert.ok(log[k][1] <= log[k - 1][1], `${name}: J rose at iteration ${k}: ${JSON.stringify(log)}`);
      assert.ok(log[4][1] < log[0][1], `${name}: J did not fall: ${JSON.stringify(log)}`);
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  }
  const { webgpu, cpu, lost } = runs;
  assert.equal(webgpu.backend, 'webgpu', webgpu.status);
  assert.match(webgpu.status, /Trained on WebGPU \(/);
  assert.equal(cpu.backend, 'cpu', cpu.status);
  const gap = Math.abs(webgpu.log[0][1] - cpu.log[0][1]) / cpu.log[0][1];
  assert.ok(gap < 1e-4, `the starting J differs: WebGPU ${webgpu.log[0][1]}, CPU ${cpu.log[0][1]}`);
  // The lost device: the run goes on on the CPU from where the device left it.
  assert.equal(lost.backend, 'cpu', lost.status);
  assert.match(lost.notice, /WebGPU failed .*continuing on the CPU/);
  assert.equal(lost.log[2][1], webgpu.log[2][1], 'before the loss the run is the WebGPU run');
});

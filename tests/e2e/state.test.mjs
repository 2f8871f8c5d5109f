// Page state tests (page code only, so one build: single-threaded): Reset clears every view of
// the old model and stops its chains; a model uploaded after Reset is what the status shows;
// a model saved in this browser is restored only where the page's settings can agree with it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { builds, closeAll, launch, openPage, waitFinished, waitReady } from './lib.mjs';

after(closeAll);

const build = builds[1];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = (page, fn, arg, timeout = 60_000) => page.waitForFunction(fn, arg, { timeout, polling: 100 });
const RUN = 'layers=32,16&epochs=2&init_trials=1&monitor_cases=300&supervised=0&seed=2&backend=cpu&chain_speed=200&chain_every=5&dream_speed=100';
const VIEW_CANVASES = ['#filters-canvas', '#samples-canvas', '#dream-canvas', '#reconstructions-canvas'];

async function train(page) {
  await waitReady(page);
  await page.click('#train-start');
  const run = await waitFinished(page);
  assert.equal(run.finished, 'done', JSON.stringify(run));
}

// What the views show: each canvas's size, the step counters, the filmstrip and histograms.
const viewState = (page, canvases) => page.evaluate((selectors) => ({
  canvases: Object.fromEntries(selectors.map((s) => [s, `${document.querySelector(s).width}x${document.querySelector(s).height}`])),
  chainSteps: document.getElementById('chain-steps').textContent,
  dreamSteps: document.getElementById('dream-steps').textContent,
  film: document.querySelectorAll('#dream-filmstrip li').length,
  histograms: document.querySelectorAll('#histograms figure:not([hidden])').length,
}), canvases);

test('Reset clears the filters, samples, chains, dream and reconstructions; a model uploaded next is what the status shows', async () => {
  const { page, problems } = await openPage(build, RUN);
  try {
    await train(page);
    await waitFor(page, () => Number(document.getElementById('samples-canvas').dataset.steps || 0) > 0
      && Number(document.getElementById('dream-canvas').dataset.steps || 0) > 0
      && document.querySelectorAll('#dream-filmstrip li').length > 0
      && document.getElementById('reconstructions-canvas').width > 1
      && document.getElementById('filters-canvas').width > 1);
    const model = await page.evaluate(() => window.app.rpc('model_save'));

    await page.click('#train-reset');
    await waitFor(page, () => window.app.model === null && /no model/.test(document.getElementById('train-status').textContent));
    const cleared = { canvases: Object.fromEntries(VIEW_CANVASES.map((s) => [s, '1x1'])), chainSteps: '0', dreamSteps: '0', film: 0, histograms: 0 };
    await waitFor(page, (selectors) => selectors.every((s) => document.querySelector(s).width === 1), VIEW_CANVASES, 10_000).catch(() => {});
    assert.deepEqual(await viewState(page, VIEW_CANVASES), cleared);
    // The old chains and dream are stopped, not just hidden: nothing is drawn a second later.
    await sleep(1500);
    assert.deepEqual(await viewState(page, VIEW_CANVASES), cleared);

    await page.setInputFiles('#model-upload', { name: 'model.json', mimeType: 'application/json', buffer: Buffer.from(model) });
    await waitFor(page, () => window.app.model !== null);
    const status = await page.textContent('#train-status');
    assert.doesNotMatch(status, /no model/i);
    assert.match(status, /784–32–16/);
    // The uploaded model's views come back.
    await waitFor(page, () => document.getElementById('filters-canvas').width > 1 && Number(document.getElementById('samples-canvas').dataset.steps || 0) > 0);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

const controls = (page) => page.evaluate(() => ({
  layers: document.getElementById('p-layers').value, seed: document.getElementById('p-seed').value, epochs: document.getElementById('p-epochs').value,
}));

test('the saved model is not restored beside a link\'s other settings; a plain visit restores it with its settings', async () => {
  const context = await (await launch()).newContext();
  try {
    const first = await openPage(build, RUN, { context });
    await train(first.page);
    await waitFor(first.page, () => document.getElementById('storage-status').dataset.saved);
    assert.deepEqual(first.problems, []);
    await first.page.close();

    // A link with other settings: its controls stand and the saved model stays out.
    const link = await openPage(build, 'layers=24&epochs=3&seed=9&supervised=0&backend=cpu', { context });
    await waitReady(link.page);
    await waitFor(link.page, () => /not restored/.test(document.getElementById('storage-status').textContent));
    assert.equal(await link.page.evaluate(() => window.app.model), null);
    assert.deepEqual(await controls(link.page), { layers: '24', seed: '9', epochs: '3' });
    const status = await link.page.textContent('#storage-status');
    assert.match(status, /RBM hidden sizes: 24 here, 32, 16 in the saved model/);
    // On request the saved model comes back, and the controls take its settings.
    await link.page.click('#storage-restore-saved');
    await waitFor(link.page, () => window.app.model?.layers?.length === 2);
    assert.deepEqual(await controls(link.page), { layers: '32, 16', seed: '2', epochs: '2' });
    assert.match(await link.page.evaluate(() => location.hash), /layers=32%2C\+?16|layers=32%2C16|layers=32%2C%2016/);
    assert.deepEqual(link.problems, []);
    await link.page.close();

    // A visit without settings in its link: the model is restored and the controls say how it
    // was trained.
    const plain = await openPage(build, 'backend=cpu', { context });
    await waitReady(plain.page);
    await waitFor(plain.page, () => document.getElementById('storage-status').dataset.restored);
    assert.deepEqual(await controls(plain.page), { layers: '32, 16', seed: '2', epochs: '2' });
    assert.match(await plain.page.textContent('#storage-status'), /settings below are the model's/);
    assert.deepEqual(plain.problems, []);
    await plain.page.close();
  } finally {
    await context.close();
  }
});

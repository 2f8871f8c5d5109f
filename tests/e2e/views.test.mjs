// End-to-end tests of the model views and storage (www/views/, www/storage.js), in both
// builds: a small two-layer stack trains on the CPU and every view draws and moves; the
// model saved in IndexedDB comes back after a reload; screenshots of the views are kept as
// artifacts; a supervised run fills the confusion matrix, whose cells show their cases.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts as defaultArtifacts, builds, closeAll, openPage, waitFinished, waitReady } from './lib.mjs';

const artifacts = process.env.E2E_ARTIFACTS || defaultArtifacts;
// Small and quick: two layers of 32 and 16 units, 3 epochs, one initialisation trial.
const RBM_RUN = 'layers=32,16&epochs=3&init_trials=1&monitor_cases=300&supervised=0&held_out=0.1&seed=2&backend=cpu&chain_speed=200&chain_every=5&dream_speed=100';
const SUPERVISED_RUN = 'layers=32&epochs=2&init_trials=1&monitor_cases=300&supervised=1&sup_max_iterations=15&held_out=0.1&seed=3&backend=cpu';
const MAX_EXAMPLES = 40;

// Size, distinct values and an FNV-1a digest of a canvas's pixels.
function canvasState(page, selector) {
  return page.evaluate((sel) => {
    const canvas = document.querySelector(sel);
    if (!canvas || canvas.width < 2) return { width: canvas?.width ?? 0, height: canvas?.height ?? 0, distinct: 0, digest: 0, drawn: 0 };
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const values = new Set();
    let digest = 0x811c9dc5;
    for (let k = 0; k < pixels.length; k += 1) {
      if (k % 4 !== 3) values.add((k % 4) * 256 + pixels[k]);
      digest = Math.imul(digest ^ pixels[k], 0x01000193) >>> 0;
    }
    return { width: canvas.width, height: canvas.height, distinct: values.size, digest, drawn: Number(canvas.dataset.drawn || 0), steps: Number(canvas.dataset.steps || 0) };
  }, selector);
}

const waitFor = (page, fn, arg, timeout = 120_000) => page.waitForFunction(fn, arg, { timeout, polling: 100 });

async function trainToEnd(page) {
  await waitReady(page);
  await page.click('#train-start');
  const run = await waitFinished(page);
  assert.equal(run.finished, 'done', JSON.stringify(run));
  return run;
}

after(closeAll);

for (const build of builds) {
  describe(`views (${build.name})`, () => {
    let opened;
    let page;
    const seen = {};

    before(async () => {
      opened = await openPage(build, RBM_RUN);
      page = opened.page;
    });
    after(async () => opened?.page.close());

    test('a two-layer stack trains; filters, histograms, reconstructions, samples and the dream draw and change', async () => {
      await waitReady(page);
      await page.click('#train-start');
      // Filters after the first epoch, to compare with the trained ones.
      await waitFor(page, () => Number(document.getElementById('filters-canvas').dataset.drawn || 0) >= 1);
      const early = await canvasState(page, '#filters-canvas');
      const run = await waitFinished(page);
      assert.equal(run.finished, 'done', JSON.stringify(run));
      assert.equal(run.log.length, 6, `two layers × 3 epochs: ${run.log.join(' | ')}`);
      // The training charts took every epoch.
      const points = await page.evaluate(() => Number(document.getElementById('chart-recon').dataset.points));
      assert.ok(points >= 3, `reconstruction-error chart points: ${points}`);

      await waitFor(page, (drawn) => Number(document.getElementById('filters-canvas').dataset.drawn || 0) > drawn, early.drawn);
      const filters = await canvasState(page, '#filters-canvas');
      // 32 filters of 28×28 in a 6-wide grid, each tile scaled by its own largest weight.
      assert.ok(filters.width > 150 && filters.height > 150, JSON.stringify(filters));
      assert.ok(filters.distinct > 50, `filter canvas looks blank: ${JSON.stringify(filters)}`);
      assert.notEqual(filters.digest, early.digest, 'the filters changed with training');
      seen.filters = filters;

      // The chains keep running after training: two frames some steps apart differ.
      await waitFor(page, () => Number(document.getElementById('samples-canvas').dataset.steps || 0) > 0);
      const first = await canvasState(page, '#samples-canvas');
      assert.ok(first.distinct > 10, `sample canvas looks blank: ${JSON.stringify(first)}`);
      await waitFor(page, (steps) => Number(document.getElementById('samples-canvas').dataset.steps) >= steps + 20, first.steps);
      const later = await canvasState(page, '#samples-canvas');
      assert.notEqual(later.digest, first.digest, `samples did not change between step ${first.steps} and ${later.steps}`);
      const counter = await page.evaluate(() => [document.getElementById('chain-steps').textContent, document.getElementById('samples-canvas').dataset.steps]);
      assert.equal(counter[0], counter[1], 'the step counter shows the frame drawn');

      const dream = await canvasState(page, '#dream-canvas');
      assert.ok(dream.steps > 0 && dream.distinct > 5, `dream: ${JSON.stringify(dream)}`);
      await waitFor(page, () => document.querySelectorAll('#dream-filmstrip canvas').length >= 2);

      const recon = await canvasState(page, '#reconstructions-canvas');
      assert.ok(recon.distinct > 20 && recon.width > recon.height, `reconstructions: ${JSON.stringify(recon)}`);
      const histograms = await page.$$eval('#histograms figure:not([hidden])', (figures) => figures.map((f) => Number(f.dataset.total)));
      assert.equal(histograms.length, 2, 'one histogram per RBM layer');
      assert.ok(histograms.every((total) => total > 0), JSON.stringify(histograms));

      // Colour mode: the mode control (folded under Options) redraws the filters with hue.
      await page.click('#filters-panel details.view-options > summary');
      await page.selectOption('#filter-mode', 'colour');
      await waitFor(page, () => document.getElementById('filters-canvas').dataset.mode === 'colour');
      const colour = await canvasState(page, '#filters-canvas');
      assert.notEqual(colour.digest, filters.digest);
      assert.match(await page.evaluate(() => location.hash), /filter_mode=colour/);
      await page.selectOption('#filter-mode', 'grey');
      await waitFor(page, () => document.getElementById('filters-canvas').dataset.mode === 'grey');
      assert.deepEqual(opened.problems, []);
    });

    test('a bad case list is refused next to its field; a good one restarts the chains from those cases', async () => {
      await page.click('#samples-panel details.view-options > summary');
      await page.fill('#chain-cases', '5-2');
      await page.press('#chain-cases', 'Enter');
      await page.dispatchEvent('#chain-cases', 'change');
      await waitFor(page, () => !document.getElementById('chain-cases-error').hidden, null, 10_000);
      assert.match(await page.textContent('#chain-cases-error'), /backwards/);
      await page.fill('#chain-cases', '3,17,42');
      await page.dispatchEvent('#chain-cases', 'change');
      await waitFor(page, () => document.getElementById('chain-cases-error').hidden && /cases 3, 17, 42/.test(document.getElementById('samples-note').textContent), null, 10_000);
      assert.match(await page.evaluate(() => location.hash), /chain_cases=3%2C17%2C42/);
    });

    test('screenshots of the main views are saved as artifacts', async () => {
      const dir = join(artifacts, build.name);
      mkdirSync(dir, { recursive: true });
      for (const key of ['filters', 'histograms', 'reconstructions', 'samples', 'dream', 'storage', 'charts']) {
        const panel = page.locator(`[data-hide-key="${key}"]`).first();
        const path = join(dir, `${key}.png`);
        await panel.screenshot({ path });
        const { size } = statSync(path);
        assert.ok(size > 2000, `${path}: ${size} bytes`);
      }
      const full = join(dir, 'page.png');
      await page.screenshot({ path: full, fullPage: true });
      assert.ok(statSync(full).size > 20_000);
    });

    test('the model saved in IndexedDB comes back after a reload', async () => {
      await waitFor(page, () => document.getElementById('storage-status').dataset.saved, null, 30_000);
      const before = await canvasState(page, '#filters-canvas');
      await page.reload();
      await waitFor(page, () => document.getElementById('storage-status')?.dataset.restored, null, 90_000);
      assert.match(await page.textContent('#storage-status'), /Restored the model/);
      await waitFor(page, () => Number(document.getElementById('filters-canvas')?.dataset.drawn || 0) >= 1);
      const after = await canvasState(page, '#filters-canvas');
      assert.equal(after.digest, before.digest, 'the restored filters equal the saved ones');
      assert.deepEqual([after.width, after.height], [seen.filters.width, seen.filters.height]);
      // Samples run from the restored model.
      await waitFor(page, () => Number(document.getElementById('samples-canvas').dataset.steps || 0) > 0);
    });
  });

  test(`supervised results (${build.name}): the confusion matrix covers the held-out cases and its cells show their cases`, async () => {
    const { page, problems } = await openPage(build, SUPERVISED_RUN);
    try {
      await trainToEnd(page);
      await waitFor(page, () => document.getElementById('results-accuracy').dataset.error !== undefined, null, 60_000);
      const heldOut = await page.evaluate(() => window.app.data.n_held_out);
      const matrix = await page.evaluate(() => {
        const table = document.getElementById('confusion-matrix');
        const cells = [...table.querySelectorAll('td[data-truth]')].map((td) => ({ t: Number(td.dataset.truth), p: Number(td.dataset.predicted), n: Number(td.dataset.count) }));
        return { total: Number(table.dataset.total), cells, accuracy: document.getElementById('results-accuracy').textContent };
      });
      assert.ok(heldOut > 0);
      assert.equal(matrix.cells.length, 100, 'ten classes, a 10×10 grid');
      assert.equal(matrix.cells.reduce((sum, c) => sum + c.n, 0), heldOut, 'the cells sum to the held-out count');
      assert.equal(matrix.total, heldOut);
      assert.match(matrix.accuracy, new RegExp(`on ${heldOut} held-out cases`));

      // A busy off-diagonal cell if there is one, else the busiest cell.
      const wrong = matrix.cells.filter((c) => c.t !== c.p && c.n > 0).sort((a, b) => b.n - a.n);
      const cell = wrong[0] ?? [...matrix.cells].sort((a, b) => b.n - a.n)[0];
      await page.click(`#confusion-matrix td[data-truth="${cell.t}"][data-predicted="${cell.p}"]`);
      await waitFor(page, (c) => {
        const list = document.getElementById('confusion-examples');
        return list.dataset.truth === String(c.t) && list.dataset.predicted === String(c.p) && list.dataset.tiles !== undefined;
      }, cell, 30_000);
      const tiles = await page.$$eval('#confusion-examples li canvas', (canvases) => canvases.filter((c) => c.width > 1).length);
      assert.equal(tiles, Math.min(cell.n, MAX_EXAMPLES));

      // Keyboard: move to the diagonal cell of the same row and open it with Enter.
      await page.focus(`#confusion-matrix td[data-truth="${cell.t}"][data-predicted="${cell.p}"]`);
      const steps = cell.t - cell.p;
      for (let k = 0; k < Math.abs(steps); k += 1) await page.keyboard.press(steps > 0 ? 'ArrowRight' : 'ArrowLeft');
      await page.keyboard.press('Enter');
      const diagonal = matrix.cells.find((c) => c.t === cell.t && c.p === cell.t);
      await waitFor(page, (t) => {
        const list = document.getElementById('confusion-examples');
        return list.dataset.truth === String(t) && list.dataset.predicted === String(t);
      }, cell.t, 30_000);
      await waitFor(page, (n) => document.querySelectorAll('#confusion-examples li').length === n, Math.min(diagonal.n, MAX_EXAMPLES), 30_000);

      const misclassified = matrix.cells.filter((c) => c.t !== c.p).reduce((sum, c) => sum + c.n, 0);
      const shown = await page.$$eval('#misclassified li figcaption', (captions) => captions.map((c) => c.textContent));
      assert.equal(shown.length, Math.min(misclassified, 60));
      for (const caption of shown) {
        const [truth, predicted] = caption.split(' → ');
        assert.notEqual(truth, predicted, `misclassified tile captioned ${caption}`);
      }
      const dir = join(artifacts, build.name);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, 'results.png');
      await page.locator('[data-hide-key="results"]').screenshot({ path });
      assert.ok(statSync(path).size > 2000);
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
}

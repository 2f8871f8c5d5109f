// The Local RBM mode (issue 19), in both builds: a family=local_rbm link shows its settings
// (each with a tooltip) and views and hides the DBN's; it trains a local-patch RBM on grating
// crops live (the reconstruction error per epoch falls, the filters grid is drawn with one cell
// per patch position); a changed control goes to the URL hash; a bad value in the link names
// its field.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, closeAll, openPage, waitReady, waitFinished, screenshot } from './lib.mjs';

after(closeAll);

// 16² crops, 8×8 patches 4 apart (3 × 3 positions), 4 filters each, 4 epochs.
const SMALL_LR = 'family=local_rbm&lr_image_size=16&lr_patch=8&lr_stride=4&lr_hidden=4&lr_cases=256&lr_batch=32&lr_epochs=4&lr_rate=0.02&lr_per_position=4';
const shown = (page, selector) => page.evaluate((sel) => {
  const element = document.querySelector(sel);
  return !!element && element.checkVisibility();
}, selector);

// E2E_BUILD=single-threaded (or threaded) runs one build only.
for (const build of builds.filter((b) => !process.env.E2E_BUILD || b.name === process.env.E2E_BUILD)) {
  describe(`${build.name} build`, () => {
    test('a family=local_rbm link trains a local-patch RBM live: the error falls, the filters grid is drawn per position', async () => {
      const { page, problems } = await openPage(build, `${SMALL_LR}&lr_backend=cpu`);
      try {
        await waitReady(page);
        assert.equal(await page.inputValue('#family'), 'local_rbm');
        for (const id of ['#lr-source', '#lr-image-size', '#lr-patch', '#lr-stride', '#lr-hidden', '#lr-tied', '#lr-rate', '#lr-backend', '#p-seed', '#lr-filters-canvas', '#chart-lr-error']) {
          assert.ok(await shown(page, id), `${id} should show for local_rbm`);
        }
        for (const id of ['#preset', '#p-layers', '#advanced-settings', '#samples-canvas', '#chart-recon', '#train-step-batch']) {
          assert.equal(await shown(page, id), false, `${id} should be hidden for local_rbm`);
        }
        const untitled = await page.$$eval('#local-rbm-settings :is(input, select)', (controls) => controls.filter((c) => !c.closest('[title]')?.title).map((c) => c.id));
        assert.deepEqual(untitled, [], 'every Local RBM control has a tooltip');
        assert.match(await page.textContent('#lr-arch-line'), /^16×16 crops → 3×3 positions × 4 hidden \(36 units\) · patches 8×8, stride 4 · 2,304 weights · 4 epochs of 256 crops/);

        await page.click('#train-start');
        const run = await waitFinished(page, 180_000);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
        const chart = await page.$eval('#chart-lr-error', (box) => ({ ...box.dataset }));
        assert.equal(chart.points, '4');
        assert.ok(Number(chart.last) < Number(chart.first), `the error per epoch did not fall: ${chart.first} → ${chart.last}`);
        await page.waitForFunction(() => document.getElementById('lr-filters-canvas').dataset.drawn, null, { timeout: 30_000 });
        // 3 × 3 cells of 2 × 2 filters of 8 × 8, 3 px apart: wider than one cell, and square.
        const size = await page.$eval('#lr-filters-canvas', (c) => [c.width, c.height]);
        assert.ok(size[0] === size[1] && size[0] > 3 * 16, `the filters grid is ${size}`);
        assert.match(await page.textContent('#lr-filters-note'), /^9 positions \(3 × 3\), 4 filters shown per position, after epoch 4\./);
        await screenshot(page, `local_rbm-${build.name}`);

        // Save model: the CLI's local_rbm.bin, whole: magic, header, then every parameter.
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#lr-save-model')]);
        assert.equal(download.suggestedFilename(), 'local_rbm.bin');
        const file = readFileSync(await download.path());
        assert.equal(file.subarray(0, 8).toString('latin1'), 'DBLOCAL1');
        const headerLength = Number(file.readBigUInt64LE(8));
        const header = JSON.parse(file.subarray(16, 16 + headerLength).toString('utf8'));
        assert.equal(header.format, 'deepbelief-local-rbm/1');
        assert.deepEqual(header.layers.map((l) => [l.geometry.rows, l.geometry.patch, l.geometry.stride, l.geometry.hidden_per_patch, l.weights, l.hidden_bias, l.visible_bias]), [[16, 8, 4, 4, 2304, 36, 256]]);
        assert.deepEqual(header.history[0].map((e) => e.epoch), [1, 2, 3, 4]);
        assert.equal(header.history[0][3].reconstruction_error, Number(chart.last));
        assert.equal(file.length, 16 + headerLength + 4 * (2304 + 36 + 256));
        const parameters = new Float32Array(file.buffer.slice(file.byteOffset + 16 + headerLength, file.byteOffset + file.length));
        assert.ok(parameters.every(Number.isFinite) && parameters.some((w) => w !== 0));

        // A changed control goes to the hash.
        await page.fill('#lr-rate', '0.01');
        await page.dispatchEvent('#lr-rate', 'change');
        assert.match(await page.evaluate(() => location.hash), /lr_rate=0\.01/);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a bad value in the link names its field', async () => {
      const { page } = await openPage(build, 'family=local_rbm&lr_patch=0&lr_backend=cpu');
      try {
        await waitReady(page);
        assert.match(await page.textContent('#lr-patch-error'), /Patch size \(lr_patch\): expected a value from 1 to 512, got 0/);
      } finally {
        await page.close();
      }
    });
  });
}

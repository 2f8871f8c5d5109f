// The Local RBM mode's stacks (issue 19): a family=local_rbm link with `lr_above` trains a
// greedy stack on grating crops live, layer after layer (a local layer, then a dense one over
// its feature map): the error chart holds one series per layer, the filters view follows the
// layer in training and shows either layer on request (the upper one projected to the image),
// the network draws both layers, and Save model's file is the CLI's local_rbm.bin with both
// layers (header, every epoch of each, the parameters' count and finiteness). A bad stack in
// the link names its field, and one that only the engine can judge comes back next to its
// control. Both builds (E2E_BUILD picks one).
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, closeAll, openPage, waitReady, waitFinished, screenshot } from './lib.mjs';

after(closeAll);

// 16² crops, 8×8 patches 4 apart (3 × 3 positions × 4), then dense:8 over the 3 × 3 × 4 map;
// 3 epochs a layer.
const STACK = 'family=local_rbm&lr_image_size=16&lr_patch=8&lr_stride=4&lr_hidden=4&lr_above=dense:8&lr_cases=256&lr_batch=32&lr_epochs=3&lr_rate=0.02&lr_per_position=4&lr_backend=cpu';
const shown = (page, selector) => page.evaluate((sel) => {
  const element = document.querySelector(sel);
  return !!element && element.checkVisibility();
}, selector);
const drawnLayer = async (page, layer, after) => {
  await page.waitForFunction(([l, n]) => {
    const canvas = document.getElementById('lr-filters-canvas');
    return canvas.dataset.layer === l && Number(canvas.dataset.drawn) > n;
  }, [String(layer), after], { timeout: 30_000 });
  return page.$eval('#lr-filters-canvas', (c) => ({ width: c.width, height: c.height, drawn: Number(c.dataset.drawn) }));
};

for (const build of builds.filter((b) => !process.env.E2E_BUILD || b.name === process.env.E2E_BUILD)) {
  describe(`${build.name} build`, () => {
    test('a two-layer stack trains layer after layer: an error series and a filters view per layer, Save model holds both', async () => {
      const { page, problems } = await openPage(build, STACK);
      try {
        await waitReady(page);
        assert.equal(await page.inputValue('#lr-above'), 'dense:8');
        assert.ok(await shown(page, '#lr-above') && await shown(page, '#lr-rate-above'));
        const untitled = await page.$$eval('#local-rbm-settings :is(input, select), #lr-filters-panel :is(input, select, button)', (controls) => controls.filter((c) => !(c.title || c.closest('[title]')?.title)).map((c) => c.id));
        assert.deepEqual(untitled, [], 'every control has a tooltip');
        assert.match(await page.textContent('#lr-arch-line'), /^16×16 crops → 3×3 positions × 4 hidden \(36 units\) .*\(layer 1\), each layer in turn · layer 2 dense:8 → 1×1 × 8 \(8 units\) · 2,592 weights in all$/);
        assert.deepEqual(await page.evaluate(() => window.app.architecture.rbm), [36, 8], 'the network draws both layers');

        await page.click('#train-start');
        const run = await waitFinished(page, 240_000);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
        const chart = await page.$eval('#chart-lr-error', (box) => ({ points: box.dataset.points, errors: JSON.parse(box.dataset.errors) }));
        assert.equal(chart.points, '6', 'six epochs in all');
        assert.equal(chart.errors.length, 2);
        for (const [k, errors] of chart.errors.entries()) {
          assert.equal(errors.length, 3, `layer ${k + 1}'s epochs`);
          assert.ok(errors.every((e) => Number.isFinite(e) && e > 0) && errors[2] < errors[0], `layer ${k + 1}'s error did not fall: ${errors}`);
        }
        assert.match(await page.textContent('#train-status'), /Layer 2 \/ 2 · Epoch 3 \/ 3/);

        // The view follows the layer in training: layer 2, one cell of 4 filters seeing the
        // whole 16² crop (2 × 2 tiles of 16 with one-pixel gaps, 3 px around the cell).
        assert.ok(await shown(page, '#lr-view-layer'), 'the layer choice shows for a stack');
        const top = await drawnLayer(page, 1, 0);
        assert.deepEqual([top.width, top.height], [2 * 17 + 1 + 6, 2 * 17 + 1 + 6]);
        assert.match(await page.textContent('#lr-filters-note'), /^Layer 2 \(dense:8\): 1 position \(1 × 1\), 4 filters shown per position, projected to the image, after its epoch 3\./);
        await screenshot(page, `local_rbm_stack-top-${build.name}`);
        // Layer 1 on request: its 3 × 3 grid of 8 × 8 filters; the choice goes to the hash.
        await page.selectOption('#lr-view-layer', '0');
        const bottom = await drawnLayer(page, 0, top.drawn);
        assert.ok(bottom.width === bottom.height && bottom.width > 3 * 16, `layer 1's grid is ${bottom.width} × ${bottom.height}`);
        assert.match(await page.textContent('#lr-filters-note'), /^Layer 1 \(local:8:4:4\): 9 positions \(3 × 3\), 4 filters shown per position, after its epoch 3\./);
        assert.match(await page.evaluate(() => location.hash), /lr_view_layer=0/);

        // Save model: the CLI's local_rbm.bin with both layers.
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#lr-save-model')]);
        assert.equal(download.suggestedFilename(), 'local_rbm.bin');
        const file = readFileSync(await download.path());
        assert.equal(file.subarray(0, 8).toString('latin1'), 'DBLOCAL1');
        const headerLength = Number(file.readBigUInt64LE(8));
        const header = JSON.parse(file.subarray(16, 16 + headerLength).toString('utf8'));
        assert.equal(header.format, 'deepbelief-local-rbm/1');
        const layers = header.layers.map((l) => [l.geometry.rows, l.geometry.cols, l.geometry.channels, l.geometry.patch, l.geometry.stride, l.geometry.hidden_per_patch, l.visible_units, l.weights, l.hidden_bias, l.visible_bias]);
        assert.deepEqual(layers, [[16, 16, 1, 8, 4, 4, 'gaussian', 2304, 36, 256], [3, 3, 4, 3, 1, 8, 'bernoulli', 288, 8, 36]]);
        assert.deepEqual(header.settings.map((s) => [s.epochs, s.batch_size, s.seed]), [[3, 32, 1], [3, 32, 2]]);
        assert.deepEqual(header.history.map((h) => h.map((e) => e.reconstruction_error)), chart.errors, 'the file\'s history is the chart');
        assert.equal(header.inputs.stack, 'local:8:4:4,dense:8');
        const count = 2304 + 36 + 256 + 288 + 8 + 36;
        assert.equal(file.length, 16 + headerLength + 4 * count);
        const parameters = new Float32Array(file.buffer.slice(file.byteOffset + 16 + headerLength, file.byteOffset + file.length));
        assert.ok(parameters.every(Number.isFinite));
        assert.ok(parameters.subarray(2304 + 36 + 256, 2304 + 36 + 256 + 288).some((w) => w !== 0), 'layer 2\'s weights');
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a bad stack names its field: in the link at once, from the engine next to its control', async () => {
      const { page } = await openPage(build, 'family=local_rbm&lr_above=dense:x&lr_backend=cpu');
      try {
        await waitReady(page);
        assert.match(await page.textContent('#lr-above-error'), /^Layers above \(lr_above\): 'dense:x' is not local:PATCH:STRIDE:UNITS, tied:PATCH:STRIDE:UNITS or dense:UNITS/);
        // Well formed but too large for the 6 × 6 map of the default first layer.
        await page.fill('#lr-above', 'local:7:1:4');
        await page.dispatchEvent('#lr-above', 'change');
        assert.equal(await shown(page, '#lr-above-error'), false);
        assert.match(await page.textContent('#lr-arch-line'), /Layer 2 \(local:7:1:4\) does not fit the 6×6×16 feature map below/);
        await page.click('#train-start');
        await page.waitForFunction(() => !document.getElementById('lr-above-error').hidden, null, { timeout: 30_000 });
        assert.match(await page.textContent('#lr-above-error'), /^layers_above: layer 2 \(local:7:1:4\) over the 6 × 6 × 16 feature map below: patch/);
        assert.equal(await page.evaluate(() => window.app.running), false);
      } finally {
        await page.close();
      }
    });
  });
}

// The network drawing (www/views/network.js), in both builds: it draws the architecture the
// model panel announces and redraws on each `architecture` event, a layer opens its settings
// (click, Enter, Space emit `open_layer`), "+ layer" / "− layer" emit `edit_layers`, and a run
// marks the layer in training and then every trained layer done.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, SMALL, openPage, waitReady, startTraining, waitFinished, closeAll, screenshot } from './lib.mjs';

after(closeAll);

const layersOf = (page) => page.evaluate(() => document.querySelector('#network-drawing svg')?.dataset.layers ?? null);
const waitLayers = (page, layers) => page.waitForFunction((expected) => document.querySelector('#network-drawing svg')?.dataset.layers === expected, layers, { timeout: 30_000 });
const emitArchitecture = (page, architecture) => page.evaluate((value) => window.app.emit('architecture', value), architecture);
const MNIST = { inputs: 784, imageShape: [28, 28], supervised: false, supervisedHidden: [], outputs: 10, outputKind: 'soft_max' };

// Records the drawing's own events (`open_layer`, `edit_layers`) in window.networkEvents.
async function recordEvents(page) {
  await page.evaluate(() => {
    window.networkEvents = [];
    for (const name of ['open_layer', 'edit_layers']) window.app.on(name, (payload) => window.networkEvents.push({ name, payload }));
  });
}
const takeEvents = (page) => page.evaluate(() => window.networkEvents.splice(0));

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('the drawing shows the architecture, redraws on architecture events and emits open_layer and edit_layers', async () => {
      const { page, problems } = await openPage(build, '');
      try {
        await waitReady(page);
        // The Quick preset: 784 pixels, RBMs of 64 and 32, a supervised stage of 10 classes,
        // as the model panel announces it once the data are in.
        await waitLayers(page, '784,64,32,10');
        const labels = await page.$$eval('#network-drawing g.layer', (groups) => groups.map((g) => ({ kind: g.dataset.kind, index: g.dataset.index, label: [...g.querySelectorAll('.label tspan')].map((t) => t.textContent).join(' '), name: g.getAttribute('aria-label'), role: g.getAttribute('role'), tabindex: g.getAttribute('tabindex') })));
        assert.deepEqual(labels.map((l) => `${l.kind}:${l.index}`), ['inputs:0', 'rbm:0', 'rbm:1', 'outputs:0']);
        assert.deepEqual(labels.map((l) => l.label), ['784 pixels (28×28)', 'RBM 1 · 64', 'RBM 2 · 32', '10 classes (softmax)']);
        assert.equal(labels[1].name, 'RBM layer 1: 64 hidden units. Open its settings.');
        assert.ok(labels.every((l) => l.role === 'button' && l.tabindex === '0'), JSON.stringify(labels));
        // Larger layers draw at most 8 units: 3, "⋮", 3.
        const units = await page.$$eval('#network-drawing g.layer', (groups) => groups.map((g) => g.querySelectorAll('.unit').length));
        assert.deepEqual(units, [6, 6, 6, 6]);
        assert.equal(await page.locator('#network-drawing .links.supervised').count(), 1, 'one supervised set of weights: top RBM → outputs');
        assert.equal(await page.locator('#network-drawing .links.rbm').count(), 2);

        await recordEvents(page);
        await page.click('#network-drawing g.layer[data-kind=rbm][data-index="1"]');
        assert.deepEqual(await takeEvents(page), [{ name: 'open_layer', payload: { kind: 'rbm', index: 1 } }]);
        await page.focus('#network-drawing g.layer[data-kind=rbm][data-index="0"]');
        await page.keyboard.press('Enter');
        assert.deepEqual(await takeEvents(page), [{ name: 'open_layer', payload: { kind: 'rbm', index: 0 } }]);
        await page.focus('#network-drawing g.layer[data-kind=outputs]');
        await page.keyboard.press('Space');
        assert.deepEqual(await takeEvents(page), [{ name: 'open_layer', payload: { kind: 'outputs', index: 0 } }]);

        // An architecture event redraws: one RBM of 100, no supervised stage.
        await emitArchitecture(page, { ...MNIST, rbm: [100] });
        assert.equal(await layersOf(page), '784,100');
        assert.equal(await page.locator('#network-drawing .links.supervised').count(), 0);
        assert.equal(await page.isDisabled('#network-remove-layer'), true, 'one RBM layer always stays');
        assert.equal(await page.isDisabled('#network-add-layer'), false);
        await page.click('#network-add-layer');
        assert.deepEqual(await takeEvents(page), [{ name: 'edit_layers', payload: { rbm: [100, 100] } }]);

        await emitArchitecture(page, { ...MNIST, rbm: [64, 32, 16], supervised: true, supervisedHidden: [20] });
        assert.equal(await layersOf(page), '784,64,32,16,20,10');
        assert.equal(await page.getAttribute('#network-drawing g.layer[data-kind=supervised]', 'aria-label'), 'Supervised hidden layer 1: 20 logistic units. Open its settings.');
        await page.click('#network-remove-layer');
        assert.deepEqual(await takeEvents(page), [{ name: 'edit_layers', payload: { rbm: [64, 32] } }]);

        await emitArchitecture(page, { ...MNIST, rbm: [8, 8, 8, 8, 8, 8, 8, 8], outputs: 3, supervised: true, outputKind: 'linear' });
        assert.equal(await layersOf(page), '784,8,8,8,8,8,8,8,8,3');
        assert.equal(await page.isDisabled('#network-add-layer'), true, `at most 8 RBM layers`);
        assert.equal(await page.getAttribute('#network-drawing g.layer[data-kind=outputs]', 'aria-label'), 'Output layer: 3 outputs (linear). Open its settings.');
        assert.ok(await page.getAttribute('#network-add-layer', 'title'));
        assert.ok(await page.getAttribute('#network-remove-layer', 'title'));
        assert.deepEqual(await takeEvents(page), []);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a run marks the layer in training, then every RBM layer done; narrow screens keep it legible', async () => {
      const { page, problems } = await openPage(build, SMALL);
      try {
        await waitReady(page);
        await waitLayers(page, '784,32,16');
        // Every state a layer of the drawing takes, and whether + / − were enabled meanwhile.
        await page.evaluate(() => {
          window.networkSeen = { training: [], progress: [], editable: [] };
          new MutationObserver(() => {
            for (const g of document.querySelectorAll('#network-drawing g.layer[data-state=training]')) {
              window.networkSeen.training.push(`${g.dataset.kind}:${g.dataset.index}`);
              window.networkSeen.progress.push(g.querySelector('.progress').textContent);
              window.networkSeen.editable.push(!document.getElementById('network-add-layer').disabled || !document.getElementById('network-remove-layer').disabled);
            }
          }).observe(document.getElementById('network-drawing'), { subtree: true, attributes: true, childList: true, characterData: true });
        });
        assert.deepEqual(await page.$$eval('#network-drawing g.layer[data-kind=rbm]', (gs) => gs.map((g) => g.dataset.state)), ['pending', 'pending']);
        await startTraining(page);
        const run = await waitFinished(page);
        assert.equal(run.finished, 'done', run.log.join('\n'));
        const seen = await page.evaluate(() => window.networkSeen);
        assert.ok(seen.training.includes('rbm:0') && seen.training.includes('rbm:1'), `layers seen in training: ${[...new Set(seen.training)]}`);
        assert.ok(seen.progress.some((text) => /^epoch [12]$/.test(text)), `progress texts: ${[...new Set(seen.progress)]}`);
        assert.ok(!seen.editable.some(Boolean), '+ / − layer are disabled while training');
        const states = await page.$$eval('#network-drawing g.layer', (gs) => gs.map((g) => [`${g.dataset.kind}:${g.dataset.index}`, g.dataset.state, g.querySelector('.progress').textContent]));
        assert.deepEqual(states, [['inputs:0', 'done', ''], ['rbm:0', 'done', '✓'], ['rbm:1', 'done', '✓']]);
        assert.equal(await page.isDisabled('#network-add-layer'), false, 'editable again after the run');
        await screenshot(page, `network-${build.name}-after-training`);

        // Reset forgets the model: the layers are pending again.
        await page.click('#train-reset');
        await page.waitForFunction(() => [...document.querySelectorAll('#network-drawing g.layer[data-kind=rbm]')].every((g) => g.dataset.state === 'pending'), null, { timeout: 30_000 });

        // A phone's width: the drawing fits, its labels do not overlap and stay readable.
        await page.setViewportSize({ width: 390, height: 800 });
        // Drawn in CSS pixels: the viewBox follows the drawing's size (the page may make it shorter on phones).
        await page.waitForFunction(() => {
          const svg = document.querySelector('#network-drawing svg');
          const box = svg.getBoundingClientRect();
          return Math.abs(svg.viewBox.baseVal.width - box.width) < 2 && Math.abs(svg.viewBox.baseVal.height - box.height) < 2;
        }, null, { timeout: 10_000 });
        const boxes = await page.$$eval('#network-drawing g.layer .label', (labels) => labels.map((t) => {
          const r = t.getBoundingClientRect();
          return { left: r.left, right: r.right, height: r.height, text: t.textContent };
        }));
        const drawing = await page.$eval('#network-drawing', (d) => d.getBoundingClientRect().toJSON());
        for (let k = 0; k < boxes.length; k += 1) {
          assert.ok(boxes[k].height >= 10, `label "${boxes[k].text}" is ${boxes[k].height} px tall`);
          assert.ok(boxes[k].left >= drawing.left - 1 && boxes[k].right <= drawing.right + 1, `label "${boxes[k].text}" leaves the drawing`);
          if (k) assert.ok(boxes[k].left >= boxes[k - 1].right, `labels "${boxes[k - 1].text}" and "${boxes[k].text}" overlap`);
        }
        await screenshot(page, `network-${build.name}-390`);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });
  });
}

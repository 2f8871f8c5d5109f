// The first screen (issue 15), in both builds: at 1440×900 and 1280×720 Start, the run's
// progress, the network drawing, both live pictures and the headline chart are on screen
// without scrolling, and the pictures change while training; at 390×844 the same order holds
// (Start, network, pictures, charts, settings) with both pictures on screen. Every view has a
// visible caption, the settings show the six up-front ones with the rest under Advanced, the
// status is in words, Pause says "Paused", and the introduction is there.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, closeAll, launch, openPage, waitReady, canvasStats, artifacts } from './lib.mjs';

after(closeAll);

const RUN = 'layers=64,32&epochs=8&supervised=0&backend=cpu&monitor_cases=300&chain_speed=200&chain_every=5';

async function pageAt(build, width, height, hash) {
  const context = await (await launch()).newContext({ viewport: { width, height } });
  const opened = await openPage(build, hash, { context });
  return { ...opened, close: () => context.close() };
}

// Each selector's box, and whether it lies wholly inside the viewport (the page unscrolled).
const boxes = (page, selectors) => page.evaluate((list) => Object.fromEntries(list.map((sel) => {
  const element = document.querySelector(sel);
  if (!element) return [sel, null];
  const r = element.getBoundingClientRect();
  const inside = r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
  return [sel, { top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left), right: Math.round(r.right), width: Math.round(r.width), height: Math.round(r.height), inside }];
})), selectors);

const epochs = (page) => page.evaluate(() => Number(document.getElementById('train-progress').dataset.epochs || 0));
const waitEpochs = (page, n) => page.waitForFunction((k) => Number(document.getElementById('train-progress').dataset.epochs || 0) >= k, n, { timeout: 180_000 });
const drawn = (page) => page.waitForFunction(() => ['samples-canvas', 'filters-canvas'].every((id) => document.getElementById(id)?.width > 1), null, { timeout: 120_000 });

function assertInside(found, selectors, where) {
  for (const sel of selectors) {
    assert.ok(found[sel], `${where}: ${sel} is missing`);
    assert.ok(found[sel].inside, `${where}: ${sel} is not wholly on the first screen: ${JSON.stringify(found[sel])}`);
  }
}

const FIRST_SCREEN = ['#train-start', '#train-progress', '#train-status', '#network-drawing svg', '#samples-canvas', '#filters-canvas'];

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('1440×900: the first screen holds Start, the network, both pictures and the headline chart; the pictures change while training', async () => {
      const { page, problems, close } = await pageAt(build, 1440, 900, RUN);
      try {
        await waitReady(page);
        assert.equal(await page.evaluate(() => scrollY), 0);
        const before = await boxes(page, [...FIRST_SCREEN, '#chart-recon']);
        assertInside(before, FIRST_SCREEN, 'before training');
        assert.ok(before['#chart-recon'].top < 900 - 150, `the headline chart starts too low: ${JSON.stringify(before['#chart-recon'])}`);

        // Paused after the first epoch, then one epoch at a time, so both pictures are
        // compared across first-layer epochs however fast the machine is.
        await page.click('#train-start');
        await drawn(page);
        await waitEpochs(page, 1);
        await page.click('#train-pause');
        await page.waitForFunction(() => window.app.paused);
        const filtersDrawn = () => page.evaluate(() => Number(document.getElementById('filters-canvas').dataset.drawn || 0));
        await page.waitForTimeout(500);
        const first = { samples: await canvasStats(page, '#samples-canvas'), filters: await canvasStats(page, '#filters-canvas'), epochs: await epochs(page), drawn: await filtersDrawn() };
        assert.ok(first.epochs < 8, `layer 1 finished before the pause (${first.epochs} epochs)`);
        await page.click('#train-step-epoch');
        await waitEpochs(page, first.epochs + 1);
        await page.waitForFunction((n) => Number(document.getElementById('filters-canvas').dataset.drawn || 0) > n, first.drawn);
        await page.waitForFunction((steps) => Number(document.getElementById('samples-canvas').dataset.steps || 0) > steps, (await page.evaluate(() => Number(document.getElementById('samples-canvas').dataset.steps || 0))));
        const later = { samples: await canvasStats(page, '#samples-canvas'), filters: await canvasStats(page, '#filters-canvas') };
        assert.notEqual(later.samples.checksum, first.samples.checksum, 'the Gibbs samples did not change while training');
        assert.notEqual(later.filters.checksum, first.filters.checksum, 'the filters did not change while training');
        const during = await boxes(page, [...FIRST_SCREEN, '#chart-recon']);
        assertInside(during, FIRST_SCREEN, 'while training');
        // Drawn at least 3 screen pixels per image pixel of a 28-pixel digit tile row: legible.
        assert.ok(during['#samples-canvas'].width >= 250, `samples drawn only ${during['#samples-canvas'].width} px wide`);
        assert.ok(during['#chart-recon'].top < 900 - 150);
        await page.click('#train-pause');
        await page.screenshot({ path: `${artifacts}first-screen-1440x900-${build.name}.png` });
        assert.deepEqual(problems, []);
      } finally {
        await close();
      }
    });

    test('390×844 (phone): Start, network, pictures, charts, then settings and data; both pictures on screen', async () => {
      const { page, problems, close } = await pageAt(build, 390, 844, RUN.replace('epochs=8', 'epochs=2'));
      try {
        await waitReady(page);
        assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), true, 'the page scrolls sideways on a phone');
        await page.click('#train-start');
        await drawn(page);
        const found = await boxes(page, [...FIRST_SCREEN, '#network-panel', '#headline-panel', '#model-panel', '#data-panel']);
        await page.screenshot({ path: `${artifacts}first-screen-390x844-${build.name}.png` });
        assertInside(found, FIRST_SCREEN, 'phone');
        const order = ['#train-start', '#network-panel', '#samples-canvas', '#headline-panel', '#model-panel', '#data-panel'];
        for (let k = 1; k < order.length; k += 1) {
          assert.ok(found[order[k - 1]].top < found[order[k]].top, `${order[k - 1]} (top ${found[order[k - 1]].top}) should come before ${order[k]} (top ${found[order[k]].top})`);
        }
        assert.deepEqual(problems, []);
      } finally {
        await close();
      }
    });
  });
}

test('1280×720: Start, the network and both pictures still fit the first screen once drawn', async () => {
  const { page, problems, close } = await pageAt(builds[0], 1280, 720, RUN.replace('epochs=8', 'epochs=1'));
  try {
    await waitReady(page);
    await page.click('#train-start');
    await drawn(page);
    const found = await boxes(page, [...FIRST_SCREEN, '#chart-recon']);
    assertInside(found, FIRST_SCREEN, '1280×720');
    assert.ok(found['#chart-recon'].top < 720 - 100, `the headline chart starts too low: ${JSON.stringify(found['#chart-recon'])}`);
    await page.screenshot({ path: `${artifacts}first-screen-1280x720.png` });
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test('captions, the introduction, the up-front settings with the rest under Advanced, plain status lines and "Paused"', async () => {
  const { page, problems, close } = await pageAt(builds[1], 1440, 900, RUN);
  try {
    await waitReady(page);
    // A visible caption on every view, not only a tooltip.
    const captions = await page.evaluate(() => ['network', 'samples', 'filters', 'reconstructions', 'histograms', 'dream', 'results'].map((key) => {
      const caption = document.getElementById(`${key}-caption`);
      return { key, text: caption?.textContent.trim() ?? '', visible: !!caption?.offsetParent };
    }));
    for (const { key, text, visible } of captions) {
      assert.ok(visible && text.length > 40, `${key}: caption ${JSON.stringify(text)} visible=${visible}`);
    }
    assert.match(await page.textContent('#filters-panel'), /excite/);
    assert.match(await page.textContent('#samples-caption'), /Gibbs chain/);
    assert.match(await page.textContent('#dream-caption'), /random/);
    const about = await page.textContent('#about');
    for (const words of [/restricted Boltzmann machine/, /deep belief net/, /Gibbs sampling/, /What to try first/]) assert.match(about, words);

    // Up front: preset, layers, epochs, learning rate, backend, seed; the rest folded.
    const upFront = await page.evaluate(() => ['preset', 'p-layers', 'p-epochs', 'p-learning_rate', 'p-backend', 'p-seed'].map((id) => [id, !!document.getElementById(id)?.offsetParent]));
    assert.deepEqual(upFront.filter(([, shown]) => !shown), []);
    const folded = await page.evaluate(() => {
      const advanced = document.getElementById('advanced-settings');
      const inside = [...advanced.querySelectorAll('input, select')];
      return { open: advanced.open, count: inside.length, untitled: inside.filter((c) => !c.closest('[title]')).map((c) => c.id), hidden: inside.every((c) => !c.checkVisibility()) };
    });
    assert.equal(folded.open, false);
    assert.ok(folded.count > 30 && folded.hidden, JSON.stringify(folded));
    assert.deepEqual(folded.untitled, [], 'every advanced setting keeps its tooltip');

    // The status line is in words; the numbers are in its tooltip.
    const status = await page.evaluate(() => ({ text: document.getElementById('status').textContent, title: document.getElementById('status').title }));
    assert.doesNotMatch(status.text, /check error|e-\d/);
    assert.match(status.text, /^Ready/);
    assert.match(status.title, /matched the CPU/);

    // Paused is shown while paused; an error is cleared by the next action that works.
    await page.click('#train-start');
    await waitEpochs(page, 1);
    await page.click('#train-pause');
    await page.waitForFunction(() => /^Paused/.test(document.getElementById('train-status').textContent));
    await page.click('#train-pause');
    await page.waitForFunction(() => !/^Paused/.test(document.getElementById('train-status').textContent));
    await page.click('#train-cancel');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.finished);
    await page.evaluate(() => {
      const input = document.getElementById('p-epochs');
      input.value = '0';
      input.dispatchEvent(new Event('change'));
    });
    await page.click('#train-start');
    assert.equal(await page.isVisible('#train-error'), true);
    await page.evaluate(() => {
      const input = document.getElementById('p-epochs');
      input.value = '1';
      input.dispatchEvent(new Event('change'));
    });
    await page.click('#train-start');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.finished === 'done', null, { timeout: 120_000 });
    assert.equal(await page.isVisible('#train-error'), false, 'the error stayed after a run that worked');
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test('clicking a layer of the network drawing opens its settings; + layer edits the layers', async () => {
  const { page, problems, close } = await pageAt(builds[1], 1440, 900, '');
  try {
    await waitReady(page);
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,64,32,10');
    await page.click('#network-drawing .layer[data-kind="rbm"][data-index="1"]');
    const opened = await page.evaluate(() => ({
      advanced: document.getElementById('advanced-settings').open,
      focused: document.activeElement?.id,
      selected: document.activeElement?.value.slice(document.activeElement.selectionStart, document.activeElement.selectionEnd),
    }));
    assert.deepEqual(opened, { advanced: true, focused: 'p-layers', selected: '32' });
    await page.click('#network-drawing .layer[data-kind="outputs"]');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'p-sup_output');
    await page.click('#network-add-layer');
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,64,32,32,10');
    assert.equal(await page.inputValue('#p-layers'), '64,32,32');
    assert.match(await page.evaluate(() => location.hash), /layers=64%2C32%2C32/);
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

// The README's iframe examples: each comment and its entry here say the same thing; change both
// together. `shown`: what the comment promises; `others`: what it leaves out; `wait`: the run
// has drawn; `inFrame`: wholly inside the frame (no scrolling), at least 200 px wide.
const DBN_PANELS = ['#samples-panel', '#filters-panel', '#chart-recon', '#chart-accuracy', '#charts-panel', '#results-panel', '#dream-panel', '#reconstructions-panel',
  '#histograms-panel', '#epoch-log-panel', '[data-hide-key="storage"]'];
const README_EXAMPLES = [
  {
    comment: 'An RBM learning digits: only Start and Pause, the network, the Gibbs chains, the filters and the error chart.',
    shown: ['#train-start', '#train-pause', '#network-panel', '#samples-panel', '#filters-panel', '#chart-recon'],
    others: ['.topbar', '#train-step-epoch', '#train-step-batch', '#train-cancel', '#train-reset', '#data-panel', '#model-panel', '#chart-accuracy',
      '#more-heading', '#charts-panel', '#results-panel', '#dream-panel', '#reconstructions-panel', '#histograms-panel', '#epoch-log-panel', '[data-hide-key="storage"]', '#about'],
    wait: () => ['samples-canvas', 'filters-canvas'].every((id) => document.getElementById(id)?.width > 1),
    inFrame: ['#samples-canvas', '#filters-canvas'],
  },
  {
    comment: 'An autoencoder learning digit features: only Start and Pause, the filters, the ρ̂ plot and the cost curve.',
    shown: ['#train-start', '#train-pause', '#ae_filters-panel', '#chart-ae-sparsity', '#chart-ae-cost'],
    others: ['.topbar', '#train-step-epoch', '#train-step-batch', '#train-cancel', '#train-reset', '#data-panel', '#network-panel', '#model-panel', '#family',
      '#ae_reconstructions-panel', '#ae_log-panel', '#more-heading', '#about', ...DBN_PANELS],
    wait: () => document.getElementById('ae-filters-canvas')?.width > 1 && Number(document.getElementById('chart-ae-cost').dataset.iteration) >= 2
      && document.getElementById('chart-ae-sparsity').dataset.drawn,
    // The plots themselves (the captions under them may run past the frame's bottom).
    inFrame: ['#ae-filters-canvas', '#ae-sparsity-canvas', '#chart-ae-cost [role=img]'],
  },
];

const readmeText = () => readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

test("the README's iframe examples are the ones this file checks", () => {
  const comments = [...readmeText().matchAll(/<!-- ([^>]*) -->\s*<iframe /g)].map((m) => m[1]);
  assert.deepEqual(comments, README_EXAMPLES.map((e) => e.comment));
});

for (const [index, example] of README_EXAMPLES.entries()) {
  test(`the README's iframe example ${index + 1} shows exactly what its comment says and fills its frame`, async () => {
    const readme = readmeText();
    const escaped = example.comment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const found = new RegExp(`<!-- ${escaped} -->\\s*<iframe src="[^"#]*#([^"]*)"\\s*width="(\\d+)" height="(\\d+)"`).exec(readme);
    assert.ok(found, `the README has the iframe example "${example.comment}"`);
    const [, hash, width, height] = found;
    const server = await (await import('./lib.mjs')).serverFor(builds[1]);
    const context = await (await launch()).newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    const problems = [];
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      await page.setContent(`<iframe id="demo" style="border:0" width="${width}" height="${height}" src="${server.url.replace(/\/$/, '')}/#${hash}"></iframe>`);
      const frame = await (await page.waitForSelector('#demo')).contentFrame();
      await frame.waitForFunction(() => !document.getElementById('train-start').disabled, null, { timeout: 90_000 });
      await frame.click('#train-start');
      await frame.waitForFunction(example.wait, null, { timeout: 120_000 });
      const seen = await frame.evaluate(([shown, hidden, inFrame]) => {
        const visible = (sel) => { const e = document.querySelector(sel); return !!e && e.checkVisibility(); };
        const box = (sel) => document.querySelector(sel).getBoundingClientRect();
        const boxes = shown.filter(visible).map(box);
        return {
          missing: shown.filter((sel) => !visible(sel)),
          extra: hidden.filter(visible),
          left: Math.min(...boxes.map((b) => b.left)),
          right: Math.max(...boxes.map((b) => b.right)),
          inFrame: inFrame.map((sel) => { const b = box(sel); return b.top >= 0 && b.bottom <= innerHeight && b.right <= innerWidth && b.width > 200 ? true : [sel, b.width, b.bottom, innerHeight]; }),
          width: innerWidth,
        };
      }, [example.shown, example.others, example.inFrame]);
      await page.screenshot({ path: `${artifacts}readme-embed-${index + 1}.png` });
      assert.deepEqual(seen.missing, [], 'the comment promises these');
      assert.deepEqual(seen.extra, [], 'the comment says only those');
      assert.ok(seen.left < 0.05 * seen.width && seen.right > 0.95 * seen.width, `the demo leaves part of its frame empty: ${JSON.stringify(seen)}`);
      assert.deepEqual(seen.inFrame, example.inFrame.map(() => true), 'wholly in the frame and large');
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });
}

test('axe-core finds no WCAG 2 A/AA violation on the trained first screen and below it', async () => {
  const { createRequire } = await import('node:module');
  const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
  const { page, problems, close } = await pageAt(builds[1], 1440, 900, 'layers=32&epochs=1&supervised=1&sup_max_iterations=5&backend=cpu');
  try {
    await waitReady(page);
    await page.click('#train-start');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.finished === 'done', null, { timeout: 120_000 });
    await page.addScriptTag({ path: axePath });
    const violations = await page.evaluate(async () => (await window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })).violations
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
    assert.deepEqual(violations, []);
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

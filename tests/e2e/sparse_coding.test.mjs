// Sparse coding, the third model family (issue 18), in both builds: a link with
// family=sparse_coding shows its settings and views (and hides the DBN's), trains live (the
// objective falls at every step, the basis tiles change, the share of non-zero codes stays near
// the target, reconstructions are drawn, the network shows a patch's pixels → the bases), Pause
// stops the mini-batches and Step adds one, Cancel keeps the basis and Reset forgets it, Save
// model downloads it; a bad value in the link, or one only the engine can judge, names its
// field; the settings survive a reload; the embed builder lists the family's parts.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds, closeAll, openPage, waitReady, waitFinished, canvasStats, screenshot } from './lib.mjs';

after(closeAll);

// 1,000 patches of 10 × 10, 36 bases, 10% non-zero codes, 3 passes of 4 mini-batches.
const SMALL_SC = 'family=sparse_coding&sc_patch=10&sc_cases=1000&sc_bases=36&sc_sparsity=0.1&sc_batch_size=250&sc_passes=3&sc_statistics=whole_set&seed=3';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const step = (page) => page.evaluate(() => Number(document.getElementById('chart-sc-objective').dataset.step ?? -1));
const shown = (page, selector) => page.evaluate((sel) => {
  const element = document.querySelector(sel);
  return !!element && element.checkVisibility();
}, selector);
// Every line of the mini-batch log: [step, objective].
const logLines = (page) => page.$$eval('#sc-log li', (items) => items.map((li) => [Number(li.dataset.step), Number(li.dataset.objective)]));

// Records a checksum of the basis tiles every time they are drawn (a short run may end before
// the test could look).
async function recordFrames(page) {
  await page.evaluate(() => {
    window.scFrames = [];
    const canvas = document.getElementById('sc-basis-canvas');
    new MutationObserver(() => {
      if (!canvas.dataset.drawn) return;
      const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let sum = 0;
      for (let k = 0; k < pixels.length; k += 4) sum = (sum * 31 + pixels[k]) % 1_000_000_007;
      window.scFrames.push(sum);
    }).observe(canvas, { attributes: true, attributeFilter: ['data-drawn'] });
  });
}

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('a family=sparse_coding link trains live: the objective falls, the basis changes, the codes keep near the target sparsity, reconstructions drawn', async () => {
      const { page, problems } = await openPage(build, `${SMALL_SC}&sc_backend=cpu`);
      try {
        await waitReady(page);
        assert.equal(await page.inputValue('#family'), 'sparse_coding');
        // The worker heard it: DBN chains a restored model would start stay paused.
        await page.waitForFunction(() => document.body.dataset.dbnSampling === 'paused', null, { timeout: 10_000 });
        assert.deepEqual(await page.evaluate(() => ['sc-patch', 'sc-cases', 'sc-bases', 'sc-sparsity', 'sc-solver', 'sc-batch-size', 'sc-passes', 'sc-backend'].map((id) => document.getElementById(id).value)),
          ['10', '1000', '36', '0.1', 'cd', '250', '3', 'cpu']);
        for (const id of ['#sc-patch', '#sc-sparsity', '#sc-solver', '#sc-passes', '#p-seed', '#sc-basis-canvas', '#sc-reconstructions-canvas', '#chart-sc-objective', '#chart-sc-codes']) {
          assert.ok(await shown(page, id), `${id} should show for sparse coding`);
        }
        for (const id of ['#preset', '#p-layers', '#advanced-settings', '#ae-hidden', '#samples-canvas', '#filters-canvas', '#ae-filters-canvas', '#chart-recon', '#chart-ae-cost', '#train-step-batch', '#network-add-layer']) {
          assert.equal(await shown(page, id), false, `${id} should be hidden for sparse coding`);
        }
        const untitled = await page.$$eval('#sparse-coding-settings :is(input, select)', (controls) => controls.filter((c) => !c.closest('[title]')?.title).map((c) => c.id));
        assert.deepEqual(untitled, [], 'every sparse coding control has a tooltip');
        assert.match(await page.textContent('#sc-arch-line'), /^100 → 36 bases · 3,600 parameters · 1,000 10×10 patches, 10% non-zero codes, 3 passes/);
        await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '100,36', null, { timeout: 10_000 });
        assert.deepEqual(await page.$$eval('#network-drawing .links', (groups) => groups.map((g) => g.dataset.kind)), ['basis']);
        assert.equal(await page.textContent('#train-step-epoch'), 'Step');

        await recordFrames(page);
        await page.click('#train-start');
        const run = await waitFinished(page, 180_000);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
        assert.equal(run.backend, 'cpu');
        const status = await page.textContent('#train-status');
        assert.match(status, /Pass 3 \/ 3, mini-batch 4 \/ 4 · objective [\d.]+ · [\d.]+% non-zero/, status);

        // The objective fell at every step, in the chart, the log and the progress line alike.
        const chart = await page.$eval('#chart-sc-objective', (box) => ({ ...box.dataset }));
        assert.equal(chart.step, '12');
        const log = await logLines(page);
        assert.deepEqual(log.map(([k]) => k), [...Array(13).keys()]);
        for (let k = 1; k < log.length; k += 1) assert.ok(log[k][1] <= log[k - 1][1] * (1 + 1e-9), `the objective rose at step ${k}: ${JSON.stringify(log)}`);
        assert.ok(log[12][1] < 0.8 * log[0][1], `the objective fell only from ${log[0][1]} to ${log[12][1]}`);
        assert.equal(Number(chart.first), log[0][1]);
        assert.equal(Number(chart.last), log[12][1]);
        // One point after each step's codes and one after its basis step, plus the start.
        assert.equal(chart.points, String(1 + 2 * 12));
        assert.ok(status.includes(`objective ${Number(chart.last).toPrecision(5)}`), status);

        // The basis changed from its first frame; the codes keep near the target sparsity.
        await page.waitForFunction(() => window.scFrames.length >= 2 && Number(document.getElementById('chart-sc-codes').dataset.step) === 12, null, { timeout: 30_000 });
        const frames = await page.evaluate(() => window.scFrames);
        assert.notEqual(frames.at(-1), frames[0], 'the basis did not change while learning');
        const codes = await page.$eval('#chart-sc-codes', (figure) => ({ ...figure.dataset }));
        assert.equal(Number(codes.target), 0.1);
        assert.equal(codes.cases, '1000');
        const fraction = Number(codes.fraction);
        assert.ok(fraction > 0.05 && fraction < 0.2, `${fraction} of the codes are non-zero; the target is 0.1`);
        assert.ok(Math.abs(Number(codes.mean) - 36 * fraction) < 1e-9, 'the mean count per patch is the fraction of the 36 codes');
        assert.match(await page.textContent('#chart-sc-codes figcaption'), /^Codes: [\d.]+% non-zero \(target 10\.0%\)/);
        const bases = await canvasStats(page, '#sc-basis-canvas');
        assert.deepEqual([bases.width, bases.height], [6 * 11 + 1, 6 * 11 + 1], '36 tiles of 10 × 10 in 6 columns');
        assert.ok(bases.distinctGreys > 20, JSON.stringify(bases));
        const reconstructions = await canvasStats(page, '#sc-reconstructions-canvas');
        assert.deepEqual([reconstructions.width, reconstructions.height], [10 * 11 + 1, 2 * 11 + 1]);
        assert.ok(reconstructions.distinctGreys > 20, JSON.stringify(reconstructions));
        for (const id of ['sc_basis-caption', 'sc_reconstructions-caption', 'sc-codes-caption']) {
          assert.ok((await page.textContent(`#${id}`)).length > 60, `${id} says what the view shows`);
        }
        const states = await page.$$eval('#network-drawing g.layer', (groups) => groups.map((g) => `${g.dataset.kind}:${g.dataset.state}`));
        assert.deepEqual(states, ['inputs:done', 'sc_bases:done']);

        // Save model downloads the trainer's model_json(), the CLI's format.
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#sc-save-model')]);
        assert.equal(download.suggestedFilename(), 'sparse_coding.json');
        const saved = await (await import('node:fs/promises')).readFile(await download.path(), 'utf8');
        assert.equal(saved, await page.evaluate(() => window.app.rpc('sc_model_json')));
        const file = JSON.parse(saved);
        assert.equal(file.format, 'deepbelief-sparse-coding/1');
        assert.deepEqual([file.n_inputs, file.n_bases, file.tile, file.batches.length, file.history.length, file.settings.beta_search.target], [100, 36, [10, 10], 12, 4, 0.1]);
        assert.equal(file.batches.at(-1).objective_after_basis, log[12][1]);

        // The first screen (1280×720) holds Start, the network and both pictures, and the
        // headline charts start on it.
        await page.evaluate(() => window.scrollTo(0, 0));
        const onScreen = await page.evaluate((selectors) => selectors.map((sel) => {
          const r = document.querySelector(sel).getBoundingClientRect();
          return [sel, r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth, Math.round(r.top)];
        }), ['#train-start', '#train-status', '#network-drawing svg', '#sc-basis-canvas', '#sc-reconstructions-canvas', '#chart-sc-objective']);
        for (const [sel, inside] of onScreen.slice(0, -1)) assert.ok(inside, `${sel} is not wholly on the first screen`);
        assert.ok(onScreen.at(-1)[2] < 720 - 100, `the objective chart starts too low: ${onScreen.at(-1)[2]}`);
        await screenshot(page, `sparse-coding-${build.name}-trained`);
        const { createRequire } = await import('node:module');
        await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
        const violations = await page.evaluate(async () => (await window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] })).violations
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
        assert.deepEqual(violations, [], 'axe-core: WCAG 2 A/AA on the trained sparse coding page');
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('Pause stops the mini-batches, Step adds one, Cancel keeps the basis, Reset forgets it', async () => {
      const { page, problems } = await openPage(build, 'family=sparse_coding&sc_patch=10&sc_cases=1000&sc_bases=36&sc_batch_size=100&sc_passes=200&sc_statistics=whole_set&sc_backend=cpu');
      try {
        await waitReady(page);
        await page.click('#train-start');
        await page.waitForFunction(() => Number(document.getElementById('chart-sc-objective').dataset.step ?? -1) >= 3, null, { timeout: 120_000 });
        await page.click('#train-pause');
        await page.waitForFunction(() => window.app.paused && /^Paused/.test(document.getElementById('train-status').textContent));
        await sleep(500);
        const paused = await step(page);
        await sleep(2000);
        assert.equal(await step(page), paused, 'mini-batches went on while paused');
        assert.ok(paused < 2000);

        await page.click('#train-step-epoch');
        await page.waitForFunction((k) => Number(document.getElementById('chart-sc-objective').dataset.step) === k + 1, paused, { timeout: 60_000 });
        await sleep(1000);
        assert.equal(await step(page), paused + 1, 'Step trains exactly one mini-batch');
        assert.equal(await page.evaluate(() => window.app.paused), true);
        const log = await logLines(page);
        assert.equal(log.at(-1)[0], paused + 1);
        assert.ok(log.at(-1)[1] <= log.at(-2)[1], `the stepped mini-batch raised the objective: ${JSON.stringify(log.slice(-2))}`);

        await page.click('#train-cancel');
        const run = await waitFinished(page, 60_000);
        assert.equal(run.finished, 'stopped');
        assert.match(await page.textContent('#train-status'), /Cancelled; the basis keeps its last mini-batch/);
        // Nothing learnt is lost: the basis still draws and saves.
        const image = await page.evaluate(() => window.app.rpc('sc_bases', { maxTiles: 36 }));
        assert.ok(image.width > 1);
        assert.equal(await page.isDisabled('#sc-save-model'), false);
        assert.equal(await page.isDisabled('#family'), false, 'the family can change again once the run ended');

        // Reset forgets the basis: its views empty, Save model is off.
        assert.equal(await page.isDisabled('#train-reset'), false, 'Reset is there for a learnt basis');
        await page.click('#train-reset');
        await page.waitForFunction(() => document.getElementById('sc-basis-canvas').width === 1 && document.getElementById('sc-save-model').disabled, null, { timeout: 30_000 });
        assert.deepEqual(await page.evaluate(() => ({
          reconstructions: document.getElementById('sc-reconstructions-canvas').width,
          log: document.querySelectorAll('#sc-log li').length,
          fraction: document.getElementById('chart-sc-codes').dataset.fraction ?? null,
          points: document.getElementById('chart-sc-objective').dataset.points,
          layers: [...document.querySelectorAll('#network-drawing g.layer')].map((g) => g.dataset.state),
        })), { reconstructions: 1, log: 0, fraction: null, points: '0', layers: ['done', 'pending'] });
        await assert.rejects(page.evaluate(() => window.app.rpc('sc_bases', { maxTiles: 36 })), /no sparse coding basis yet/);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });
  });
}

test('a bad value in the link names its field, as does one only the engine can judge; Start refuses both (single-threaded build)', async () => {
  const { page, problems } = await openPage(builds[1], 'family=sparse_coding&sc_sparsity=2&sc_patch=30&sc_cases=500&sc_bases=16&sc_passes=1&sc_backend=cpu&family_hide=1');
  try {
    await waitReady(page);
    // family_hide: an embed fixes the family; its settings still show.
    assert.equal(await shown(page, '#family'), false);
    assert.ok(await shown(page, '#sc-bases'));
    assert.equal(await page.inputValue('#sc-sparsity'), '2', 'the bad value stays where it can be fixed');
    assert.ok(await shown(page, '#sc-sparsity-error'));
    assert.match(await page.textContent('#sc-sparsity-error'), /\(sc_sparsity\): expected a value from 0\.001 to 0\.999, got 2/);
    await page.click('#train-start');
    await page.waitForFunction(() => !document.getElementById('train-error').hidden);
    assert.match(await page.textContent('#train-error'), /Fix the setting first: .*\(sc_sparsity\)/);
    assert.equal(await page.evaluate(() => window.app.running), false);

    // Fixed, the engine refuses the patch larger than the digits, next to its control.
    await page.fill('#sc-sparsity', '0.1');
    await page.dispatchEvent('#sc-sparsity', 'change');
    assert.equal(await shown(page, '#sc-sparsity-error'), false);
    assert.match(await page.evaluate(() => location.hash), /sc_sparsity=0\.1/);
    await page.click('#train-start');
    await page.waitForFunction(() => !document.getElementById('sc-patch-error').hidden, null, { timeout: 30_000 });
    assert.match(await page.textContent('#sc-patch-error'), /^patch: 30 × 30 patches do not fit in the 28 × 28 images/);
    assert.match(await page.textContent('#train-error'), /Fix the setting first: patch:/);
    assert.equal(await page.evaluate(() => window.app.running), false);

    // Fixed too, it trains.
    await page.fill('#sc-patch', '8');
    await page.dispatchEvent('#sc-patch', 'change');
    await page.click('#train-start');
    const run = await waitFinished(page, 120_000);
    assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
    assert.equal(await page.$eval('#chart-sc-codes', (figure) => figure.dataset.target), '0.1');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('the family and its settings live in the hash and survive a reload; the embed builder lists its parts (single-threaded build)', async () => {
  const { page, problems } = await openPage(builds[1], '');
  try {
    await waitReady(page);
    assert.equal(await page.inputValue('#family'), 'dbn');
    assert.equal(await shown(page, '#sparse-coding-settings'), false);
    assert.equal(await shown(page, '#sc-basis-canvas'), false);

    await page.selectOption('#family', 'sparse_coding');
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '144,100');
    assert.equal(await page.evaluate(() => document.body.dataset.family), 'sparse_coding');
    // Every hide key the README lists for sparse coding names a part of its page.
    const row = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').split('\n').find((line) => line.startsWith('| sparse coding (`family=sparse_coding`)'));
    const keys = [...row.split('|')[2].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    assert.equal(new Set(keys).size, 17, keys.join(' '));
    const missing = await page.evaluate((names) => names.filter((key) => !document.querySelector(`[data-hide-key="${key}"]`)?.closest('body[data-family=sparse_coding]')), keys);
    assert.deepEqual(missing, [], 'README hide keys with nothing to hide');
    for (const [id, value] of [['#sc-patch', '0'], ['#sc-bases', '49'], ['#sc-sparsity', '0.08'], ['#sc-passes', '2'], ['#sc-cases', '300']]) {
      await page.fill(id, value);
      await page.dispatchEvent(id, 'change');
    }
    await page.selectOption('#sc-solver', 'raina');
    await page.selectOption('#sc-backend', 'cpu');
    // Whole digits: 784 inputs.
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,49');
    const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
    assert.deepEqual(Object.fromEntries(['family', 'sc_patch', 'sc_bases', 'sc_sparsity', 'sc_passes', 'sc_cases', 'sc_solver', 'sc_backend'].map((k) => [k, hash.get(k)])),
      { family: 'sparse_coding', sc_patch: '0', sc_bases: '49', sc_sparsity: '0.08', sc_passes: '2', sc_cases: '300', sc_solver: 'raina', sc_backend: 'cpu' });
    assert.equal(hash.get('sc_batch_size'), null, 'defaults stay out of the link');

    await page.reload();
    await waitReady(page);
    assert.equal(await page.inputValue('#family'), 'sparse_coding');
    assert.deepEqual(await page.evaluate(() => ['sc-patch', 'sc-bases', 'sc-sparsity', 'sc-passes', 'sc-cases', 'sc-solver', 'sc-backend', 'sc-batch-size'].map((id) => document.getElementById(id).value)),
      ['0', '49', '0.08', '2', '300', 'raina', 'cpu', '500']);
    await page.waitForFunction(() => document.querySelector('#network-drawing svg')?.dataset.layers === '784,49');
    assert.deepEqual(await page.evaluate(() => window.app.settings()), {
      family: 'sparse_coding', sparse_coding: { seed: 1, patch: 0, cases: 300, bases: 49, sparsity: 0.08, solver: 'raina', batch_size: 500, passes: 2, statistics: 'forgetting_first_pass', backend: 'cpu' },
    });
    // Whole digits with Raina's solver train too, and the codes are drawn per digit.
    await page.click('#train-start');
    const run = await waitFinished(page, 180_000);
    assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
    const log = await logLines(page);
    assert.equal(log.length, 3, JSON.stringify(log));
    assert.ok(log[2][1] < log[0][1], `the objective did not fall: ${JSON.stringify(log)}`);
    assert.match(await page.textContent('#sc-reconstructions-note'), /of the 300 cases/);

    // The embed builder lists this family's parts and keeps it in the link.
    await page.click('#embed-open');
    const options = await page.$$eval('#embed-dialog input[data-option]', (boxes) => boxes.filter((box) => box.checkVisibility()).map((box) => box.dataset.option));
    for (const option of ['sc_step', 'sc_basis', 'sc_reconstructions', 'chart_sc_objective', 'chart_sc_codes', 'sc_log']) assert.ok(options.includes(option), `${option} missing from ${options}`);
    for (const option of ['samples', 'filters', 'ae_filters', 'chart_ae_cost', 'results']) assert.ok(!options.includes(option), `${option} listed for sparse coding`);
    for (const option of ['chart_sc_objective', 'chart_sc_codes', 'sc_log']) await page.uncheck(`#embed-show-${option}`);
    const src = await page.evaluate(() => new DOMParser().parseFromString(document.getElementById('embed-code').value, 'text/html').querySelector('iframe').getAttribute('src'));
    const embedded = new URLSearchParams(src.split('#')[1]);
    assert.equal(embedded.get('family'), 'sparse_coding');
    assert.deepEqual(['chart_sc_objective', 'chart_sc_codes', 'headline', 'sc_log', 'more_heading'].map((k) => embedded.get(`${k}_hide`)), ['1', '1', '1', '1', '1']);
    assert.equal(embedded.get('supervised'), null, 'no DBN setting for sparse coding');
    await page.click('#embed-close');

    // Back to the DBN: its settings and views return, the link drops the family.
    await page.selectOption('#family', 'dbn');
    assert.equal(await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('family')), null);
    assert.ok(await shown(page, '#preset') && await shown(page, '#samples-canvas') && await shown(page, '#train-step-batch'));
    assert.equal(await shown(page, '#sc-basis-canvas'), false);
    assert.equal(await page.textContent('#train-step-epoch'), 'Step epoch');
    assert.ok((await page.evaluate(() => window.app.settings())).stack, 'the DBN page config again');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

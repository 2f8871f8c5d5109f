// Sharing, in both builds: Copy link puts the page's URL (settings and seed) on the clipboard,
// or shows it selected when the clipboard is refused; the embed builder writes an <iframe>
// whose URL keeps the settings and hides what was unchecked, its preview loads that URL, and a
// page holding only that code shows the chosen parts and can train; for the autoencoder family
// the builder lists the autoencoder's parts and keeps family=autoencoder in the link.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, closeAll, launch, openPage, serverFor, waitReady } from './lib.mjs';

after(closeAll);

const HASH = 'seed=7&epochs=3';
const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

// The src of the <iframe> in the builder's code, as a browser reads the HTML.
const codeSrc = (page) => page.evaluate(() => {
  const code = document.getElementById('embed-code').value;
  return new DOMParser().parseFromString(code, 'text/html').querySelector('iframe')?.getAttribute('src') ?? null;
});

// The sorted `NAME` of every `NAME_hide=1` in a URL.
const hideKeys = (url) => [...new URLSearchParams(url.split('#')[1] ?? '')].filter(([key, value]) => key.endsWith('_hide') && value === '1').map(([key]) => key.slice(0, -5)).sort();
// The builder's options the visitor sees, in order.
const shownOptions = (page) => page.$$eval('#embed-dialog input[data-option]', (boxes) => boxes.filter((box) => box.checkVisibility()).map((box) => box.dataset.option));

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('Copy link copies the URL with the settings and seed; a refused clipboard shows the link selected', async () => {
      const context = await (await launch()).newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
      const { page, problems } = await openPage(build, HASH, { context });
      // Chromium refusing the clipboard (as in an iframe without the permission).
      const refused = await openPage(build, HASH, {
        init: () => { navigator.clipboard.writeText = () => Promise.reject(new DOMException('Write permission denied.', 'NotAllowedError')); },
      });
      try {
        await waitReady(page);
        await page.click('#copy-link');
        await page.waitForFunction(() => document.getElementById('copy-link').dataset.copied, null, { timeout: 5_000 });
        const { href, copied, label } = await page.evaluate(() => ({
          href: location.href, copied: document.getElementById('copy-link').dataset.copied, label: document.getElementById('copy-link').textContent,
        }));
        const clipboard = await page.evaluate(() => navigator.clipboard.readText());
        assert.equal(clipboard, href);
        assert.equal(copied, href);
        assert.match(clipboard, /[#&]seed=7(&|$)/);
        assert.match(clipboard, /[#&]epochs=3(&|$)/);
        assert.equal(label, 'Link copied');
        assert.equal(await page.isHidden('#copy-link-fallback'), true);
        await page.waitForFunction(() => document.getElementById('copy-link').textContent === 'Copy link', null, { timeout: 5_000 });

        await waitReady(refused.page);
        await refused.page.click('#copy-link');
        await refused.page.waitForSelector('#copy-link-fallback', { state: 'visible', timeout: 5_000 });
        const fallback = await refused.page.evaluate(() => {
          const input = document.getElementById('copy-link-fallback');
          return {
            value: input.value, href: location.href, readOnly: input.readOnly, focused: document.activeElement === input,
            selected: input.value.slice(input.selectionStart, input.selectionEnd), note: input.labels[0]?.textContent ?? '',
            copied: document.getElementById('copy-link').dataset.copied ?? null,
          };
        });
        assert.equal(fallback.value, fallback.href);
        assert.match(fallback.value, /[#&]seed=7(&|$)/);
        assert.equal(fallback.readOnly, true);
        assert.equal(fallback.focused, true);
        assert.equal(fallback.selected, fallback.value, 'the whole link is selected');
        assert.match(fallback.note, /Ctrl\+C/);
        assert.equal(fallback.copied, null);
        assert.deepEqual(problems, []);
        assert.deepEqual(refused.problems, []);
      } finally {
        await context.close();
        await refused.page.close();
      }
    });

    test('the embed builder writes an iframe with the hide flags, its preview loads it, and the embedded page trains', async () => {
      const { page, problems } = await openPage(build, `${HASH}&simulate_gpu_loss=5&data_hide=0`);
      let embedding = null;
      try {
        await waitReady(page);
        await page.click('#embed-open');
        assert.equal(await page.evaluate(() => document.getElementById('embed-dialog').open), true);
        const defaults = await codeSrc(page);
        assert.match(defaults, /[#&]share_hide=1(&|$)/, 'the Share/Embed buttons are hidden in embeds by default');
        assert.doesNotMatch(defaults, /simulate_gpu_loss|data_hide|header_hide|supervised=/, defaults);
        assert.match(await page.inputValue('#embed-code'), /^<iframe src="[^"]+" width="960" height="720" title="DeepBelief Playground" loading="lazy"><\/iframe>$/);

        // The fold's heading goes when everything below the fold does.
        const belowFold = ['charts', 'reconstructions', 'histograms', 'dream', 'results', 'storage', 'epoch_log'];
        for (const part of belowFold) await page.uncheck(`#embed-show-${part}`);
        assert.match(await codeSrc(page), /[#&]more_heading_hide=1(&|$)/);
        await page.check('#embed-show-epoch_log');
        assert.doesNotMatch(await codeSrc(page), /more_heading_hide/);
        for (const part of belowFold) await page.check(`#embed-show-${part}`);

        // Sub-options follow their parent: hidden training hides them all, and they are disabled.
        await page.uncheck('#embed-show-steps');
        assert.match(await codeSrc(page), /[#&]step_batch_hide=1&step_epoch_hide=1(&|$)/);
        await page.uncheck('#embed-show-training');
        assert.equal(await page.isDisabled('#embed-show-steps'), true);
        const noTraining = await codeSrc(page);
        assert.match(noTraining, /[#&]training_hide=1(&|$)/);
        assert.doesNotMatch(noTraining, /step_batch_hide/);
        await page.check('#embed-show-training');
        await page.check('#embed-show-steps');
        assert.equal(await page.isDisabled('#embed-show-steps'), false);

        await page.uncheck('#embed-show-data');
        await page.uncheck('#embed-show-model');
        // The preview waits for a pause in the changes: right after one, it still shows the last URL.
        const justChanged = await page.evaluate(() => {
          document.getElementById('embed-show-results').click();
          return document.getElementById('embed-preview').getAttribute('src');
        });
        const src = await codeSrc(page);
        assert.notEqual(justChanged, src);
        for (const part of ['data_hide=1', 'model_hide=1', 'results_hide=1', 'supervised=0', 'seed=7', 'epochs=3', 'share_hide=1']) {
          assert.match(src, new RegExp(`[#&]${part}(&|$)`), `${part} in ${src}`);
        }
        assert.doesNotMatch(src, /simulate_gpu_loss|more_heading_hide|training_hide|step_batch_hide/, src);
        assert.equal(src.split('#')[0], await page.evaluate(() => location.href.split('#')[0]));

        await page.waitForFunction((expected) => document.getElementById('embed-preview').getAttribute('src') === expected, src, { timeout: 5_000 });
        await page.waitForFunction((expected) => document.getElementById('embed-preview').contentWindow.location.href === expected, src, { timeout: 30_000 });
        const preview = await page.evaluate(() => {
          const frame = document.getElementById('embed-preview');
          const box = frame.getBoundingClientRect();
          return { width: frame.width, height: frame.height, shownWidth: box.width, shownHeight: box.height };
        });
        assert.deepEqual([preview.width, preview.height], ['960', '720']);
        assert.ok(preview.shownWidth <= 481 && preview.shownHeight <= 361 && preview.shownWidth > 400, `preview scaled to ${preview.shownWidth}×${preview.shownHeight}`);

        const code = await page.inputValue('#embed-code');
        await page.keyboard.press('Escape');
        assert.equal(await page.evaluate(() => document.getElementById('embed-dialog').open), false);

        // A page of its own holding only the code, on the playground's origin.
        const origin = new URL((await serverFor(build)).url).origin;
        embedding = await (await launch()).newPage();
        const embedProblems = [];
        embedding.on('pageerror', (error) => embedProblems.push(`page error: ${error.message}`));
        embedding.on('console', (message) => { if (message.type() === 'error') embedProblems.push(`console error: ${message.text()}`); });
        await embedding.route(`${origin}/lesson.html`, (route) => route.fulfill({
          status: 200, contentType: 'text/html; charset=utf-8', headers: build.isolate ? ISOLATION_HEADERS : {},
          body: `<!doctype html><html><head><title>Lesson</title></head><body>${code}</body></html>`,
        }));
        await embedding.goto(`${origin}/lesson.html`);
        const frame = await (await embedding.waitForSelector('iframe')).contentFrame();
        await frame.waitForFunction(() => document.getElementById('train-start') && !document.getElementById('train-start').disabled, null, { timeout: 90_000 });
        assert.equal(frame.url(), src);
        assert.equal(await frame.isHidden('#data-panel'), true);
        assert.equal(await frame.isHidden('#model-panel'), true);
        assert.equal(await frame.isHidden('#share'), true);
        assert.equal(await frame.isVisible('#train-start'), true);
        await frame.waitForSelector('#samples-canvas', { state: 'visible', timeout: 30_000 });
        assert.equal(await frame.evaluate(() => window.app.settings().supervised), null, 'supervised=0: no supervised stage');
        assert.equal(await frame.evaluate(() => crossOriginIsolated), build.isolate);
        assert.deepEqual(embedProblems, []);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
        await embedding?.close();
      }
    });

    test('for the local-patch RBM and the recurrent net the builder lists their parts and writes their hide keys with the family', async () => {
      const cases = {
        local_rbm: {
          listed: ['header', 'training', 'lr_step', 'cancel_reset', 'data', 'network', 'model', 'family', 'lr_filters', 'chart_lr_error', 'about', 'share'],
          charts: ['chart_lr_error'],
        },
        sequences: {
          listed: ['header', 'training', 'sq_step', 'cancel_reset', 'data', 'network', 'model', 'family', 'sq_hidden_state', 'sq_sensitivity', 'chart_sq_error', 'chart_sq_timing', 'about', 'share'],
          charts: ['chart_sq_error', 'chart_sq_timing'],
        },
      };
      for (const [family, expected] of Object.entries(cases)) {
        const { page, problems } = await openPage(build, `family=${family}&seed=5`);
        try {
          await waitReady(page);
          await page.click('#embed-open');
          assert.deepEqual(await shownOptions(page), expected.listed, family);
          const defaults = await codeSrc(page);
          assert.match(defaults, new RegExp(`[#&]family=${family}(&|$)`));
          // Nothing lies below the fold in these modes, so its heading always goes.
          assert.deepEqual(hideKeys(defaults), ['more_heading', 'share']);
          for (const chart of expected.charts) await page.uncheck(`#embed-show-${chart}`);
          await page.uncheck(`#embed-show-${expected.listed[2]}`);
          assert.deepEqual(hideKeys(await codeSrc(page)), [...expected.charts, 'headline', 'more_heading', 'share', 'step_epoch'].sort(), family);
          await page.keyboard.press('Escape');
          assert.deepEqual(problems, []);
        } finally {
          await page.close();
        }
      }
    });

    test('for the autoencoder the builder lists its parts, writes their hide keys with family=autoencoder, and the embed trains it', async () => {
      const { page, problems } = await openPage(build, 'family=autoencoder&hidden=25&iterations=3&cases=300&seed=7&ae_backend=cpu');
      let embedding = null;
      try {
        await waitReady(page);
        await page.click('#embed-open');
        const listed = await shownOptions(page);
        assert.deepEqual(listed, ['header', 'training', 'ae_step', 'cancel_reset', 'data', 'network', 'model', 'family', 'ae_filters', 'ae_reconstructions', 'chart_ae_cost', 'chart_ae_sparsity', 'ae_log', 'about', 'share']);
        const defaults = await codeSrc(page);
        assert.match(defaults, /[#&]family=autoencoder(&|$)/);
        assert.match(defaults, /[#&]hidden=25(&|$)/);
        assert.deepEqual(hideKeys(defaults), ['share']);

        // Both charts unchecked: their panel goes too, so the column can close up.
        await page.uncheck('#embed-show-chart_ae_cost');
        await page.uncheck('#embed-show-chart_ae_sparsity');
        assert.deepEqual(hideKeys(await codeSrc(page)), ['chart_ae_cost', 'chart_ae_sparsity', 'headline', 'share']);
        await page.check('#embed-show-chart_ae_cost');
        await page.check('#embed-show-chart_ae_sparsity');
        // The family choice is part of the settings: hidden with them, or on its own.
        await page.uncheck('#embed-show-family');
        assert.deepEqual(hideKeys(await codeSrc(page)), ['family', 'share']);
        await page.uncheck('#embed-show-model');
        assert.equal(await page.isDisabled('#embed-show-family'), true);
        assert.deepEqual(hideKeys(await codeSrc(page)), ['model', 'share']);

        // A constrained demo: Start and Pause, the filters, the ρ̂ plot and the cost curve.
        for (const part of ['header', 'ae_step', 'cancel_reset', 'data', 'network', 'ae_reconstructions', 'ae_log', 'about']) await page.uncheck(`#embed-show-${part}`);
        const src = await codeSrc(page);
        assert.deepEqual(hideKeys(src), ['about', 'ae_log', 'ae_reconstructions', 'cancel', 'data', 'header', 'model', 'more_heading', 'network', 'reset', 'share', 'step_epoch']);
        assert.match(src, /[#&]family=autoencoder(&|$)/);
        assert.doesNotMatch(src, /supervised=/, src);
        const code = await page.inputValue('#embed-code');
        await page.keyboard.press('Escape');

        const origin = new URL((await serverFor(build)).url).origin;
        embedding = await (await launch()).newPage();
        const embedProblems = [];
        embedding.on('pageerror', (error) => embedProblems.push(`page error: ${error.message}`));
        embedding.on('console', (message) => { if (message.type() === 'error') embedProblems.push(`console error: ${message.text()}`); });
        await embedding.route(`${origin}/lesson.html`, (route) => route.fulfill({
          status: 200, contentType: 'text/html; charset=utf-8', headers: build.isolate ? ISOLATION_HEADERS : {},
          body: `<!doctype html><html><head><title>Lesson</title></head><body>${code}</body></html>`,
        }));
        await embedding.goto(`${origin}/lesson.html`);
        const frame = await (await embedding.waitForSelector('iframe')).contentFrame();
        await frame.waitForFunction(() => document.getElementById('train-start') && !document.getElementById('train-start').disabled, null, { timeout: 90_000 });
        const visible = (selectors) => frame.evaluate((list) => list.filter((sel) => document.querySelector(sel)?.checkVisibility()), selectors);
        assert.deepEqual(await visible(['#train-start', '#train-pause', '#ae_filters-panel', '#chart-ae-cost', '#chart-ae-sparsity']),
          ['#train-start', '#train-pause', '#ae_filters-panel', '#chart-ae-cost', '#chart-ae-sparsity']);
        assert.deepEqual(await visible(['.topbar', '#train-step-epoch', '#train-step-batch', '#train-cancel', '#train-reset', '#data-panel', '#network-panel', '#model-panel',
          '#ae_reconstructions-panel', '#ae_log-panel', '#samples-panel', '#filters-panel', '#chart-recon', '#more-heading', '#about', '#share']), []);
        await frame.click('#train-start');
        await frame.waitForFunction(() => document.getElementById('chart-ae-cost').dataset.iteration === '3' && !window.app.running, null, { timeout: 120_000 });
        assert.equal(await frame.evaluate(() => document.getElementById('chart-ae-sparsity').dataset.units), '25');
        assert.deepEqual(embedProblems, []);

        // Back on the DBN, the builder lists the DBN's parts again.
        await page.selectOption('#family', 'dbn');
        await page.click('#embed-open');
        const dbn = await shownOptions(page);
        assert.ok(dbn.includes('samples') && dbn.includes('steps') && !dbn.some((id) => /^(ae_|chart_ae)/.test(id)), dbn.join());
        const dbnSrc = await codeSrc(page);
        assert.doesNotMatch(dbnSrc, /family=|[#&](ae_|chart_ae_)[a-z_]*_hide=/, dbnSrc);
        assert.match(dbnSrc, /[#&]model_hide=1(&|$)/, 'the shared choices are kept');
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
        await embedding?.close();
      }
    });
  });
}

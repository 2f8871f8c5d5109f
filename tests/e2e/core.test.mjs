// Core page tests, in both builds: the engine and its threads, pause/resume, the URL hash
// round trip, embed flags, a malformed upload that must not cost the model, the CPU path when
// WebGPU is off; and (threaded build) WebGPU parity with the CPU and the device-loss fallback.
import { test, after, describe } from 'node:test';
import { serverFor, launch } from './lib.mjs';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { builds, SMALL, openPage, waitReady, startTraining, waitFinished, epochCount, closeAll, chromiumArgs, runSummary, screenshot, mnistSubset, uploadIdx } from './lib.mjs';

after(closeAll);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Every control of the model panel and the held-out fraction, by id.
const readControls = (page) => page.evaluate(() => Object.fromEntries(
  [...document.querySelectorAll('#model-form input, #model-form select, #held-out')].map((c) => [c.id, c.type === 'checkbox' ? c.checked : c.value])));

async function setControl(page, id, value) {
  await page.evaluate(({ id, value }) => {
    const control = document.getElementById(id);
    control.closest('details')?.setAttribute('open', '');
    if (control.type === 'checkbox') control.checked = value;
    else control.value = value;
    control.dispatchEvent(new Event('input', { bubbles: true }));
    control.dispatchEvent(new Event('change', { bubbles: true }));
  }, { id, value });
}

for (const build of builds) {
  describe(`${build.name} build`, () => {
    test('engine threads, then pause and resume: epochs stop while paused and the run completes', async () => {
      // 3 epochs of 64 then 32 hidden units, CPU: slow enough to pause in the middle.
      const { page, problems } = await openPage(build, 'layers=64,32&epochs=3&supervised=0&backend=cpu&monitor_cases=300');
      try {
        await waitReady(page);
        const status = await page.evaluate(() => ({ ...document.getElementById('status').dataset, text: document.getElementById('status').textContent, isolated: crossOriginIsolated }));
        assert.equal(status.isolated, build.isolate);
        assert.equal(status.threadedBuild, String(build.isolate), status.text);
        if (build.isolate) assert.ok(Number(status.threads) > 1, `distinct rayon threads that ran: ${status.threads} (${status.text})`);
        else {
          assert.equal(status.threads, '1');
          assert.match(status.text, /single-threaded/);
        }
        assert.equal(status.webgpu, 'true', `WebGPU should be available in headless Chromium: ${status.text}`);

        await startTraining(page);
        await page.waitForFunction(() => Number(document.getElementById('train-progress').dataset.epochs || 0) >= 1, null, { timeout: 120_000 });
        await page.click('#train-pause');
        await page.waitForFunction(() => window.app.paused, null, { timeout: 30_000 });
        assert.equal(await page.textContent('#train-pause'), 'Resume');
        await sleep(300); // the unit in flight when Pause arrived may still report
        const pausedAt = await epochCount(page);
        await sleep(2000);
        assert.equal(await epochCount(page), pausedAt, 'epochs advanced while paused');
        const charted = await page.evaluate(() => Number(document.getElementById('chart-recon').dataset.points));
        assert.equal(charted, pausedAt, 'the reconstruction-error chart has a point per epoch');

        await page.click('#train-pause'); // Resume
        const run = await waitFinished(page);
        assert.equal(run.finished, 'done', run.log.join('\n'));
        assert.equal(run.epochs, 6, `2 layers × 3 epochs, got ${run.epochs}: ${run.log.join(' | ')}`);
        assert.ok(run.errors.every(Number.isFinite));
        const steps = await page.$$eval('#train-steps li', (items) => items.map((li) => li.dataset.state));
        assert.deepEqual(steps, ['done', 'done']);
        await screenshot(page, `core-${build.name}-after-training`);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('the URL hash round-trips the configuration', async () => {
      const first = await openPage(build, '');
      const changes = {
        'p-layers': '50, 20', 'p-learning_rate': '0.05', 'p-batch_size': '50', 'p-mean_field_visible': false,
        'p-supervised': true, 'p-sup_hidden': '20', 'p-sup_optimizer': 'sgd', 'p-sup_fine_tune': true,
        'p-backend': 'cpu1', 'p-seed': '7', 'p-init_trials': '3', 'p-schedule': 'adaptive', 'held-out': '0.2',
      };
      let hash;
      let expected;
      try {
        await waitReady(first.page);
        await setControl(first.page, 'preset', 'hinton');
        for (const [id, value] of Object.entries(changes)) await setControl(first.page, id, value);
        await first.page.waitForFunction(() => /held_out=0.2/.test(location.hash), null, { timeout: 30_000 });
        hash = await first.page.evaluate(() => location.hash.slice(1));
        expected = await readControls(first.page);
        const defaults = await openPage(build, '');
        const plain = await readControls(defaults.page);
        await defaults.page.close();
        // The supervised stage is on in the page's default (quick) preset and off in Hinton's,
        // so turning it on after choosing Hinton is a change the hash must carry too.
        for (const id of Object.keys(changes)) if (id !== 'p-supervised') assert.notEqual(String(plain[id]), String(expected[id]), `${id} should differ from its default`);
        assert.match(hash, /(^|&)supervised=1(&|$)/);
        assert.match(hash, /preset=hinton/);
        assert.deepEqual(first.problems, []);
      } finally {
        await first.page.close();
      }
      const second = await openPage(build, hash);
      try {
        await waitReady(second.page);
        assert.deepEqual(await readControls(second.page), expected);
        assert.equal(await second.page.evaluate(() => location.hash.slice(1)), hash, 'loading the link does not rewrite it');
        const config = await second.page.evaluate(() => window.app.settings());
        assert.deepEqual(config.stack.layers, [50, 20]);
        assert.equal(config.stack.rbm.learning_rate, 0.05);
        assert.equal(config.stack.rbm.schedule, 'adaptive');
        assert.equal(config.supervised.optimizer, 'sgd');
        assert.deepEqual(config.supervised.hidden, [20]);
        assert.equal(config.stack.rbm.seed, 7);
        assert.deepEqual(second.problems, []);
      } finally {
        await second.page.close();
      }
    });

    test('embed mode hides exactly what its flags say', async () => {
      const flags = ['data', 'charts', 'learning_rate', 'step_batch', 'presets'];
      const visibleKeys = (page) => page.evaluate(() => [...document.querySelectorAll('[data-hide-key]')]
        .filter((el) => el.checkVisibility({ checkVisibilityCSS: true }) || getComputedStyle(el).display !== 'none' && el.getClientRects().length > 0)
        .map((el) => el.dataset.hideKey).sort());
      const flaggedOrInside = (page, keys) => page.evaluate((keys) => [...document.querySelectorAll('[data-hide-key]')]
        .filter((el) => keys.some((key) => el.closest(`[data-hide-key="${key}"]`)))
        .map((el) => el.dataset.hideKey).sort(), keys);
      const plain = await openPage(build, '');
      const embedded = await openPage(build, flags.map((f) => `${f}_hide=1`).join('&'));
      try {
        await waitReady(plain.page);
        await waitReady(embedded.page);
        const before = await visibleKeys(plain.page);
        for (const flag of flags) assert.ok(before.includes(flag), `${flag} is visible without flags`);
        const removed = await flaggedOrInside(plain.page, flags);
        const expected = before.filter((key) => !removed.includes(key));
        assert.deepEqual(await visibleKeys(embedded.page), expected);
        for (const flag of flags) assert.equal(await embedded.page.locator(`[data-hide-key="${flag}"]`).first().isVisible(), false, flag);
        assert.ok(await embedded.page.locator('#train-start').isVisible(), 'Start stays');
        assert.deepEqual(embedded.problems, []);
      } finally {
        await plain.page.close();
        await embedded.page.close();
      }
    });

    test('cancel ends a long supervised stage at once, and the page trains again', async () => {
      // A supervised stage of up to 100,000 conjugate-gradient iterations: only Cancel ends it.
      const { page, problems } = await openPage(build, 'layers=32&epochs=1&sup_max_iterations=100000&sup_tolerance=0&sup_hidden=300&backend=cpu');
      try {
        await startTraining(page);
        await page.waitForFunction(() => document.querySelector('#train-steps li[data-kind=supervised][data-state=current]'), null, { timeout: 60_000 });
        await sleep(1000);
        const data = await page.textContent('#data-summary');
        const started = Date.now();
        await page.click('#train-cancel');
        await page.waitForFunction(() => document.getElementById('train-status').dataset.finished && !window.app.running, null, { timeout: 30_000 });
        const seconds = (Date.now() - started) / 1000;
        assert.ok(seconds < 10, `cancel took ${seconds} s`);
        assert.match(await page.textContent('#train-status'), /Cancelled/);
        if (!build.isolate) assert.match(await page.textContent('#train-notice'), /engine was restarted/);
        await page.waitForFunction(() => !document.getElementById('train-start').disabled, null, { timeout: 30_000 });
        assert.equal(await page.textContent('#data-summary'), data, 'the data is kept');
        // The RBM stack trained before the stage survives the cancel (a restarted engine gets it back).
        await page.waitForFunction(() => window.app.model?.layers?.length === 1 && window.app.model.layers[0][1] === 32, null, { timeout: 30_000 });
        await setControl(page, 'p-supervised', false);
        await page.click('#train-start');
        await page.waitForFunction(() => window.app.running || document.getElementById('train-status').dataset.finished, null, { timeout: 30_000 });
        const run = await waitFinished(page);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice} ${await page.textContent('#train-status')}`);
        assert.equal(run.epochs, 1);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a setting the engine refuses is explained next to its control, and nothing starts', async () => {
      // 20,000 batches per epoch pass the form's range but not the 9,000 training cases (a
      // batch size beyond the data is taken as the whole data, so it no longer serves here).
      const { page, problems } = await openPage(build, 'batch_size=&n_batches=20000&supervised=0');
      try {
        await waitReady(page);
        await page.click('#train-start');
        await page.waitForSelector('#p-n_batches-error:not([hidden])', { timeout: 30_000 });
        assert.match(await page.textContent('#p-n_batches-error'), /n_batches: .*9000/);
        assert.equal(await page.evaluate(() => window.app.running), false);
        assert.equal(await page.$$eval('#epoch-log li', (items) => items.length), 0);
        // Outside the form's own range: refused before the engine is asked.
        await setControl(page, 'p-learning_rate', '-1');
        assert.match(await page.textContent('#p-learning_rate-error'), /Learning rate: expected a value from/);
        assert.doesNotMatch(await page.evaluate(() => location.hash), /learning_rate/);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a malformed IDX upload shows an error next to the upload and the trained model survives', async () => {
      const { page, problems } = await openPage(build, `${SMALL}&backend=cpu`);
      try {
        await startTraining(page);
        await waitFinished(page);
        const before = await page.evaluate(async () => ({
          model: await window.app.rpc('saveModel'), data: document.getElementById('data-summary').textContent,
          log: document.getElementById('epoch-log').textContent, status: document.getElementById('train-status').textContent,
        }));
        assert.ok(before.model.length > 1000, 'a model was trained');
        await page.check('#data-source-idx');
        // An IDX header promising 60000 images of 28×28, then 100 bytes: truncated.
        const garbled = Buffer.concat([Buffer.from([0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28]), Buffer.alloc(100, 7)]);
        await page.setInputFiles('#idx-images', { name: 'broken-images-idx3-ubyte', mimeType: 'application/octet-stream', buffer: garbled });
        await page.waitForSelector('#idx-error:not([hidden])', { timeout: 30_000 });
        const error = await page.textContent('#idx-error');
        assert.match(error, /broken-images-idx3-ubyte/);
        assert.ok(await page.evaluate(() => document.getElementById('idx-error').closest('#idx-form') !== null), 'the error sits by the upload control');
        assert.equal(await page.isHidden('#data-error'), true, 'no panel-level error');
        const afterUpload = await page.evaluate(async () => ({
          model: await window.app.rpc('saveModel'), data: document.getElementById('data-summary').textContent,
          log: document.getElementById('epoch-log').textContent, status: document.getElementById('train-status').textContent,
        }));
        assert.deepEqual(afterUpload, before);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });
  });
}

test('with WebGPU off, the CPU path is used and the status says so (both builds)', async () => {
  // A browser without --enable-unsafe-webgpu and with the WebGPU feature disabled.
  const noGpu = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: [...chromiumArgs.filter((a) => a !== '--enable-unsafe-webgpu'), '--disable-features=WebGPU'] });
  try {
    for (const build of builds) {
      const { page, problems } = await openPage(build, 'layers=16&epochs=1&supervised=0&backend=webgpu', { context: noGpu });
      try {
        await waitReady(page);
        assert.equal(await page.evaluate(() => document.getElementById('status').dataset.webgpu), 'false');
        assert.match(await page.textContent('#backend-status'), /WebGPU is not available/);
        await startTraining(page);
        const run = await waitFinished(page);
        assert.equal(run.backend, 'cpu', run.status);
        // The header says where it trained; the settings say why.
        assert.match(run.status, /Trained on the CPU \(/);
        assert.match(await page.textContent('#backend-status'), /Training on the CPU \(.*WebGPU is not available/);
        assert.equal(run.epochs, 1);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    }
  } finally {
    await noGpu.close();
  }
});

test('threaded build: WebGPU training matches the CPU, and survives losing the device', async () => {
  // SwiftShader trains about 100 cases/s, so these runs use the first 1,500 digits.
  const settings = 'layers=16&epochs=2&seed=3&supervised=0&monitor_cases=200';
  const subset = mnistSubset(1500);
  const variants = { webgpu: 'backend=webgpu', cpu: 'backend=cpu', lost: 'backend=webgpu&simulate_gpu_loss=1' };
  const runs = {};
  for (const [name, choice] of Object.entries(variants)) {
    const { page, problems } = await openPage(builds[0], `${settings}&${choice}`);
    try {
      const started = Date.now();
      await waitReady(page);
      await uploadIdx(page, subset);
      const ready = Date.now();
      await startTraining(page);
      runs[name] = await waitFinished(page);
      runs[name].busy = await page.evaluate(() => document.getElementById('train-status').dataset.busySeen ?? '');
      console.log(`# ${name}: ready in ${((ready - started) / 1000).toFixed(1)} s, trained in ${((Date.now() - ready) / 1000).toFixed(1)} s`);
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  }
  const { webgpu, cpu, lost } = runs;
  console.log(`# errors: webgpu ${JSON.stringify(webgpu.errors)} cpu ${JSON.stringify(cpu.errors)} lost ${JSON.stringify(lost.errors)}`);
  assert.equal(webgpu.backend, 'webgpu', `${webgpu.status} ${webgpu.notice}`);
  assert.match(webgpu.status, /Trained on WebGPU \(/);
  // The first GPU epoch waits for the pipelines: the progress line said so.
  assert.match(webgpu.busy, /Compiling the WebGPU kernels/);
  assert.equal(cpu.busy, '');
  assert.equal(cpu.backend, 'cpu', cpu.status);
  assert.match(cpu.status, /Trained on the CPU \(/);
  assert.equal(webgpu.errors.length, 2);
  assert.equal(cpu.errors.length, 2);
  assert.match(lost.notice, /WebGPU failed .*continuing on the CPU/);
  assert.equal(lost.backend, 'cpu', lost.status);
  assert.equal(lost.errors.length, cpu.errors.length, 'every epoch was reported, none lost');
  // The CPU resumes the GPU's exact state, so the run stays on the all-CPU run's course.
  for (const run of [webgpu, lost]) {
    run.errors.forEach((error, k) => {
      const relative = Math.abs(error - cpu.errors[k]) / Math.abs(cpu.errors[k]);
      assert.ok(Number.isFinite(error) && relative <= 1e-3, `epoch ${k + 1}: ${error} vs CPU ${cpu.errors[k]} (relative ${relative})`);
    });
  }
});

test('every default and every preset of params.js equals the engine\'s (Rust) default and preset (build-independent: threaded only)', async () => {
  const { page, problems } = await openPage(builds[0], '');
  try {
    await waitReady(page);
    const mismatches = await page.evaluate(async () => {
      const { PARAMS } = await import('./params.js');
      // Only what a quick run needs is set; every other field takes the engine's default.
      const overrides = { stack: { layers: [8], rbm: { epochs: 1, init_trials: 1, batch_size: 500 } }, supervised: { max_iterations: 2 } };
      const finished = new Promise((resolve) => window.app.on('finished', resolve));
      await window.app.rpc('train', { config: overrides, backend: 'cpu' });
      await finished;
      const saved = JSON.parse(await window.app.rpc('saveModel'));
      const engine = { stack: saved.config, supervised: saved.supervised.config };
      const overridden = new Set(['stack.rbm.epochs', 'stack.rbm.init_trials', 'stack.rbm.batch_size', 'supervised.max_iterations']);
      const wrong = [];
      for (const p of PARAMS) {
        const path = p.path.join('.');
        if (overridden.has(path)) continue;
        const value = p.path.reduce((node, part) => node?.[part], engine);
        const same = typeof p.default === 'number' ? Math.abs(value - p.default) <= 1e-6 * Math.abs(p.default) : value === p.default;
        if (!same) wrong.push(`${path}: params.js ${JSON.stringify(p.default)}, engine ${JSON.stringify(value)}`);
      }
      // Every preset of params.js, field by field, against the engine's (Rust) preset
      // (`preset_config`). Quick is the page's demo: Hinton's recipe with its own few values.
      const { PRESETS, presetValues } = await import('./params.js');
      const wasm = await import('./pkg/deepbelief.js');
      await wasm.default();
      const demo = { quick: { rust: 'hinton', own: ['epochs', 'monitor_cases', 'sup_max_iterations'] } };
      const presetsWrong = [];
      let presetsChecked = 0;
      for (const name of Object.keys(PRESETS)) {
        const rust = wasm.preset_config(demo[name]?.rust ?? name);
        const values = presetValues(name);
        for (const p of PARAMS) {
          if (demo[name]?.own.includes(p.key)) continue;
          const expected = p.path.reduce((node, part) => node?.[part], rust);
          const value = values[p.key];
          const same = typeof expected === 'number' && typeof value === 'number' ? Math.abs(value - expected) <= 1e-6 * Math.abs(expected) : value === expected;
          if (!same) presetsWrong.push(`preset ${name}: ${p.path.join('.')} (${p.key}): params.js ${JSON.stringify(value)}, Rust ${JSON.stringify(expected)}`);
          presetsChecked += 1;
        }
      }
      return { wrong, checked: PARAMS.length - overridden.size, presetsWrong, presetsChecked, presets: Object.keys(PRESETS) };
    });
    assert.deepEqual(mismatches.wrong, []);
    assert.ok(mismatches.checked > 35, `checked ${mismatches.checked}`);
    assert.deepEqual(mismatches.presetsWrong, []);
    assert.deepEqual(mismatches.presets, ['quick', 'default', 'deep', 'hinton']);
    assert.ok(mismatches.presetsChecked > 4 * 35, `preset fields checked: ${mismatches.presetsChecked}`);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('embedded in an iframe without isolation, a constrained demo trains (single-threaded build)', async () => {
  const server = await serverFor(builds[1]);
  const page = await (await launch()).newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(error.message));
  try {
    // A teaching page of its own (about:blank here) embedding the playground.
    await page.setContent(`<h1>Lesson</h1><iframe id="demo" width="900" height="700" src="${server.url}#data_hide=1&model_hide=1&charts_hide=1&layers=16&epochs=1&supervised=0&backend=cpu"></iframe>`);
    const frame = await (await page.waitForSelector('#demo')).contentFrame();
    await frame.waitForFunction(() => !document.getElementById('train-start').disabled, null, { timeout: 60_000 });
    assert.equal(await frame.evaluate(() => crossOriginIsolated), false);
    assert.equal(await frame.isHidden('#data-panel'), true);
    assert.equal(await frame.isHidden('#model-panel'), true);
    await frame.click('#train-start');
    await frame.waitForFunction(() => document.getElementById('train-status').dataset.finished === 'done', null, { timeout: 60_000 });
    assert.match(await frame.textContent('#status'), /Trained on the CPU \(single-threaded/);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('every control of the panels has a label and is reachable by keyboard (both builds share the markup)', async () => {
  const { page, problems } = await openPage(builds[1], '');
  try {
    await waitReady(page);
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('#data-panel, #model-panel, #training-panel')]
      .flatMap((panel) => [...panel.querySelectorAll('input, select, button, [tabindex]')])
      .filter((control) => !(control.labels?.length || control.getAttribute('aria-label') || control.getAttribute('aria-labelledby') || (control.tagName === 'BUTTON' && control.textContent.trim())))
      .map((control) => control.id || control.outerHTML.slice(0, 80)));
    assert.deepEqual(unlabelled, []);
    // Tab from the page start reaches Start, and Enter on it starts a run.
    await page.evaluate(() => document.getElementById('p-supervised').click());
    let focused = '';
    for (let k = 0; k < 40 && focused !== 'train-start'; k += 1) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.id);
    }
    assert.equal(focused, 'train-start');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.finished, null, { timeout: 120_000 });
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

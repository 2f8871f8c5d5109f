// End-to-end tests of the served page in headless Chromium (playwright-core), once for each
// build: the threaded one behind COOP/COEP headers, and the single-threaded fallback behind a
// plain static server, as an embedding page without isolation would get.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

const root = new URL('../../www/', import.meta.url).pathname;
const chromiumArgs = [
  '--headless=new', '--no-sandbox', '--enable-unsafe-webgpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];
let browser;

before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: chromiumArgs });
});
after(async () => browser?.close());

async function openPage(isolate, hash = 'hidden=64&epochs=3&seed=2&backend=cpu', server = null) {
  server ??= await startServer({ root, port: 0, isolate });
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  // A short run keeps the suite quick; the hash is how users share settings too.
  // The two build tests pin the CPU (SwiftShader's WebGPU would be slow on 64 hidden units);
  // the WebGPU test below trains a small model both ways.
  await page.goto(`${server.url.replace(/\/$/, "")}/#${hash}`);
  return { server, page, problems };
}

async function filterStats(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById('filters');
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const greys = new Set();
    for (let k = 0; k < pixels.length; k += 4) greys.add(pixels[k]);
    return { width: canvas.width, height: canvas.height, distinctGreys: greys.size };
  });
}

// Trains with the page's settings until it reports done; returns the errors and what ran.
async function trainToEnd(page) {
  await page.waitForFunction(() => !document.getElementById('train').disabled, null, { timeout: 60_000 });
  await page.click('#train');
  await page.waitForFunction(() => /^Done|^Stopped/.test(document.getElementById('progress-text').textContent) && !document.getElementById('train').disabled, null, { timeout: 180_000 });
  return page.evaluate(() => ({
    errors: [...document.querySelectorAll('#epoch-log li')].map((li) => Number(li.dataset.error)),
    log: [...document.querySelectorAll('#epoch-log li')].map((li) => li.textContent),
    backend: document.getElementById('status').dataset.trainingBackend,
    status: document.getElementById('status').textContent,
    notice: document.getElementById('train-notice').hidden ? '' : document.getElementById('train-notice').textContent,
  }));
}

async function trainAndCheck(page) {
  await page.waitForFunction(() => !document.getElementById('train').disabled, null, { timeout: 60_000 });
  await page.click('#train');
  await page.waitForFunction(() => document.querySelectorAll('#epoch-log li').length >= 2, null, { timeout: 180_000 });
  const epochs = await page.$$eval('#epoch-log li', (items) => items.map((li) => li.textContent));
  assert.ok(epochs.length >= 2, `epochs reported: ${epochs.length}`);
  const filters = await page.evaluate(() => {
    const canvas = document.getElementById('filters');
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const greys = new Set();
    for (let k = 0; k < pixels.length; k += 4) greys.add(pixels[k]);
    return { width: canvas.width, height: canvas.height, distinctGreys: greys.size };
  });
  // 64 filters of 28×28 in a 10-wide grid; a blank canvas has one or two grey levels.
  assert.ok(filters.width > 200 && filters.height > 150, JSON.stringify(filters));
  assert.ok(filters.distinctGreys > 50, `filter canvas looks blank: ${JSON.stringify(filters)}`);
  const settingsInHash = await page.evaluate(() => location.hash);
  assert.match(settingsInHash, /hidden=64/);
}

test('threaded build: cross-origin isolated page trains with several rayon threads', async () => {
  const { server, page, problems } = await openPage(true);
  try {
    await page.waitForFunction(() => document.getElementById('status').dataset.threads, null, { timeout: 60_000 });
    const status = await page.evaluate(() => ({ ...document.getElementById('status').dataset, text: document.getElementById('status').textContent, isolated: crossOriginIsolated }));
    assert.equal(status.isolated, true);
    assert.equal(status.threadedBuild, 'true', status.text);
    assert.ok(Number(status.threads) > 1, `distinct rayon threads that ran: ${status.threads} (${status.text})`);
    assert.equal(status.webgpu, 'true', `WebGPU should be available in headless Chromium: ${status.text}`);
    await trainAndCheck(page);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
    await server.close();
  }
});

test('single-threaded build: a plain static server falls back without errors', async () => {
  const { server, page, problems } = await openPage(false);
  try {
    await page.waitForFunction(() => document.getElementById('status').dataset.threads, null, { timeout: 60_000 });
    const status = await page.evaluate(() => ({ ...document.getElementById('status').dataset, text: document.getElementById('status').textContent, isolated: crossOriginIsolated }));
    assert.equal(status.isolated, false);
    assert.equal(status.threadedBuild, 'false', status.text);
    assert.equal(status.threads, '1');
    assert.match(status.text, /single-threaded/);
    assert.equal(status.webgpu, 'true', `WebGPU works without isolation too: ${status.text}`);
    await trainAndCheck(page);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
    await server.close();
  }
});

test('webgpu training in the page matches the CPU, and survives losing the device', async () => {
  const settings = 'hidden=16&epochs=2&batch=100&seed=3';
  const runs = {};
  let server = null;
  // `lost`: WebGPU whose device is destroyed after its first epoch (the page's test hook).
  const variants = { webgpu: 'backend=webgpu', cpu: 'backend=cpu', lost: 'backend=webgpu&simulate_gpu_loss=1' };
  try {
    for (const [backend, choice] of Object.entries(variants)) {
      const opened = await openPage(true, `${settings}&${choice}`, server);
      server = opened.server;
      const { page, problems } = opened;
      try {
        const started = Date.now();
        const run = await trainToEnd(page);
        run.seconds = (Date.now() - started) / 1000;
        run.filters = await filterStats(page);
        run.hash = await page.evaluate(() => location.hash);
        runs[backend] = run;
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    }
  } finally {
    await server?.close();
  }
  const { webgpu, cpu } = runs;
  console.log(`# webgpu run ${webgpu.seconds.toFixed(1)} s, cpu run ${cpu.seconds.toFixed(1)} s; errors ${JSON.stringify(webgpu.errors)} vs ${JSON.stringify(cpu.errors)}`);
  console.log(`# webgpu epochs: ${webgpu.log.join(' | ')}; status: ${webgpu.status}`);
  assert.match(webgpu.hash, /backend=webgpu/);
  assert.equal(webgpu.backend, 'webgpu', `${webgpu.status} ${webgpu.notice}`);
  assert.match(webgpu.status, /Training on WebGPU \(/);
  assert.equal(cpu.backend, 'cpu', cpu.status);
  assert.match(cpu.status, /Training on the CPU \(/);
  assert.ok(webgpu.errors.length >= 2, `epochs reported on WebGPU: ${webgpu.errors.length}`);
  assert.equal(webgpu.errors.length, cpu.errors.length);
  assert.ok(webgpu.filters.distinctGreys > 50, `filter canvas looks blank: ${JSON.stringify(webgpu.filters)}`);
  const { lost } = runs;
  console.log(`# device lost after epoch 1: errors ${JSON.stringify(lost.errors)}; notice: ${lost.notice}`);
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

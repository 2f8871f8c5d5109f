// Shared e2e helpers: one headless Chromium per test process (playwright-core), one server per
// build (threaded: cross-origin isolated; single-threaded: a plain static server, as an
// embedding page without isolation gets), and page helpers.
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { startServer } from '../../scripts/serve.mjs';

const root = new URL('../../www/', import.meta.url).pathname;
export const artifacts = new URL('../../target/e2e-artifacts/', import.meta.url).pathname;
mkdirSync(artifacts, { recursive: true });

export const chromiumArgs = [
  '--headless=new', '--no-sandbox', '--enable-unsafe-webgpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];
export const builds = [{ name: 'threaded', isolate: true }, { name: 'single-threaded', isolate: false }];

// A small, quick model for every test: two layers of 32 and 16, 2 epochs, 1 trial, the
// supervised stage off (tests that want it say so).
export const SMALL = 'layers=32,16&epochs=2&supervised=0&monitor_cases=200';

let browser = null;
const servers = new Map();

export async function launch() {
  browser ??= await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: chromiumArgs });
  return browser;
}

export async function serverFor(build) {
  if (!servers.has(build.name)) servers.set(build.name, await startServer({ root, port: 0, isolate: build.isolate }));
  return servers.get(build.name);
}

export async function closeAll() {
  for (const server of servers.values()) await server.close();
  servers.clear();
  await browser?.close();
  browser = null;
}

// Opens the page of `build` with `hash`; `problems` collects page errors and console errors.
// `init`: a script run before the page's own (e.g. removing navigator.gpu).
export async function openPage(build, hash = '', { init = null, context = null } = {}) {
  const server = await serverFor(build);
  const owner = context ?? (await launch());
  const page = await owner.newPage();
  if (init) await page.addInitScript(init);
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  await page.goto(`${server.url.replace(/\/$/, '')}/${hash ? `#${hash}` : ''}`);
  return { page, problems, url: server.url };
}

// The engine started and the data loaded: Start is enabled.
export async function waitReady(page, timeout = 90_000) {
  await page.waitForFunction(() => document.getElementById('status').dataset.threads && document.getElementById('data-summary').dataset.cases && !document.getElementById('train-start').disabled, null, { timeout });
}

export async function startTraining(page) {
  await waitReady(page);
  await page.click('#train-start');
  await page.waitForFunction(() => window.app.running || document.getElementById('train-status').dataset.finished, null, { timeout: 30_000 });
}

// Waits until the run ends; returns the epoch log and what ran.
export async function waitFinished(page, timeout = 240_000) {
  await page.waitForFunction(() => document.getElementById('train-status').dataset.finished && !window.app.running, null, { timeout });
  return runSummary(page);
}

export async function runSummary(page) {
  return page.evaluate(() => ({
    errors: [...document.querySelectorAll('#epoch-log li')].map((li) => Number(li.dataset.error)),
    log: [...document.querySelectorAll('#epoch-log li')].map((li) => li.textContent),
    epochs: Number(document.getElementById('train-progress').dataset.epochs || 0),
    finished: document.getElementById('train-status').dataset.finished,
    backend: document.getElementById('status').dataset.trainingBackend,
    status: document.getElementById('status').textContent,
    notice: document.getElementById('train-notice').hidden ? '' : document.getElementById('train-notice').textContent,
  }));
}

export const epochCount = (page) => page.evaluate(() => Number(document.getElementById('train-progress').dataset.epochs || 0));

// Size, distinct grey levels and a checksum of a canvas (found by CSS selector).
export async function canvasStats(page, selector) {
  return page.evaluate((sel) => {
    const canvas = document.querySelector(sel);
    if (!canvas) return null;
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const greys = new Set();
    let checksum = 0;
    for (let k = 0; k < pixels.length; k += 4) {
      greys.add(pixels[k]);
      checksum = (checksum * 31 + pixels[k] + 7 * pixels[k + 1] + 13 * pixels[k + 2]) % 1_000_000_007;
    }
    return { width: canvas.width, height: canvas.height, distinctGreys: greys.size, checksum };
  }, selector);
}

export async function screenshot(page, name) {
  await page.screenshot({ path: `${artifacts}${name}.png`, fullPage: true });
}

// The first `count` cases of the built-in MNIST as raw IDX buffers (a small data set for
// the slow software WebGPU adapter).
export function mnistSubset(count) {
  const read = (name) => gunzipSync(readFileSync(`${root}data/${name}`));
  const images = read('mnist-default-images-idx3-ubyte.gz');
  const labels = read('mnist-default-labels-idx1-ubyte.gz');
  const imageHeader = Buffer.from(images.subarray(0, 16));
  imageHeader.writeUInt32BE(count, 4);
  const labelHeader = Buffer.from(labels.subarray(0, 8));
  labelHeader.writeUInt32BE(count, 4);
  return {
    images: Buffer.concat([imageHeader, images.subarray(16, 16 + count * 28 * 28)]),
    labels: Buffer.concat([labelHeader, labels.subarray(8, 8 + count)]),
  };
}

// Loads IDX buffers through the data panel's file pickers; resolves once the data is in.
// Waits for the page to be ready first: the initial load selects the built-in source when
// the engine has started, which would undo an earlier click on the file source.
export async function uploadIdx(page, { images, labels }, name = 'subset') {
  await waitReady(page);
  await page.check('#data-source-idx');
  await page.setInputFiles('#idx-labels', { name: `${name}-labels-idx1-ubyte`, mimeType: 'application/octet-stream', buffer: labels });
  await page.setInputFiles('#idx-images', { name: `${name}-images-idx3-ubyte`, mimeType: 'application/octet-stream', buffer: images });
  const cases = images.readUInt32BE(4);
  await page.waitForFunction((n) => Number(document.getElementById('data-summary').dataset.cases) === n, cases, { timeout: 30_000 });
}

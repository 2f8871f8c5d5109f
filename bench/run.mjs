#!/usr/bin/env node
// CPU training benchmark: one CD-1 epoch of a 784-500 RBM (batch 100) over the 10k MNIST
// training subset, measured in one run on this machine for
//   - the native CLI (`deepbelief bench --json`, the gemm crate on rayon threads),
//   - the threaded wasm build in headless Chromium (www/bench.html, cross-origin isolated),
//   - the same loop in NumPy float32 (bench/numpy_rbm.py), and
//   - scikit-learn's BernoulliRBM, one iteration (bench/sklearn_rbm.py).
// Progress goes to stderr; stdout gets one JSON object (the last line).
//
// usage: node bench/run.mjs [--repeats N] [--only native,wasm,numpy,sklearn] [--no-build]
//   --no-build  use target/release and www/pkg-mt as they are (no cargo / wasm-pack).
// The native figure comes from `deepbelief bench --json --repeats N --images IMAGES`, which
// prints `deepbelief::bench::BenchReport` as JSON.
// Environment: CHROMIUM (default /usr/bin/chromium), DEEPBELIEF_DATA (the IDX images,
// default ../shared/data/mnist/train-10k-images-idx3-ubyte.gz from the repository root).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const VENV = join(ROOT, 'bench', '.venv');
const PYTHON = join(VENV, 'bin', 'python');
const DATA = resolve(ROOT, process.env.DEEPBELIEF_DATA || '../shared/data/mnist/train-10k-images-idx3-ubyte.gz');
const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

function parseArgs(argv) {
  const opts = { repeats: 3, only: new Set(['native', 'wasm', 'numpy', 'sklearn']), build: true };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--repeats') opts.repeats = Math.max(1, Number(value()) || 3);
    else if (flag === '--only') opts.only = new Set(value().split(','));
    else if (flag === '--no-build') opts.build = false;
    else if (flag === '-h' || flag === '--help') {
      console.error('usage: node bench/run.mjs [--repeats N] [--only native,wasm,numpy,sklearn] [--no-build]');
      process.exit(0);
    } else throw new Error(`unknown argument ${argv[i]}`);
  }
  return opts;
}

const log = (...args) => console.error(...args);

/** Runs a command with its stderr shown as it comes; returns its stdout. Throws on failure. */
function runCapture(cmd, args, { env = {} } = {}) {
  log(`\n$ ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`could not run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed with exit code ${r.status}`);
  return { stdout: r.stdout };
}

/** The last line of `text` that parses as a JSON object. */
function lastJson(text, what) {
  for (const line of text.trim().split('\n').reverse()) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      return JSON.parse(t);
    } catch { /* not this line */ }
  }
  throw new Error(`${what} printed no JSON object:\n${text.slice(-2000)}`);
}

function ensureVenv() {
  const ready = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import numpy, sklearn, threadpoolctl'], { stdio: 'ignore' }).status === 0;
  if (ready) return;
  log(`\n==> Python peers: creating ${VENV} with numpy and scikit-learn`);
  if (!existsSync(PYTHON)) runCapture('python3', ['-m', 'venv', VENV]);
  runCapture(PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', 'numpy', 'scikit-learn']);
}

function python(script, repeats) {
  const out = runCapture(PYTHON, [join(ROOT, 'bench', script), DATA, '--repeats', String(repeats)], { env: { PYTHONPATH: join(ROOT, 'bench') } });
  return lastJson(out.stdout, script);
}

/** The release CLI and, when the page is measured, the threaded wasm package. */
async function build(withWasm) {
  log('\n==> Building');
  runCapture('cargo', ['build', '--release', '--bin', 'deepbelief']);
  if (!withWasm) return;
  const { bootstrap } = await import('../scripts/lib/bootstrap.mjs');
  const { buildWasm } = await import('../scripts/lib/build.mjs');
  const { makeMnistAsset } = await import('../scripts/make-mnist-asset.mjs');
  // The build helpers log to stdout; keep stdout for the result.
  const stdoutLog = console.log;
  console.log = console.error;
  try {
    const tools = await bootstrap();
    makeMnistAsset();
    await buildWasm('mt', tools);
  } finally {
    console.log = stdoutLog;
  }
}

function native(repeats) {
  log('\n==> Native CLI');
  const cli = join(resolve(ROOT, process.env.CARGO_TARGET_DIR || 'target'), 'release', 'deepbelief');
  const out = runCapture(cli, ['bench', '--json', '--repeats', String(repeats), '--images', DATA]);
  return lastJson(out.stdout, 'deepbelief bench');
}

async function wasm(repeats) {
  log('\n==> Threaded wasm in headless Chromium');
  const { startServer } = await import('../scripts/serve.mjs');
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const server = await startServer({ root: join(ROOT, 'www'), port: 0, isolate: true });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => log(`[page ${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => log(`[page error] ${e.message}`));
    await page.goto(`${server.url}bench.html?repeats=${repeats}`);
    await page.waitForFunction(() => document.body.dataset.done === '1', null, { timeout: 15 * 60_000, polling: 500 });
    const report = JSON.parse(await page.textContent('#result'));
    if (report.error) throw new Error(`bench.html: ${report.error}`);
    if (!report.isolated || report.threads < 2) log(`warning: the page ran with ${report.threads} thread(s), isolated=${report.isolated}`);
    return report;
  } finally {
    await server.close();
    await browser.close();
  }
}

const ratio = (a, b) => (a != null && b != null ? +(a / b).toFixed(4) : null);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(DATA)) throw new Error(`${DATA} is missing (set DEEPBELIEF_DATA to the IDX images)`);
  if (opts.build) await build(opts.only.has('wasm'));
  if (opts.only.has('numpy') || opts.only.has('sklearn')) ensureVenv();
  const runs = {};
  const loadBefore = loadavg()[0];
  // Sequential on purpose: each measurement gets the whole machine (other work running at
  // the same time skews them: see load_average_1m in the result).
  if (opts.only.has('native')) runs.native = native(opts.repeats);
  if (opts.only.has('numpy')) runs.numpy = python('numpy_rbm.py', opts.repeats);
  if (opts.only.has('sklearn')) runs.sklearn = python('sklearn_rbm.py', opts.repeats);
  if (opts.only.has('wasm')) runs.wasm = await wasm(opts.repeats);
  for (const [name, report] of Object.entries(runs)) log(`\n${name}: ${JSON.stringify(report)}`);

  const cpu = runs.native?.cpu_epoch_s ?? null;
  const numpy = runs.numpy?.numpy_epoch_s ?? null;
  const sklearn = runs.sklearn?.sklearn_epoch_s ?? null;
  const web = runs.wasm?.cpu_epoch_s ?? null;
  const summary = {
    cpu_epoch_s: cpu,
    numpy_epoch_s: numpy,
    sklearn_epoch_s: sklearn,
    wasm_epoch_s: web,
    ratio_native_vs_numpy: ratio(cpu, numpy),
    ratio_wasm_vs_numpy: ratio(web, numpy),
    ratio_native_vs_sklearn: ratio(cpu, sklearn),
    gemm_gflops_native: runs.native?.gemm_gflops ?? null,
    gemm_gflops_wasm: runs.wasm?.gemm_gflops ?? null,
    threads_native: runs.native?.threads ?? null,
    threads_wasm: runs.wasm?.threads ?? null,
    threads_numpy: runs.numpy?.threads ?? null,
    cases: runs.native?.cases ?? runs.numpy?.cases ?? null,
    cpus: availableParallelism(),
    load_average_1m: [+loadBefore.toFixed(2), +loadavg()[0].toFixed(2)],
  };
  console.log(JSON.stringify(summary));
}

main().catch((error) => {
  console.error(`\nbench/run.mjs failed: ${error.message}`);
  process.exit(1);
});

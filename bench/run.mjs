#!/usr/bin/env node
// CPU training benchmark: one CD-1 epoch of a 784-500 RBM (batch 100) over the 10k MNIST
// training subset, measured in one run on this machine for
//   - the native CLI (`deepbelief bench --json`, the gemm crate on rayon threads),
//   - the threaded wasm build in headless Chromium (www/bench.html, cross-origin isolated),
//   - the WebGPU path in the same headless Chromium (www/bench.html?backend=webgpu): on a
//     machine without a GPU that is SwiftShader, software Vulkan on the CPU, so its figure
//     (a smaller 784-100 RBM over --webgpu-cases cases) only tracks regressions,
//   - the same loop in NumPy float32 (bench/numpy_rbm.py), and
//   - scikit-learn's BernoulliRBM, one iteration (bench/sklearn_rbm.py).
// Progress goes to stderr; stdout gets one JSON object (the last line).
//
// usage: node bench/run.mjs [--repeats N] [--only native,wasm,webgpu,numpy,sklearn] [--no-build]
//                           [--webgpu-cases N] [--webgpu-hidden N] [--webgpu-repeats N]
//   --no-build  use target/release and www/pkg-mt as they are (no cargo / wasm-pack).
//   --webgpu-*  the WebGPU run's size: cases (default 1000, the MNIST file tiled or cut to
//               that many), hidden units (100; batch 100) and timed epochs after the warm-up (1).
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

const USAGE = 'usage: node bench/run.mjs [--repeats N] [--only native,wasm,webgpu,numpy,sklearn] [--no-build] [--webgpu-cases N] [--webgpu-hidden N] [--webgpu-repeats N]';
const KINDS = ['native', 'wasm', 'webgpu', 'numpy', 'sklearn'];

function parseArgs(argv) {
  // SwiftShader trained ~85 cases/s of a 784-100 RBM on two busy cores: 1,000 cases and one
  // timed epoch keep the WebGPU page (compilation, warm-up, epoch, GEMM kernels) near a minute.
  const opts = { repeats: 3, only: new Set(KINDS), build: true, webgpu: { cases: 1000, hidden: 100, batch: 100, repeats: 1 } };
  const count = (flag, text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer, not ${text}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--repeats') opts.repeats = Math.max(1, Number(value()) || 3);
    else if (flag === '--only') {
      opts.only = new Set(value().split(','));
      const unknown = [...opts.only].filter((k) => !KINDS.includes(k));
      if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (choose from ${KINDS.join(', ')})`);
    } else if (flag === '--no-build') opts.build = false;
    else if (flag === '--webgpu-cases') opts.webgpu.cases = count(flag, value());
    else if (flag === '--webgpu-hidden') opts.webgpu.hidden = count(flag, value());
    else if (flag === '--webgpu-repeats') opts.webgpu.repeats = count(flag, value());
    else if (flag === '-h' || flag === '--help') {
      console.error(USAGE);
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

/** The release CLI when it is measured and, when the page is, the threaded wasm package. */
async function build(withNative, withWasm) {
  log('\n==> Building');
  if (withNative) runCapture('cargo', ['build', '--release', '--bin', 'deepbelief']);
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

/** Opens www/bench.html?QUERY in headless Chromium (cross-origin isolated) and returns its report. */
async function benchPage(query, extraArgs = []) {
  const { startServer } = await import('../scripts/serve.mjs');
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: [...CHROMIUM_ARGS, ...extraArgs] });
  const server = await startServer({ root: join(ROOT, 'www'), port: 0, isolate: true });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => log(`[page ${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => log(`[page error] ${e.message}`));
    await page.goto(`${server.url}bench.html?${query}`);
    await page.waitForFunction(() => document.body.dataset.done === '1', null, { timeout: 15 * 60_000, polling: 500 });
    const report = JSON.parse(await page.textContent('#result'));
    if (report.error) throw new Error(`bench.html?${query}: ${report.error}`);
    return report;
  } finally {
    await server.close();
    await browser.close();
  }
}

async function wasm(repeats) {
  log('\n==> Threaded wasm in headless Chromium');
  const report = await benchPage(`repeats=${repeats}`);
  if (!report.isolated || report.threads < 2) log(`warning: the page ran with ${report.threads} thread(s), isolated=${report.isolated}`);
  return report;
}

async function webgpu({ cases, hidden, batch, repeats }) {
  log('\n==> WebGPU in headless Chromium (SwiftShader without a GPU: for regression tracking only)');
  // Headless Chromium exposes WebGPU only with this flag; the wasm run keeps its own flags.
  const started = performance.now();
  const report = await benchPage(`backend=webgpu&cases=${cases}&hidden=${hidden}&batch=${batch}&repeats=${repeats}`, ['--enable-unsafe-webgpu']);
  return { ...report, wall_s: (performance.now() - started) / 1000 };
}

/** The WebGPU run as the summary reports it: epoch time, throughput and the GEMM kernels' GFLOP/s. */
function webgpuSummary(report) {
  if (!report) return null;
  return {
    adapter: report.adapter?.name || null,
    software_adapter: /swiftshader/i.test(report.adapter?.name || '') || report.adapter_info?.is_fallback_adapter === true,
    epoch_s: report.gpu_epoch_s,
    epoch_runs_s: report.mnist.epoch_runs_s,
    cases_per_s: +report.cases_per_s.toFixed(1),
    epoch_gflops: +report.mnist.gflops.toFixed(3),
    gemm_gflops: report.gemm.map((g) => ({ role: g.role, variant: g.variant, m: g.m, k: g.k, n: g.n, gflops: +g.gflops.toFixed(3) })),
    cases: report.mnist.cases,
    n_visible: report.mnist.n_visible,
    n_hidden: report.mnist.n_hidden,
    batch_size: report.mnist.batch_size,
    // The whole page: browser start, pipeline compilation, warm-up epoch, epochs and GEMMs.
    wall_s: +report.wall_s.toFixed(1),
    note: 'software WebGPU on the CPU: for regression tracking only, not a GPU speed',
  };
}

const ratio = (a, b) => (a != null && b != null ? +(a / b).toFixed(4) : null);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(DATA)) throw new Error(`${DATA} is missing (set DEEPBELIEF_DATA to the IDX images)`);
  if (opts.build) await build(opts.only.has('native'), opts.only.has('wasm') || opts.only.has('webgpu'));
  if (opts.only.has('numpy') || opts.only.has('sklearn')) ensureVenv();
  const runs = {};
  const loadBefore = loadavg()[0];
  // Sequential on purpose: each measurement gets the whole machine (other work running at
  // the same time skews them: see load_average_1m in the result).
  if (opts.only.has('native')) runs.native = native(opts.repeats);
  if (opts.only.has('numpy')) runs.numpy = python('numpy_rbm.py', opts.repeats);
  if (opts.only.has('sklearn')) runs.sklearn = python('sklearn_rbm.py', opts.repeats);
  if (opts.only.has('wasm')) runs.wasm = await wasm(opts.repeats);
  if (opts.only.has('webgpu')) runs.webgpu = await webgpu(opts.webgpu);
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
    webgpu: webgpuSummary(runs.webgpu),
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

#!/usr/bin/env node
// `npm test [-- SUITE...]`: the same bootstrap and build as `npm start`, plus
// the test tools (Chromium, ChromeDriver, Mesa lavapipe), then the suites:
//
//   native  cargo test on lavapipe (WGPU_BACKEND=vulkan, VK_DRIVER_FILES=lvp icd)
//   wasm    wasm-pack test --headless --chrome (browser flags in webdriver.json)
//   e2e     node tests/e2e/run.mjs (real pages through playwright-core)
//
// Every selected suite runs even when an earlier one fails. One summary line
// per suite at the end; the exit status is non-zero when any failed.
// DEEPBELIEF_SUITE_TIMEOUT_S (default 3600) bounds each suite.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, run, since, step } from './lib/run.mjs';
import { bootstrap, ensureTestTools, CHROMEDRIVER, CHROMIUM } from './lib/bootstrap.mjs';
import { buildAll } from './lib/build.mjs';

const ALL = ['native', 'wasm', 'e2e'];
const wanted = process.argv.slice(2).filter((a) => a !== '--');
const unknown = wanted.filter((s) => !ALL.includes(s));
if (unknown.length) {
  console.error(`Unknown suite(s): ${unknown.join(', ')}. Choose from: ${ALL.join(', ')} (default: all).`);
  process.exit(2);
}
const selected = wanted.length ? ALL.filter((s) => wanted.includes(s)) : ALL;
const timeoutMs = Number(process.env.DEEPBELIEF_SUITE_TIMEOUT_S || 3600) * 1000;

const tStart = performance.now();
let tools;
let testTools;
try {
  tools = await bootstrap();
  testTools = await ensureTestTools();
} catch (err) {
  console.error(`\nnpm test: bootstrap failed: ${err.message}`);
  process.exit(1);
}

// The build is a prerequisite of e2e only; when it fails the other suites
// still run and e2e is reported as failed.
let buildError = null;
try {
  await buildAll(tools);
} catch (err) {
  buildError = err;
  console.error(`\nBuild failed: ${err.message}`);
}

const suites = {
  native: () =>
    run('cargo', ['test'], {
      timeoutMs,
      env: { RUSTUP_TOOLCHAIN: 'stable', WGPU_BACKEND: 'vulkan', VK_DRIVER_FILES: testTools.icd },
    }),
  wasm: () =>
    run('wasm-pack', ['test', '--headless', '--chrome', '--release', '--mode', 'no-install'], {
      timeoutMs,
      env: {
        RUSTUP_TOOLCHAIN: 'stable',
        CHROMEDRIVER,
        // wasm-bindgen-test-runner gives a whole test binary 20 s by default:
        // too short for WebGPU on a 2-core CPU rasteriser.
        WASM_BINDGEN_TEST_TIMEOUT: process.env.WASM_BINDGEN_TEST_TIMEOUT || '600',
        WASM_BINDGEN_TEST_DRIVER_TIMEOUT: process.env.WASM_BINDGEN_TEST_DRIVER_TIMEOUT || '30',
      },
    }),
  e2e: async () => {
    if (buildError) throw new Error('not run: the build failed');
    const script = join(ROOT, 'tests', 'e2e', 'run.mjs');
    if (!existsSync(script)) throw new Error('tests/e2e/run.mjs missing');
    await run('node', [script], { timeoutMs, env: { CHROMIUM: process.env.CHROMIUM || CHROMIUM } });
  },
};

const results = [];
for (const name of selected) {
  step(`Suite ${name}`);
  const t0 = performance.now();
  try {
    await suites[name]();
    results.push({ name, ok: true, time: since(t0) });
  } catch (err) {
    console.error(`\nSuite ${name} failed: ${err.message}`);
    const why = err.timedOut ? 'timed out' : err.code != null ? `exit ${err.code}` : err.signal ? err.signal : err.message;
    results.push({ name, ok: false, time: since(t0), why });
  }
}

const width = Math.max(...results.map((r) => r.name.length), buildError ? 5 : 0);
console.log('\n==> Summary');
if (buildError) console.log(`${'build'.padEnd(width)}  FAIL  (${buildError.message.split('\n')[0]})`);
for (const r of results) {
  console.log(`${r.name.padEnd(width)}  ${r.ok ? 'PASS' : 'FAIL'}  ${r.time.padStart(7)}${r.ok ? '' : ` (${r.why})`}`);
}
console.log(`total ${since(tStart)}`);
process.exit(buildError || results.some((r) => !r.ok) ? 1 : 0);

// Runs every tests/e2e/*.test.mjs with node:test, one file at a time (each launches its own
// headless Chromium; the machine may have two cores). Exits non-zero when any test fails.
// `node tests/e2e/run.mjs core` runs only the files whose name contains "core".
import { readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';

const here = new URL('.', import.meta.url).pathname;
const filters = process.argv.slice(2).filter((a) => a !== '--');
const files = readdirSync(here).filter((f) => f.endsWith('.test.mjs')).filter((f) => !filters.length || filters.some((x) => f.includes(x))).sort().map((f) => `${here}${f}`);
if (!files.length) {
  console.error('no e2e test files found');
  process.exit(1);
}
const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files], { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

// The Sequences mode (issue 20), in both builds: a family=sequences link shows its settings
// (each with a tooltip) and views and hides the DBN's; it trains the 2-bit adder on Elman's
// net live (the error per chunk falls, the hidden-state heat map and the sensitivity tiles are
// drawn); the timing chart measures µs per RTRL step over n on the CPU (and WebGPU where the
// browser has it) and gets a point per n; a changed control goes to the URL hash; a bad value
// in the link names its field.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, closeAll, openPage, waitReady, waitFinished, screenshot } from './lib.mjs';

after(closeAll);

const SMALL_SQ = 'family=sequences&sq_steps=3000&sq_chunk=500&sq_timing_max=8&sq_timing_steps=2';
const shown = (page, selector) => page.evaluate((sel) => {
  const element = document.querySelector(sel);
  return !!element && element.checkVisibility();
}, selector);

// E2E_BUILD=single-threaded (or threaded) runs one build only.
for (const build of builds.filter((b) => !process.env.E2E_BUILD || b.name === process.env.E2E_BUILD)) {
  describe(`${build.name} build`, () => {
    test('a family=sequences link trains the adder live: the error falls, the heat map and tensor are drawn, the timing chart gets its points', async () => {
      const { page, problems } = await openPage(build, `${SMALL_SQ}&sq_backend=cpu`);
      try {
        await waitReady(page);
        assert.equal(await page.inputValue('#family'), 'sequences');
        for (const id of ['#sq-task', '#sq-bits', '#sq-preset', '#sq-rate', '#sq-backend', '#p-seed', '#sq-hidden-state-canvas', '#sq-sensitivity-canvas', '#chart-sq-error', '#chart-sq-timing', '#sq-time']) {
          assert.ok(await shown(page, id), `${id} should show for sequences`);
        }
        for (const id of ['#preset', '#p-layers', '#advanced-settings', '#samples-canvas', '#chart-recon', '#train-step-batch']) {
          assert.equal(await shown(page, id), false, `${id} should be hidden for sequences`);
        }
        const untitled = await page.$$eval('#sequence-settings :is(input, select)', (controls) => controls.filter((c) => !c.closest('[title]')?.title).map((c) => c.id));
        assert.deepEqual(untitled, [], 'every Sequences control has a tooltip');
        assert.match(await page.textContent('#sq-arch-line'), /^4 → 4 → 2 \+ hidden → hidden · RTRL with the shortcut · 3,000 steps at rate 0.05/);

        await page.click('#train-start');
        const run = await waitFinished(page, 180_000);
        assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
        const chart = await page.$eval('#chart-sq-error', (box) => ({ ...box.dataset }));
        assert.equal(chart.points, '6');
        assert.ok(Number(chart.last) < Number(chart.first), `the error per chunk did not fall: ${chart.first} → ${chart.last}`);
        await page.waitForFunction(() => document.getElementById('sq-hidden-state-canvas').dataset.drawn && document.getElementById('sq-sensitivity-canvas').dataset.drawn, null, { timeout: 30_000 });
        const heat = await page.$eval('#sq-hidden-state-canvas', (c) => [c.width, c.height]);
        assert.equal(heat[0], 40 * 6, 'one 6-pixel column per held-out step');
        assert.match(await page.textContent('#sq-sensitivity-note'), /∂a\/∂μ\[1←1\] of layer 1's 4 units \(tiles of 4×4\)/);

        // The timing chart: n = 2, 4, 8 on the CPU (and WebGPU where there is one).
        await page.click('#sq-time');
        await page.waitForFunction(() => document.getElementById('chart-sq-timing').dataset.points === '3' && !document.getElementById('sq-time').disabled, null, { timeout: 120_000 });
        assert.match(await page.textContent('#sq-time-note'), /n = 8: \d+ µs on the CPU/);
        const timings = JSON.parse(await page.$eval('#chart-sq-timing', (box) => box.dataset.timings));
        assert.deepEqual(timings.map((p) => p.bits), [2, 4, 8]);
        for (const p of timings) assert.ok(p.cpu > 0 && (p.gpu === null || p.gpu > 0), `a timing of zero: ${JSON.stringify(timings)}`);
        // The work grows as n⁴: n = 8 takes longer than n = 2 on the CPU.
        assert.ok(timings[2].cpu > timings[0].cpu, `n = 8 was not slower than n = 2: ${JSON.stringify(timings)}`);
        await screenshot(page, `sequences-${build.name}`);

        // A changed control goes to the hash; a reload keeps it.
        await page.fill('#sq-rate', '0.1');
        await page.dispatchEvent('#sq-rate', 'change');
        assert.match(await page.evaluate(() => location.hash), /sq_rate=0\.1/);
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });

    test('a bad value in the link names its field', async () => {
      const { page } = await openPage(build, 'family=sequences&sq_bits=0&sq_backend=cpu');
      try {
        await waitReady(page);
        assert.match(await page.textContent('#sq-bits-error'), /Bits \(n\) \(sq_bits\): expected a value from 1 to 32, got 0/);
      } finally {
        await page.close();
      }
    });
  });
}

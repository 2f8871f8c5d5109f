// Data panel tests: the held-out split of the built-in data (every class in proportion), the
// class-balance bars (one scale, the held-out share stacked), and a shared link's data URL,
// which is fetched only after the visitor agrees, and never past the size cap.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, closeAll, launch, mnistSubset, openPage, waitReady } from './lib.mjs';

after(closeAll);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Each class bar's drawn height (every segment of it) and its held-out segment's height.
const barHeights = (page) => page.$$eval('#class-balance .bar', (bars) => bars.map((bar) => {
  const height = (el) => el.getBoundingClientRect().height;
  return {
    total: [...bar.querySelectorAll('.fill')].reduce((sum, fill) => sum + height(fill), 0),
    heldOut: [...bar.querySelectorAll('.fill.held-out')].reduce((sum, fill) => sum + height(fill), 0),
  };
}));

async function setHeldOut(page, fraction) {
  await page.fill('#held-out', String(fraction));
  await page.dispatchEvent('#held-out', 'change');
  await page.waitForFunction((f) => window.app.data?.n_held_out === Math.round(f * window.app.data.n_cases), fraction, { timeout: 30_000 });
}

test('built-in data: every class is held out in proportion, and the bars show counts to one scale with the held-out share', async () => {
  const { page, problems } = await openPage(builds[1], '');
  try {
    await waitReady(page);
    for (const fraction of [0.1, 0.15, 0.2, 0.25]) {
      await setHeldOut(page, fraction);
      const { class_counts: counts, held_out_class_counts: heldOut } = await page.evaluate(() => window.app.data);
      assert.equal(counts.length, 10);
      counts.forEach((count, k) => {
        assert.ok(Math.abs(heldOut[k] - fraction * count) <= 1, `fraction ${fraction}: class ${k} has ${heldOut[k]} of ${count} held out`);
      });
    }

    await setHeldOut(page, 0.25);
    const { class_counts: counts, held_out_class_counts: heldOut } = await page.evaluate(() => window.app.data);
    const bars = await barHeights(page);
    assert.equal(bars.length, counts.length);
    const most = Math.max(...counts);
    const tallest = bars[counts.indexOf(most)].total;
    assert.ok(tallest > 30, `the tallest bar is ${tallest} px`);
    bars.forEach((bar, k) => {
      // The built-in data has 863 fives and 1,127 ones: their bars must differ as much.
      assert.ok(Math.abs(bar.total / tallest - counts[k] / most) < 0.03, `class ${k}: ${counts[k]} cases drawn ${bar.total.toFixed(1)} px, the ${most} of the tallest ${tallest.toFixed(1)} px`);
      assert.ok(Math.abs(bar.heldOut / bar.total - heldOut[k] / counts[k]) < 0.03, `class ${k}: ${heldOut[k]} of ${counts[k]} held out drawn ${bar.heldOut.toFixed(1)} of ${bar.total.toFixed(1)} px`);
    });
    const caption = await page.textContent('#class-balance-caption');
    assert.match(caption, /training/i);
    assert.match(caption, /held out/i);
    assert.match(caption, /1,127/, 'the caption gives the scale');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

// Serves the first 500 built-in digits at https://idx.example/ and counts the requests.
async function servedIdx(context) {
  const subset = mnistSubset(500);
  const requests = [];
  await context.route('https://idx.example/**', async (route) => {
    requests.push(route.request().url());
    const body = route.request().url().includes('labels') ? subset.labels : subset.images;
    await route.fulfill({
      status: 200, body, contentType: 'application/octet-stream',
      headers: { 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' },
    });
  });
  return requests;
}

const LINK = `data=url&images_url=${encodeURIComponent('https://idx.example/images-idx3-ubyte')}&labels_url=${encodeURIComponent('https://idx.example/labels-idx1-ubyte')}`;

for (const build of builds) {
  describe(`a link's data URL (${build.name})`, () => {
    test('is fetched only after the visitor presses Load', async () => {
      const context = await (await launch()).newContext();
      const requests = await servedIdx(context);
      const { page, problems } = await openPage(build, LINK, { context });
      try {
        await waitReady(page);
        await sleep(1500);
        assert.deepEqual(requests, [], 'nothing is fetched before the click');
        assert.equal(await page.evaluate(() => window.app.data.n_cases), 10_000, 'the built-in data is loaded meanwhile');
        await page.waitForSelector('#url-prompt:not([hidden])', { timeout: 30_000 });
        const prompt = await page.textContent('#url-prompt');
        assert.match(prompt, /https:\/\/idx\.example\/images-idx3-ubyte/);
        assert.match(prompt, /https:\/\/idx\.example\/labels-idx1-ubyte/);
        await page.click('#url-prompt-load');
        await page.waitForFunction(() => window.app.data?.n_cases === 500, null, { timeout: 30_000 });
        assert.equal(requests.length, 2, requests.join(', '));
        assert.equal(await page.isHidden('#url-prompt'), true);
        assert.match(await page.evaluate(() => location.hash), /images_url=/, 'the link stays shareable');
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  });
}

test('a download past the size cap stops with an error naming the cap, and the data stay', async () => {
  const context = await (await launch()).newContext();
  const requests = await servedIdx(context);
  // The test hook lowers the cap (it cannot raise it): the 500 digits are 392,016 bytes.
  const { page, problems } = await openPage(builds[1], `${LINK}&max_fetch_bytes=100000`, { context });
  try {
    await waitReady(page);
    await page.click('#url-prompt-load');
    await page.waitForSelector('#url-error:not([hidden])', { timeout: 30_000 });
    const error = await page.textContent('#url-error');
    assert.match(error, /images-idx3-ubyte/);
    assert.match(error, /100,000 bytes/);
    assert.ok(requests.length >= 1);
    assert.equal(await page.evaluate(() => window.app.data.n_cases), 10_000, 'the built-in data stay');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

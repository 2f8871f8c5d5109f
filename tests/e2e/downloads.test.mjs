// The DBN's file buttons (www/storage.js) through the page's one download helper
// (views/canvas.js `download(name, data, type)`, which every Save model and export uses): after
// a small run, Download model.json gives the CLI's model.json with both layers, Export DEEP.LOG
// a log naming each layer, and Export activations one line per case. (The other families' Save
// model buttons are checked in their own files: autoencoder, sparse_coding, local_rbm,
// local_rbm_stack.) The single-threaded build: the helper is the same in both.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SMALL, builds, closeAll, openPage, startTraining, waitFinished } from './lib.mjs';

after(closeAll);

async function saved(page, button) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
  return { name: download.suggestedFilename(), text: readFileSync(await download.path(), 'utf8') };
}

test('model.json, DEEP.LOG and the activations download through the shared helper', async () => {
  const { page, problems } = await openPage(builds[1], `${SMALL}&backend=cpu`);
  try {
    await startTraining(page);
    const run = await waitFinished(page, 180_000);
    assert.equal(run.finished, 'done', `${run.status} ${run.notice}`);
    const model = await saved(page, '#model-download');
    assert.equal(model.name, 'model.json');
    const json = JSON.parse(model.text);
    assert.equal(json.format, 'deepbelief-dbn');
    assert.deepEqual(json.layers.map((l) => l.n_hidden), [32, 16]);
    const log = await saved(page, '#export-log');
    assert.equal(log.name, 'DEEP.LOG');
    assert.match(log.text, /layer/i);
    const activations = await saved(page, '#export-activations');
    assert.match(activations.name, /^activations-.*\.txt$/);
    assert.ok(activations.text.trim().split('\n').length >= 100, 'one line per case');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

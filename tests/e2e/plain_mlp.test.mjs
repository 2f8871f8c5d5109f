// A plain MLP on the page (issue 21): no RBM layers, the supervised stage alone, here
// 784-25-15-10 with Toman's adaptive steps and logistic outputs on the CPU. The run's plan has
// the supervised step only, the criterion falls epoch by epoch (robust training keeps the best
// weights), the classification figures come back, and the model saves with no RBM layers.
// Single-threaded build (the threaded one trains the same engine code).
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { builds, openPage, startTraining, waitFinished, closeAll, mnistSubset, uploadIdx } from './lib.mjs';

after(closeAll);

const PLAIN_MLP = 'layers=&supervised=1&sup_hidden=25,15&sup_optimizer=adaptive_step&sup_output=logistic&sup_weight_penalty=0&sup_max_iterations=150&sup_fine_tune=0&backend=cpu';

describe('plain MLP', () => {
  const build = builds.find((b) => !b.isolate);
  test('784-25-15-10 with the adaptive rule: the error falls and the model has no RBM layers', async () => {
    const { page, problems } = await openPage(build, PLAIN_MLP);
    try {
      await uploadIdx(page, mnistSubset(1000));
      await page.evaluate(() => {
        window.criteria = [];
        window.app.on('supervised_progress', ({ stage, criterion }) => { if (stage === 'supervised') window.criteria.push(criterion); });
        window.app.on('supervised_done', ({ summary }) => { window.supervisedSummary = summary; });
      });
      await startTraining(page);
      const run = await waitFinished(page);
      assert.equal(run.finished, 'done', `${run.status} ${run.notice} ${await page.textContent('#train-status')}`);
      const steps = await page.evaluate(() => [...document.querySelectorAll('#train-steps li')].map((li) => li.dataset.kind));
      assert.deepEqual(steps, ['supervised'], 'no RBM step in the plan');
      const criteria = await page.evaluate(() => window.criteria);
      assert.ok(criteria.length >= 150, `one criterion per epoch: ${criteria.length}`);
      // 150 epochs of adaptive steps take the half squared error well down from the start
      // (measured on these 1,000 digits: 1.25 → 0.45 after the first 40).
      const first = criteria[0];
      const last = criteria[criteria.length - 1];
      assert.ok(last < first / 2, `the error falls: ${first} → ${last}`);
      const summary = await page.evaluate(() => window.supervisedSummary);
      assert.equal(summary.outcome.supervised.iterations, 150);
      assert.ok(summary.train_error < 0.3, `train error ${summary.train_error}`);
      const model = await page.evaluate(() => window.app.model);
      assert.deepEqual(model.layers, [], 'no RBM layers');
      assert.deepEqual(model.supervised.hidden, [25, 15]);
      const saved = JSON.parse(await page.evaluate(() => window.app.rpc('saveModel')));
      assert.deepEqual(saved.layers, []);
      assert.deepEqual(saved.config.layers, []);
      assert.equal(saved.supervised.layers[0].n_in, 784);
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
});

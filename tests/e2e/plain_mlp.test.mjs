// A plain MLP on the page (issue 21): no RBM layers, the supervised stage alone, here
// 784-25-15-10 with Toman's adaptive steps and logistic outputs on the CPU. The run's plan has
// the supervised step only, the criterion falls epoch by epoch (robust training keeps the best
// weights), the classification figures come back, and the model saves with no RBM layers.
// Single-threaded build (the threaded one trains the same engine code). Then, in both builds,
// the same net on WebGPU (SwiftShader here): the adaptive rule resident on the device follows
// the CPU run epoch by epoch (RMS/2 within 1e-4 relative: tests/gpu_mlp.rs's 2e-5 held in one run
// and missed by 2.4e-5 at epoch 2 in another — 784-long f32 sums on real digits; the wasm test
// tests/web_mlp_device.rs holds 2e-5 on synthetic ones), and a
// device lost after the first submission hands the rest to the CPU with a notice.
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

// 200 digits, 24 epochs: SwiftShader is slow (tens of seconds to compile the kernels, about a
// second an epoch here), and 24 epochs cross a submission boundary (16 epochs each).
const EPOCHS = 24;
const SMALL_MLP = `layers=&supervised=1&sup_hidden=25,15&sup_optimizer=adaptive_step&sup_output=logistic&sup_weight_penalty=0&sup_max_iterations=${EPOCHS}&sup_fine_tune=0`;
const rmsHalf = (criterion) => Math.sqrt((2 * criterion) / 10) / 2;

async function mlpRun(build, backend) {
  const { page, problems } = await openPage(build, `${SMALL_MLP}&${backend}`);
  try {
    await uploadIdx(page, mnistSubset(200));
    await page.evaluate(() => {
      window.criteria = [];
      window.app.on('supervised_progress', ({ stage, iteration, criterion }) => { if (stage === 'supervised') window.criteria.push([iteration, criterion]); });
    });
    await startTraining(page);
    const run = await waitFinished(page, 600_000);
    run.criteria = await page.evaluate(() => window.criteria);
    run.busy = await page.evaluate(() => document.getElementById('train-status').dataset.busySeen ?? '');
    assert.deepEqual(problems, []);
    return run;
  } finally {
    await page.close();
  }
}

for (const build of builds) {
  describe(`plain MLP on WebGPU, ${build.name} build`, () => {
    test('the adaptive rule on the device follows the CPU epoch by epoch; a lost device hands over to the CPU', async () => {
      const cpu = await mlpRun(build, 'backend=cpu');
      const webgpu = await mlpRun(build, 'backend=webgpu');
      const lost = await mlpRun(build, 'backend=webgpu&simulate_gpu_loss=1');
      assert.equal(cpu.finished, 'done', `${cpu.status} ${cpu.notice}`);
      assert.equal(webgpu.finished, 'done', `${webgpu.status} ${webgpu.notice}`);
      assert.equal(webgpu.backend, 'webgpu', `${webgpu.status} ${webgpu.notice}`);
      assert.equal(webgpu.notice, '', 'no fall-back');
      assert.match(webgpu.busy, /Compiling the WebGPU kernels/);
      assert.deepEqual(webgpu.criteria.map(([epoch]) => epoch), cpu.criteria.map(([epoch]) => epoch));
      assert.equal(cpu.criteria.length, EPOCHS);
      webgpu.criteria.forEach(([epoch, criterion], k) => {
        const relative = Math.abs(rmsHalf(criterion) - rmsHalf(cpu.criteria[k][1])) / rmsHalf(cpu.criteria[k][1]);
        assert.ok(relative <= 1e-4, `epoch ${epoch}: RMS/2 ${rmsHalf(criterion)} on WebGPU, ${rmsHalf(cpu.criteria[k][1])} on the CPU (relative ${relative})`);
      });
      assert.equal(lost.finished, 'done', `${lost.status} ${lost.notice}`);
      assert.match(lost.notice, /WebGPU failed .*continuing on the CPU/);
      assert.equal(lost.backend, 'cpu', lost.status);
      assert.deepEqual(lost.criteria.map(([epoch]) => epoch), cpu.criteria.map(([epoch]) => epoch), 'every epoch reported, numbered on');
      assert.ok(lost.criteria[EPOCHS - 1][1] < lost.criteria[0][1], 'the error falls');
    });
  });
}

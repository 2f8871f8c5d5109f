// Runs `bench_cpu` in a module Worker (Atomics.wait, which the rayon pool needs, is not
// allowed on the main thread) and shows its JSON report. bench/run.mjs waits for
// `document.body.dataset.done` and reads `#result`. `?repeats=N` sets the timed epochs.
const status = document.getElementById('status');
const result = document.getElementById('result');
const repeats = Number(new URLSearchParams(location.search).get('repeats')) || 3;
document.getElementById('repeats').textContent = String(repeats);

const finish = (text, failed) => {
  result.textContent = text;
  if (failed) document.body.dataset.error = '1';
  document.body.dataset.done = '1';
};

const worker = new Worker(new URL('./bench-worker.js', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => {
  if (data.type === 'status') status.textContent = data.text;
  else if (data.type === 'result') {
    status.textContent = 'Done.';
    finish(JSON.stringify(data.report, null, 2), false);
  } else if (data.type === 'error') {
    status.textContent = 'Failed.';
    finish(JSON.stringify({ error: data.message }), true);
  }
};
worker.onerror = (event) => {
  status.textContent = 'Failed.';
  finish(JSON.stringify({ error: event.message || 'the worker failed to load' }), true);
};
worker.postMessage({ repeats });

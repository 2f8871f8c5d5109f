// Runs one benchmark in a module Worker (Atomics.wait, which the rayon pool needs, is not
// allowed on the main thread) and shows its JSON report. bench/run.mjs waits for
// `document.body.dataset.done` and reads `#result`. The query picks the run:
//   ?backend=cpu&repeats=N                                 (the default)
//   ?backend=webgpu&hidden=H&batch=B&cases=C&repeats=N
// Each run starts on load, so a URL alone reproduces a figure; the form reloads with a new one.
const params = new URLSearchParams(location.search);
const backend = params.get('backend') === 'webgpu' ? 'webgpu' : 'cpu';
const positive = (name, fallback) => {
  const value = Math.floor(Number(params.get(name)));
  return value >= 1 ? value : fallback;
};
// SwiftShader trained a 784-100 RBM at 65-85 cases/s on two busy cores: small defaults keep
// the page (and bench/run.mjs) to about a minute and a half.
const settings = backend === 'webgpu'
  ? { backend, repeats: positive('repeats', 1), hidden: positive('hidden', 100), batch: positive('batch', 100), cases: positive('cases', 1000) }
  : { backend, repeats: positive('repeats', 3) };

const status = document.getElementById('status');
const result = document.getElementById('result');
const form = document.getElementById('choose');
form.elements.backend.value = backend;
form.addEventListener('submit', (event) => {
  event.preventDefault();
  location.search = `?backend=${form.elements.backend.value}`;
});
document.getElementById('about-cpu').hidden = backend !== 'cpu';
document.getElementById('about-webgpu').hidden = backend !== 'webgpu';
if (backend === 'cpu') document.getElementById('repeats').textContent = String(settings.repeats);
else {
  for (const [id, key] of [['hidden', 'hidden'], ['batch', 'batch'], ['cases', 'cases'], ['gpu-repeats', 'repeats']]) {
    document.getElementById(id).textContent = String(settings[key]);
  }
}

const finish = (text, failed) => {
  result.textContent = text;
  if (failed) document.body.dataset.error = '1';
  document.body.dataset.done = '1';
};

const worker = new Worker(new URL('./bench-worker.js', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => {
  if (data.type === 'status') {
    status.textContent = data.text;
    console.info(data.text); // bench/run.mjs echoes the page's console: progress on long runs
  } else if (data.type === 'result') {
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
worker.postMessage(settings);

// The benchmark's worker: loads the threaded package when the page is cross-origin isolated
// (SharedArrayBuffer available), else the single-threaded one, then runs `bench_cpu` on the
// embedded MNIST default (the same 10,000 digits as ../shared/data/mnist/train-10k).
const isolated = self.crossOriginIsolated === true;
const post = (type, body = {}) => self.postMessage({ type, ...body });

self.onmessage = async ({ data: { repeats } }) => {
  try {
    post('status', { text: `Loading the ${isolated ? 'threaded' : 'single-threaded'} engine…` });
    const wasm = isolated ? await import('./pkg-mt/deepbelief.js') : await import('./pkg/deepbelief.js');
    await wasm.default();
    if (isolated) await wasm.initThreadPool(navigator.hardwareConcurrency || 2);
    const response = await fetch('./data/mnist-default-images-idx3-ubyte.gz');
    if (!response.ok) throw new Error(`mnist-default-images-idx3-ubyte.gz: HTTP ${response.status}`);
    const images = new Uint8Array(await response.arrayBuffer());
    post('status', { text: `Training ${repeats + 1} epochs…` });
    const report = wasm.bench_cpu(images, repeats);
    post('result', { report: { ...report, isolated, hardware_concurrency: navigator.hardwareConcurrency } });
  } catch (error) {
    post('error', { message: String(error?.message || error) });
  }
};

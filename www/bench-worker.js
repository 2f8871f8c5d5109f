// The benchmark's worker: loads the threaded package when the page is cross-origin isolated
// (SharedArrayBuffer available), else the single-threaded one, then runs `bench_cpu` or
// `bench_webgpu` on the embedded MNIST default (the same 10,000 digits as
// ../shared/data/mnist/train-10k).
const isolated = self.crossOriginIsolated === true;
const post = (type, body = {}) => self.postMessage({ type, ...body });

/** The browser's own name for its WebGPU adapter ("google swiftshader" here): wgpu leaves it empty on the web. */
async function adapterInfo() {
  const info = (await navigator.gpu.requestAdapter())?.info;
  if (!info) return { name: '', info: null };
  const fields = { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description, is_fallback_adapter: info.isFallbackAdapter ?? null };
  return { name: [info.vendor, info.architecture, info.description].filter(Boolean).join(' '), info: fields };
}

async function webgpu(wasm, images, { hidden, batch, cases, repeats }) {
  if (!('gpu' in navigator)) throw new Error('this browser has no WebGPU (headless Chromium needs --enable-unsafe-webgpu)');
  const adapter = await adapterInfo();
  post('status', { text: `Training ${repeats + 1} epochs of ${cases} cases on WebGPU (${adapter.name || 'unnamed adapter'}), then timing GEMMs…` });
  const report = await wasm.bench_webgpu(images, hidden, batch, cases, repeats);
  if (!report.adapter.name) {
    report.adapter = { ...report.adapter, name: adapter.name };
    report.backend = `GPU (wgpu: ${adapter.name})`;
  }
  return {
    ...report,
    cases_per_s: report.mnist.cases / report.gpu_epoch_s,
    adapter_info: adapter.info,
    note: 'SwiftShader (software WebGPU on the CPU) figures are for regression tracking only.',
  };
}

self.onmessage = async ({ data: settings }) => {
  try {
    post('status', { text: `Loading the ${isolated ? 'threaded' : 'single-threaded'} engine…` });
    const wasm = isolated ? await import('./pkg-mt/deepbelief.js') : await import('./pkg/deepbelief.js');
    await wasm.default();
    // Also for WebGPU: the CPU-side set-up (initial weights, data statistics) uses rayon.
    if (isolated) await wasm.initThreadPool(navigator.hardwareConcurrency || 2);
    const response = await fetch('./data/mnist-default-images-idx3-ubyte.gz');
    if (!response.ok) throw new Error(`mnist-default-images-idx3-ubyte.gz: HTTP ${response.status}`);
    const images = new Uint8Array(await response.arrayBuffer());
    let report;
    if (settings.backend === 'webgpu') report = await webgpu(wasm, images, settings);
    else {
      post('status', { text: `Training ${settings.repeats + 1} epochs…` });
      report = wasm.bench_cpu(images, settings.repeats);
    }
    post('result', { report: { ...report, isolated, hardware_concurrency: navigator.hardwareConcurrency } });
  } catch (error) {
    post('error', { message: String(error?.message || error) });
  }
};

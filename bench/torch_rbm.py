"""PyTorch fp32 peer of `deepbelief bench --backend gpu` (TF32 off): the same plain CD-1 loop
as the crate's GpuCdTrainer with CdConfig::hinton() (mean-field reconstruction, sampled hidden
states, momentum, L2 weight penalty on weights only, biases updated with momentum).

  python3 bench/torch_rbm.py --images train-10k-images-idx3-ubyte.gz --json

Prints one JSON line: torch_epoch_s (784-500, batches of 100, 60,000 cases: the 10k MNIST file
tiled 6x, the data resident on the GPU as uint8 and gathered per batch through a shuffled
index), and raina_4096x11008_s_per_million (batches of 192, random binary data, ~300 batches
timed). Each figure is the median of timed runs after a warm-up, with cuda.synchronize().
"""
import argparse, gzip, json, time
import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols)


class Rbm:
    def __init__(self, nv, nh, dev, gen):
        self.w = (torch.rand(nv, nh, device=dev, generator=gen) - 0.5) * (0.1 / (nv * nh) ** 0.25)
        self.b = torch.zeros(nv, device=dev)
        self.c = torch.zeros(nh, device=dev)
        self.vw = torch.zeros_like(self.w)
        self.vb = torch.zeros_like(self.b)
        self.vc = torch.zeros_like(self.c)

    def batch(self, v0, lr, momentum, weight_penalty, gen):
        rows = v0.shape[0]
        h0 = torch.sigmoid(torch.addmm(self.c, v0, self.w))
        hs = (torch.rand(h0.shape, device=h0.device, generator=gen) < h0).float()
        v1 = torch.sigmoid(torch.addmm(self.b, hs, self.w.t()))
        h1 = torch.sigmoid(torch.addmm(self.c, v1, self.w))
        grad = torch.mm(v0.t(), h0)
        grad.addmm_(v1.t(), h1, alpha=-1.0)
        grad.mul_(1.0 / rows)
        grad.add_(self.w, alpha=-weight_penalty)
        self.vw.mul_(momentum).add_(grad, alpha=lr)
        self.w.add_(self.vw)
        self.vb.mul_(momentum).add_(v0.mean(0) - v1.mean(0), alpha=lr)
        self.b.add_(self.vb)
        self.vc.mul_(momentum).add_(h0.mean(0) - h1.mean(0), alpha=lr)
        self.c.add_(self.vc)
        return ((v0 - v1) ** 2).sum()


def epoch(rbm, data_u8, batch, gen, lr=0.1, momentum=0.5, weight_penalty=0.0002, max_batches=None):
    n = data_u8.shape[0]
    order = torch.randperm(n, device=data_u8.device, generator=gen)
    err = torch.zeros((), device=data_u8.device)
    for k, start in enumerate(range(0, n, batch)):
        if max_batches is not None and k >= max_batches:
            break
        v0 = data_u8[order[start:start + batch]].float().div_(255.0)
        err += rbm.batch(v0, lr, momentum, weight_penalty, gen)
    return float(err)  # one read-back per epoch, as the crate


WARM_UP_SECONDS = 1.0


def timed(fn, runs):
    # Untimed calls for at least WARM_UP_SECONDS: the GPU's clock rises only after sustained
    # work (ours warms up the same way, bench::gpu_warm_up_seconds).
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    while time.perf_counter() - started < WARM_UP_SECONDS:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--images", default="../shared/data/mnist/train-10k-images-idx3-ubyte.gz")
    p.add_argument("--cases", type=int, default=60000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--raina-batches", type=int, default=300)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    images = load_idx(a.images)
    tiled = np.concatenate([images] * (a.cases // len(images) + 1))[: a.cases]
    data = torch.from_numpy(np.ascontiguousarray(tiled)).to(dev)
    rbm = Rbm(784, 500, dev, gen)
    epoch_s, runs = timed(lambda: epoch(rbm, data, 100, gen), a.repeats)

    nv, nh, batch = 4096, 11008, 192
    binary = (torch.rand(batch * a.raina_batches, nv, device=dev, generator=gen) < 0.15).to(torch.uint8) * 255
    big = Rbm(nv, nh, dev, gen)
    raina_s, raina_runs = timed(lambda: epoch(big, binary, batch, gen, lr=0.01), 3)
    per_million = raina_s / (batch * a.raina_batches) * 1e6

    x = torch.randn(8192, 8192, device=dev)
    mm_s, _ = timed(lambda: torch.mm(x, x), 10)
    out = {
        "torch_epoch_s": epoch_s,
        "torch_epoch_runs_s": runs,
        "raina_4096x11008_s_per_million": per_million,
        "raina_runs_s": raina_runs,
        "raina_batches": a.raina_batches,
        "sgemm_8192_tflops": 2 * 8192 ** 3 / mm_s / 1e12,
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    print(json.dumps(out) if a.json else out)


if __name__ == "__main__":
    main()

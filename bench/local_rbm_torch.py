#!/usr/bin/env python3
"""The PyTorch peer of `deepbelief bench --local-rbm --backend gpu` (issue 19; Raina, Madhavan &
Ng 2009, §5 and Table 3): CD-1 of the overlapping-patch RBM in float32 (TF32 off), written the
way PyTorch does it fastest: patches by `F.unfold`, the per-position products as `bmm` over the
positions, the reconstruction by `F.fold` (the sum of the patches covering each pixel).

The layer and the step are the crate's (src/local_rbm/train.rs, bench/local_rbm_numpy.py):
Gaussian visible units, 24x24 patches 8 apart, 192 binary hidden units per position, no weight
sharing, batches of 192, and one update per batch with everything our trainer does:

    X0 = unfold(v0)                     (P, B, 576)
    h0 = sigmoid(X0 @ W + c)            (P, B, 192)       one bmm
    s  = (u < h0), u ~ U[0, 1)
    v1 = fold(s @ W^T) + b              (B, S, S)         one bmm, identity (Gaussian)
    h1 = sigmoid(unfold(v1) @ W + c)                      one bmm
    gW = (X0^T h0 - X1^T h1) / B                          two bmm (baddbmm)
    vW = m vW + rate (gW - decay W),  W += vW;  biases likewise (no decay), and every hidden
    bias also steps by sparsity_penalty (target - mean h0).

Variants, each timed as --batches updates after --warmups, the batches already on the device
(--resident of them, cycled), the clock stopped when the device is done:
  eager        the step as plain torch calls;
  cuda-graph   the whole step captured once in a CUDA graph and replayed (CUDA only).

One JSON line per (size, variant): {peer, variant, image_size, positions, batch, hidden_per_patch,
weights, seconds_per_batch, seconds_per_million, repeats_s, reconstruction_error, device, torch,
tf32}. `seconds_per_million` = seconds per batch / 192 * 1e6 (Table 3's unit).

--check runs the step on a small layer on the CPU against bench/local_rbm_numpy.py's Layer.cd1
with the same uniforms (h0, v1, h1 and the gradient, relative 1e-4) and exits 1 on a mismatch.

usage: local_rbm_torch.py [--sizes 144,192] [--batches 20] [--warmups 3] [--variants eager,cuda-graph]
                          [--device cuda|cpu] [--check]
"""
import argparse
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
if hasattr(torch, "set_float32_matmul_precision"):
    torch.set_float32_matmul_precision("highest")

PATCH, STRIDE, HIDDEN, BATCH = 24, 8, 192, 192
# LocalCdSettings' defaults (src/local_rbm/train.rs) with the benchmark's learning rate
# (local_rbm::bench::BENCH_LEARNING_RATE: the default 0.02 diverges at this overlap).
RATE, MOMENTUM, DECAY, SPARSITY_PENALTY, SPARSITY_TARGET = 0.002, 0.5, 0.0002, 0.1, 0.05


class LocalLayer:
    """An untied local-patch layer over S x S grey images, its state on `device`."""

    def __init__(self, size, patch, stride, hidden, device, seed=1, weights=None, hidden_bias=None, visible_bias=None):
        self.size, self.patch, self.stride, self.hidden = size, patch, stride, hidden
        self.side = (size - patch) // stride + 1
        self.positions = self.side * self.side
        self.width = patch * patch
        g = torch.Generator(device="cpu").manual_seed(seed)
        P, W, H = self.positions, self.width, hidden
        as_device = lambda a: torch.as_tensor(np.asarray(a, np.float32), device=device)
        self.W = as_device(weights).reshape(P, W, H).clone() if weights is not None else (0.01 * torch.randn(P, W, H, generator=g)).to(device)
        self.c = as_device(hidden_bias).reshape(P, H).clone() if hidden_bias is not None else torch.zeros(P, H, device=device)
        self.b = as_device(visible_bias).reshape(size * size).clone() if visible_bias is not None else torch.zeros(size * size, device=device)
        self.vW, self.vc, self.vb = torch.zeros_like(self.W), torch.zeros_like(self.c), torch.zeros_like(self.b)

    def patches(self, v):
        """(B, S*S) -> (P, B, width), each patch's pixels row-major (the crate's layout)."""
        x = F.unfold(v.view(-1, 1, self.size, self.size), kernel_size=self.patch, stride=self.stride)  # (B, width, P)
        return x.permute(2, 0, 1)

    def up(self, x):
        return torch.sigmoid(torch.baddbmm(self.c.unsqueeze(1), x, self.W))

    def down(self, s):
        y = torch.bmm(s, self.W.transpose(1, 2))  # (P, B, width)
        folded = F.fold(y.permute(1, 2, 0), output_size=(self.size, self.size), kernel_size=self.patch, stride=self.stride)
        return folded.view(-1, self.size * self.size) + self.b

    def cd1(self, v0, uniforms):
        """h0, v1, h1 and the gradient (gW, gb, gc) of one batch; `uniforms` (P, B, hidden)."""
        B = v0.shape[0]
        x0 = self.patches(v0)
        h0 = self.up(x0)
        s = (uniforms < h0).to(h0.dtype)
        v1 = self.down(s)
        x1 = self.patches(v1)
        h1 = self.up(x1)
        gW = torch.baddbmm(torch.bmm(x0.transpose(1, 2), h0), x1.transpose(1, 2), h1, alpha=-1.0) / B
        gb = (v0 - v1).sum(0) / B
        gc = (h0 - h1).sum(1) / B
        return h0, v1, h1, gW, gb, gc

    def step(self, v0, uniforms, error):
        """One CD-1 update in place (capturable: no host syncs); adds sum (v0 - v1)^2 to `error`."""
        h0, v1, _, gW, gb, gc = self.cd1(v0, uniforms)
        self.vW.mul_(MOMENTUM).add_(RATE * (gW - DECAY * self.W))
        self.W.add_(self.vW)
        self.vb.mul_(MOMENTUM).add_(RATE * gb)
        self.b.add_(self.vb)
        self.vc.mul_(MOMENTUM).add_(RATE * gc)
        self.c.add_(self.vc + SPARSITY_PENALTY * (SPARSITY_TARGET - h0.mean(1)))
        error.add_(((v0 - v1) ** 2).sum())


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_variant(size, variant, args, device):
    layer = LocalLayer(size, PATCH, STRIDE, HIDDEN, device, seed=args.seed)
    g = torch.Generator(device="cpu").manual_seed(args.seed + 1)
    batches = [torch.randn(BATCH, size * size, generator=g).to(device) for _ in range(args.resident)]
    uniforms = torch.empty(layer.positions, BATCH, HIDDEN, device=device)
    error = torch.zeros((), device=device)
    static_v0 = batches[0].clone()
    setup_started = time.perf_counter()
    if variant == "cuda-graph":
        if device.type != "cuda":
            raise SystemExit("cuda-graph needs --device cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm the kernels and the allocator outside the graph
                uniforms.uniform_()
                layer.step(static_v0, uniforms, error)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            uniforms.uniform_()
            layer.step(static_v0, uniforms, error)

        def run(k):
            static_v0.copy_(batches[k % len(batches)])
            graph.replay()
    else:
        def run(k):
            uniforms.uniform_()
            layer.step(batches[k % len(batches)], uniforms, error)
    sync(device)
    setup = time.perf_counter() - setup_started
    # At least --warmups batches and at least --warm-up-seconds of them back to back: the
    # GPU's clock governor raises the clock only after sustained work (ours does the same).
    warm_started, k = time.perf_counter(), 0
    while k < args.warmups or time.perf_counter() - warm_started < args.warm_up_seconds:
        for _ in range(4):
            run(k)
            k += 1
        sync(device)
    repeats = []
    for _ in range(args.repeats):
        error.zero_()
        sync(device)
        started = time.perf_counter()
        for k in range(args.batches):
            run(k)
        sync(device)
        repeats.append((time.perf_counter() - started) / args.batches)
    per_batch = min(repeats)
    recon = float(error.item()) / (args.batches * BATCH * size * size)
    return {
        "peer": "torch", "variant": variant, "image_size": size, "positions": layer.positions, "batch": BATCH,
        "hidden_per_patch": HIDDEN, "weights": layer.positions * layer.width * HIDDEN,
        "seconds_per_batch": per_batch, "seconds_per_million": per_batch / BATCH * 1e6, "repeats_s": repeats,
        "setup_seconds": setup, "reconstruction_error": recon, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "tf32": False,
    }


def check():
    """The step against the NumPy peer's on a small layer, with the same uniforms."""
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from local_rbm_numpy import Layer

    size, patch, stride, hidden, rows = 14, 6, 2, 5, 7
    rng = np.random.default_rng(3)
    side = (size - patch) // stride + 1
    P = side * side
    weights = rng.normal(0, 0.3, P * patch * patch * hidden).astype(np.float32)
    c = rng.normal(0, 0.5, P * hidden).astype(np.float32)
    b = rng.normal(0, 0.5, size * size).astype(np.float32)
    v0 = rng.standard_normal((rows, size * size)).astype(np.float32)
    u = rng.random((rows, P * hidden), dtype=np.float32)
    g = {"rows": size, "cols": size, "channels": 1, "patch": patch, "stride": stride, "hidden_per_patch": hidden, "tied": False}
    ref = Layer(g, weights, c, b, True).cd1(v0, u)
    layer = LocalLayer(size, patch, stride, hidden, torch.device("cpu"), weights=weights, hidden_bias=c, visible_bias=b)
    # NumPy's uniforms are (rows, P * hidden); ours (P, rows, hidden).
    uniforms = torch.as_tensor(u).view(rows, P, hidden).permute(1, 0, 2)
    h0, v1, h1, gW, gb, gc = layer.cd1(torch.as_tensor(v0), uniforms)
    ours = [h0.permute(1, 0, 2).reshape(rows, -1), v1, h1.permute(1, 0, 2).reshape(rows, -1), gW.reshape(-1), gb, gc.reshape(-1)]
    worst = 0.0
    for name, a, r in zip(["h0", "v1", "h1", "gradient_weights", "gradient_visible_bias", "gradient_hidden_bias"], ours, ref):
        r = np.asarray(r, np.float32).reshape(-1)
        gap = float(np.abs(a.numpy().reshape(-1) - r).max()) / max(1.0, float(np.abs(r).max()))
        worst = max(worst, gap)
        print(f"{name}: max |torch - numpy| / scale = {gap:.2e}", file=sys.stderr)
    print(json.dumps({"check": "torch vs numpy", "worst_relative_difference": worst, "agree": worst <= 1e-4}))
    return 0 if worst <= 1e-4 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="144,192")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--warm-up-seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resident", type=int, default=4, help="distinct batches on the device, cycled")
    parser.add_argument("--variants", default="eager,cuda-graph")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        return check()
    device = torch.device(args.device)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        if (size - PATCH) % STRIDE:
            raise SystemExit(f"--sizes: {size} - {PATCH} is not a multiple of {STRIDE}")
        for variant in [v for v in args.variants.split(",") if v]:
            if variant == "cuda-graph" and device.type != "cuda":
                continue
            print(json.dumps(time_variant(size, variant, args, device)), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

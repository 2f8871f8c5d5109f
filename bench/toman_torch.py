#!/usr/bin/env python3
"""The PyTorch peer of `deepbelief mlp --backend gpu` (issue 21): Toman's all-sigmoid
784-25-15-10 MLP trained full batch on the 10,000 MNIST test digits by his per-weight adaptive
step sizes with robust training (best weights kept; error >= best x growth restores them,
halves the rates and clears the memories), the same rule as src/supervised/adaptive_step.rs
and shaders/mlp_adaptive.wgsl, written in torch ops (docs/TOMAN.md):

  E = sqrt(sum (o - t)^2 / (N K)) / 2 (RMS/2; a non-finite E counts as N K)
  held when E <= target (> 0); else robust: E < best -> best := (E, w), step;
  E >= best * growth -> rollback (no step); else step
  step, per weight, d = -g (g the gradient of sum (o - t)^2 / (2N)):
  rate *= up if d and the last d have the same strict sign else down, capped at max_step;
  dm = d + momentum * last dm; w += rate * dm (a non-finite new weight is not written: its
  memories cleared, its rate x robust_factor)

The decision is taken on the device (torch.where on 0-d tensors): nothing is read back during
the run; the errors of every epoch are kept in a device tensor and read once at the end.

Starting weights: a deepbelief mlp.json (--start, written by `deepbelief mlp --epochs 0`), so
both sides start from the same net; else uniform in +-0.1 from torch's generator.

Variants (each timed over --epochs epochs after --warmups untimed ones, from the same start):
  eager   the epoch as torch ops, launched one by one
  graph   one epoch captured in a CUDA graph and replayed (CUDA only): the strongest peer

Precision: float32, TF32 off (the crate's kernels are plain f32).

Prints one JSON line per variant: {variant, device, epochs, ms_per_epoch, seconds, errors_at
(epochs 1, 100, 265, last), rollbacks, final_error}.

usage: toman_torch.py --images IDX --labels IDX [--start mlp.json] [--epochs 265]
       [--up 1.3 --down 0.7] [--device cuda|cpu] [--variants eager,graph]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idx import load_images, load_labels  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
if hasattr(torch, "set_float32_matmul_precision"):
    torch.set_float32_matmul_precision("highest")


def start_weights(args, sizes, device):
    """Per layer (W n_in x n_out, b n_out) as float32 tensors."""
    if args.start:
        net = json.load(open(args.start))["network"]
        layers = []
        for layer in net["layers"]:
            w = torch.tensor(layer["weights"], dtype=torch.float32).reshape(layer["n_in"], layer["n_out"])
            layers.append((w, torch.tensor(layer["bias"], dtype=torch.float32)))
        got = [layers[0][0].shape[0]] + [w.shape[1] for w, _ in layers]
        if got != sizes:
            sys.exit(f"{args.start}: the net is {got}, expected {sizes}")
        return [(w.to(device), b.to(device)) for w, b in layers]
    g = torch.Generator().manual_seed(args.seed)
    return [((torch.rand(a, b, generator=g) * 0.2 - 0.1).to(device), (torch.rand(b, generator=g) * 0.2 - 0.1).to(device)) for a, b in zip(sizes, sizes[1:])]


class Trainer:
    """The state of one run: the flat weights (layers as views), best weights, rates, memories."""

    def __init__(self, layers, x, t, args):
        dev = x.device
        self.x, self.t = x, t
        self.n, self.k = x.shape[0], t.shape[1]
        self.shapes = [(w.shape[0], w.shape[1]) for w, _ in layers]
        total = sum(a * b + b for a, b in self.shapes)
        self.w = torch.empty(total, device=dev)
        self.views = []
        at = 0
        for (w, b), (a, c) in zip(layers, self.shapes):
            self.w[at:at + a * c] = w.reshape(-1)
            wv = self.w[at:at + a * c].view(a, c)
            at += a * c
            self.w[at:at + c] = b
            bv = self.w[at:at + c]
            at += c
            self.views.append((wv, bv))
        self.g = torch.zeros_like(self.w)
        self.gviews = []
        at = 0
        for a, c in self.shapes:
            self.gviews.append((self.g[at:at + a * c].view(a, c), self.g[at:at + a * c + c][a * c:]))
            at += a * c + c
        self.best_w = torch.zeros_like(self.w)
        self.rate = torch.full_like(self.w, args.initial_rate)
        self.last_d = torch.zeros_like(self.w)
        self.last_dm = torch.zeros_like(self.w)
        self.best = torch.tensor(float("inf"), device=dev)
        self.errors = torch.zeros(args.epochs + args.warmups + 1, device=dev)
        self.rollbacks = torch.zeros((), device=dev)
        self.epoch = torch.zeros((), dtype=torch.long, device=dev)
        self.a = args
        c = lambda v: torch.tensor(float(v), device=dev)
        self.up, self.down, self.max_step, self.momentum = c(args.up), c(args.down), c(args.max_step), c(args.momentum)
        self.growth, self.factor, self.target, self.count = c(args.growth), c(args.robust_factor), c(args.target), c(self.n * self.k)

    def step(self):
        """One epoch, no host synchronisation."""
        acts = [self.x]
        for w, b in self.views:
            acts.append(torch.sigmoid(torch.addmm(b, acts[-1], w)))
        o = acts[-1]
        d = o - self.t
        e = torch.sqrt((d * d).sum() / self.count) / 2
        e = torch.where(torch.isfinite(e), e, self.count)
        delta = d * o * (1 - o)
        inv_n = 1.0 / self.n
        for k in range(len(self.views) - 1, -1, -1):
            gw, gb = self.gviews[k]
            torch.mm(acts[k].t(), delta, out=gw)
            gw.mul_(inv_n)
            torch.sum(delta, 0, out=gb)
            gb.mul_(inv_n)
            if k > 0:
                a = acts[k]
                delta = (delta @ self.views[k][0].t()) * a * (1 - a)
        self.errors.index_copy_(0, self.epoch.view(1), e.view(1))
        self.epoch += 1
        held = (self.target > 0) & (e <= self.target)
        if self.a.robust:
            better = (e < self.best) & ~held
            roll = ~better & (e >= self.best * self.growth) & ~held
        else:
            better = torch.zeros((), dtype=torch.bool, device=e.device)
            roll = better
        stepping = ~held & ~roll
        self.best.copy_(torch.where(better, e, self.best))
        self.best_w.copy_(torch.where(better, self.w, self.best_w))
        self.rollbacks += roll.float()
        # The step (computed everywhere, applied where `stepping`).
        dd = -self.g
        same = ((self.last_d > 0) & (dd > 0)) | ((self.last_d < 0) & (dd < 0))
        rate = torch.minimum(self.rate * torch.where(same, self.up, self.down), self.max_step)
        dm = dd + self.momentum * self.last_dm
        nw = self.w + rate * dm
        ok = torch.isfinite(nw)
        kept_rate = torch.where(ok, rate, rate * self.factor if self.a.robust else rate)
        new_w = torch.where(ok, nw, self.w)
        new_d = torch.where(ok, dd, torch.zeros_like(dd))
        new_dm = torch.where(ok, dm, torch.zeros_like(dm))
        zero = torch.zeros_like(dd)
        self.w.copy_(torch.where(roll, self.best_w, torch.where(stepping, new_w, self.w)))
        self.rate.copy_(torch.where(roll, self.rate * self.factor, torch.where(stepping, kept_rate, self.rate)))
        self.last_d.copy_(torch.where(roll, zero, torch.where(stepping, new_d, self.last_d)))
        self.last_dm.copy_(torch.where(roll, zero, torch.where(stepping, new_dm, self.last_dm)))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run(variant, layers, x, t, args, device):
    tr = Trainer(layers, x, t, args)
    if variant == "graph":
        # Warm up on a side stream (as CUDA graph capture asks), then capture one epoch. The
        # warm-up epochs move the state: start again from the same weights after capture.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                tr.step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            tr.step()
        fresh = Trainer(layers, x, t, args)
        for name in ("w", "best_w", "rate", "last_d", "last_dm", "best", "errors", "rollbacks", "epoch"):
            getattr(tr, name).copy_(getattr(fresh, name))
        go = graph.replay
    else:
        go = tr.step
    for _ in range(args.warmups):
        go()
    sync(device)
    warm = int(tr.epoch.item())
    start = time.perf_counter()
    for _ in range(args.epochs):
        go()
    sync(device)
    seconds = time.perf_counter() - start
    errors = tr.errors[warm:warm + args.epochs].cpu().numpy().astype(float)
    if args.warmups:
        # Errors counted from the first timed epoch: the warm-up epochs trained already.
        note = f"errors from epoch {warm + 1} of the run (after {args.warmups} warm-up epochs)"
    else:
        note = "errors from the start"
    at = {e: float(errors[e - 1]) for e in (1, 100, 265, args.epochs) if e <= len(errors)}
    return {
        "variant": variant,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "epochs": args.epochs,
        "warmups": args.warmups,
        "ms_per_epoch": 1000 * seconds / args.epochs,
        "seconds": seconds,
        "errors_at": sorted(at.items()),
        "rollbacks": int(tr.rollbacks.item()),
        "final_error": float(errors[-1]),
        "note": note,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", required=True)
    p.add_argument("--labels", required=True)
    p.add_argument("--start", help="a deepbelief mlp.json: the starting weights")
    p.add_argument("--layers", default="784,25,15,10")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--epochs", type=int, default=265)
    p.add_argument("--warmups", type=int, default=0)
    p.add_argument("--up", type=float, default=1.3)
    p.add_argument("--down", type=float, default=0.7)
    p.add_argument("--initial-rate", type=float, default=0.5)
    p.add_argument("--max-step", type=float, default=10.0)
    p.add_argument("--momentum", type=float, default=0.7)
    p.add_argument("--growth", type=float, default=1.02)
    p.add_argument("--robust-factor", type=float, default=0.5)
    p.add_argument("--no-robust", dest="robust", action="store_false")
    p.add_argument("--target", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--variants", default="eager,graph")
    args = p.parse_args()
    device = torch.device(args.device)
    sizes = [int(s) for s in args.layers.split(",")]
    images = load_images(args.images)
    labels = load_labels(args.labels)
    if args.limit:
        images, labels = images[: args.limit], labels[: args.limit]
    targets = np.zeros((len(labels), sizes[-1]), dtype=np.float32)
    targets[np.arange(len(labels)), labels] = 1.0
    x = torch.from_numpy(images).to(device)
    t = torch.from_numpy(targets).to(device)
    layers = start_weights(args, sizes, device)
    for variant in args.variants.split(","):
        if variant == "graph" and device.type != "cuda":
            print(json.dumps({"variant": "graph", "skipped": "CUDA graphs need a CUDA device"}), flush=True)
            continue
        print(json.dumps(run(variant, layers, x, t, args, device)), flush=True)


if __name__ == "__main__":
    main()

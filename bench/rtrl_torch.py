#!/usr/bin/env python3
"""The PyTorch peer of `deepbelief bench --rtrl` (issue 20): Moore's (2009) real-time recurrent
learning on his n-bit adder (the Elman net 2n-2n-n, tanh units, biases), one online step at a
time, in torch ops on CUDA, written as fast as PyTorch does it in float32 (TF32 off).

The step is the crate's (`recurrent::rtrl`, bench/rtrl_numpy.py) with the back-propagation
shortcut: the output layer's blocks (w[2<-1], b[2]) by back-propagation within the step, the
hidden layer's (w[1<-0], mu[1<-1], b[1]) by sensitivity tensors. Their hidden-layer tensors sit
side by side in one 2n x P matrix (P = 2n*2n + 2n*2n + 2n), so the update is one product a
step over every block at once, and the gradient a row times it:

    X1 = sigma'(net1) * (M @ X1_prev + Kronecker terms),
    dE/dw = (y - d) @ (sigma'(net2) * W2 @ X1) = ((y - d) * sigma'(net2)) @ W2 @ X1,
    w -= rate * dE/dw  (and the shortcut's outer products).

The output's tensor is folded into the gradient (the product taken row first), as ours on the
device does (gpu::recurrent_step; the CPU reference and NumPy form it, as Moore does).

Weights (Philox, InitialWeights, scale 2) and examples (Philox, DataSample) are the crate's,
from bench/rtrl_numpy.py, so the mean E of the timed steps equals `bench --rtrl`'s to float32
rounding (it is printed to be compared).

Variants, each timed as --repeats runs of --steps online steps after --warmups (the examples
already on the device, the E's summed there and read once per run; the time of a run ends when
the device is done):
  eager        the step as plain torch calls;
  cuda-graph   two steps (both parities of the tensors' double buffer) captured once in a CUDA
               graph and replayed; the strongest peer (CUDA only).

One JSON line per (n, variant): {peer, variant, bits, layers, steps, microseconds_per_step,
microseconds_per_step_min, repeats_us, mean_error, device, torch}. --device cpu runs the eager
variant on the CPU (a smoke test where there is no CUDA).

usage: rtrl_torch.py [--sizes 16,32,64,96,128] [--steps 20] [--repeats 3] [--device cuda|cpu]
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

from rtrl_numpy import example, initialise, preset_graph, blocks_of
from autoencoder_numpy import check_philox

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
if hasattr(torch, "set_float32_matmul_precision"):
    torch.set_float32_matmul_precision("highest")


class ElmanRtrl:
    """RTRL with the shortcut on the Elman net, all state on `device`."""

    def __init__(self, n, seed, device):
        graph = preset_graph("elman", 2 * n, 2 * n, n)
        params = initialise(graph, seed, 2.0)
        blocks, _ = blocks_of(graph)
        take = lambda b: torch.tensor(params[b["offset"]:b["offset"] + b["rows"] * b["cols"]].reshape(b["rows"], b["cols"]), device=device)
        # blocks_of order: w[1<-0], w[2<-1], mu[1<-1], b[1], b[2].
        self.W1, self.W2, self.M, b1, b2 = (take(b) for b in blocks)
        self.b1, self.b2 = b1[:, 0].contiguous(), b2[:, 0].contiguous()
        self.inputs, self.hidden, self.outputs = 2 * n, 2 * n, n
        h, i = self.hidden, self.inputs
        self.widths = (h * i, h * h, h)  # P of w[1<-0], mu[1<-1], b[1]
        p = sum(self.widths)
        zeros = lambda *s: torch.zeros(*s, device=device)
        self.X1 = [zeros(h, p), zeros(h, p)]  # the hidden tensors' double buffer
        self.a1 = [zeros(h), zeros(h)]
        self.error_sum = zeros(())
        self.rows = torch.arange(h, device=device)

    def step(self, x, d, rate, parity):
        """One online step; the current tensors and activations go to slot `parity`."""
        X1_prev, a1_prev = self.X1[1 - parity], self.a1[1 - parity]
        a1 = torch.tanh(self.W1 @ x + self.M @ a1_prev + self.b1)
        d1 = 1 - a1 * a1
        y = torch.tanh(self.W2 @ a1 + self.b2)
        d2 = 1 - y * y
        g = y - d
        self.error_sum += 0.5 * torch.dot(g, g)
        # The hidden tensors: mu @ X1_prev for every block at once (into this parity's buffer),
        # the Kronecker terms, sigma'.
        X1 = torch.matmul(self.M, X1_prev, out=self.X1[parity])
        h = self.hidden
        wi, wm, _ = self.widths
        # w[1<-0]: row s gains x at columns s*I .. s*I + I; mu[1<-1]: a1_prev at s*H ..; b[1]: 1 at s.
        X1[:, :wi].view(h, h, self.inputs)[self.rows, self.rows, :] += x
        X1[:, wi:wi + wm].view(h, h, h)[self.rows, self.rows, :] += a1_prev
        X1[:, wi + wm:][self.rows, self.rows] += 1.0
        X1 *= d1[:, None]
        self.a1[parity].copy_(a1)
        # The gradient (y - d) @ (sigma'(net2) * W2 @ X1), the output's tensor folded as ours
        # on the device (gpu::recurrent_step): a row times X1 instead of W2 times X1.
        grad = ((g * d2) @ self.W2) @ X1
        # The shortcut: delta2 = (y - d) * sigma'(net2); dE/dW2 = delta2 a1^T, dE/db2 = delta2.
        delta2 = g * d2
        self.W2 -= rate * torch.outer(delta2, a1)
        self.b2 -= rate * delta2
        self.W1 -= rate * grad[:wi].view(h, self.inputs)
        self.M -= rate * grad[wi:wi + wm].view(h, h)
        self.b1 -= rate * grad[wi + wm:]


def staged_examples(n, seed, start, count, device):
    task = {"task": "add", "bits": n}
    pairs = [example(task, seed, start + k) for k in range(count)]
    xs = torch.tensor(np.stack([p[0] for p in pairs]), device=device)
    ds = torch.tensor(np.stack([p[1] for p in pairs]), device=device)
    return xs, ds


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def warm_clock(args, n, device):
    """Steps of a scratch net, back to back, for --warm-up-seconds: the GPU's clock rises only
    after sustained work (ours warms up the same way, bench::gpu_warm_up_seconds)."""
    if device.type != "cuda" or args.warm_up_seconds <= 0:
        return
    with torch.no_grad():
        net = ElmanRtrl(n, args.seed + 1, device)
        xs, ds = staged_examples(n, args.seed + 1, 0, 16, device)
        started, k = time.perf_counter(), 0
        while time.perf_counter() - started < args.warm_up_seconds:
            for _ in range(16):
                net.step(xs[k % 16], ds[k % 16], args.rate, k % 2)
                k += 1
            sync(device)


def run_eager(args, n, device):
    warm_clock(args, n, device)
    with torch.no_grad():
        net = ElmanRtrl(n, args.seed, device)
        position, parity = 0, 0
        xs, ds = staged_examples(n, args.seed, position, args.warmups, device)
        for k in range(args.warmups):
            net.step(xs[k], ds[k], args.rate, parity)
            parity = 1 - parity
        position += args.warmups
        per_step, error = [], 0.0
        for _ in range(args.repeats):
            xs, ds = staged_examples(n, args.seed, position, args.steps, device)
            position += args.steps
            net.error_sum.zero_()
            sync(device)
            start = time.perf_counter()
            for k in range(args.steps):
                net.step(xs[k], ds[k], args.rate, parity)
                parity = 1 - parity
            error += net.error_sum.item()
            per_step.append(1e6 * (time.perf_counter() - start) / args.steps)
    return per_step, error


def run_graph(args, n, device):
    """Two steps (both parities) captured in one CUDA graph; --steps rounded up to even."""
    steps = args.steps + args.steps % 2
    warm_clock(args, n, device)
    with torch.no_grad():
        net = ElmanRtrl(n, args.seed, device)
        x_in = torch.zeros(2, 2 * n, device=device)
        d_in = torch.zeros(2, n, device=device)
        # The warm-up steps as eager's (the same examples, so the timed steps are the same
        # steps), on a side stream as torch.cuda.graphs asks.
        xs, ds = staged_examples(n, args.seed, 0, args.warmups, device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for k in range(args.warmups):
                net.step(xs[k], ds[k], args.rate, k % 2)
        torch.cuda.current_stream().wait_stream(side)
        # Capturing runs nothing; the weights and state stay those after the warm-up.
        first = args.warmups % 2
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            net.step(x_in[0], d_in[0], args.rate, first)
            net.step(x_in[1], d_in[1], args.rate, 1 - first)
        position = args.warmups
        per_step, error = [], 0.0
        for _ in range(args.repeats):
            xs, ds = staged_examples(n, args.seed, position, steps, device)
            position += steps
            net.error_sum.zero_()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for k in range(0, steps, 2):
                x_in.copy_(xs[k:k + 2])
                d_in.copy_(ds[k:k + 2])
                graph.replay()
            error += net.error_sum.item()
            per_step.append(1e6 * (time.perf_counter() - start) / steps)
    return per_step, error, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=[16, 32, 64, 96, 128])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--warm-up-seconds", type=float, default=1.0)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--variants", default="eager,cuda-graph")
    args = parser.parse_args()
    check_philox()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    variants = [v for v in args.variants.split(",") if v != "cuda-graph" or device.type == "cuda"]
    for n in args.sizes:
        for variant in variants:
            if variant == "eager":
                per_step, error = run_eager(args, n, device)
                steps = args.steps
            else:
                per_step, error, steps = run_graph(args, n, device)
            row = {"peer": "torch", "variant": variant, "bits": n, "preset": "elman", "mode": "shortcut", "layers": [2 * n, 2 * n, n], "steps": steps,
                   "microseconds_per_step": statistics.median(per_step), "microseconds_per_step_min": min(per_step), "repeats_us": per_step,
                   "mean_error": error / (steps * args.repeats), "device": name, "torch": torch.__version__}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())

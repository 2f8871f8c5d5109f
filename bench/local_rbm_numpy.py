#!/usr/bin/env python3
"""The NumPy peer of `deepbelief bench --local-rbm` (issue 19; Raina, Madhavan & Ng 2009, §5 and
Table 3): CD-1 for the overlapping-patch RBM with exactly the crate's algorithm
(src/local_rbm/passes.rs, train.rs), in float32:

- patches: each case's p x p x C windows `stride` apart (sliding_window_view, no copy until the
  reshape), flattened (row, column, channel) as the crate's patch layout;
- up: h = sigmoid(c + X_p W_p) per position p (einsum 'rpi,pij->rpj'; tied: one matmul with the
  shared bank);
- sample: s = (u < h0), u the crate's Philox uniforms (read from the --check file; the timing
  mode draws NumPy's own);
- down: Y_p = H_p W_p^T per position, folded back onto the image (each position adds its window)
  plus the per-pixel visible bias; identity for Gaussian visible units, sigmoid for binary;
- gradient: (X0_p^T H0_p - X1_p^T H1_p) / rows per position (tied: summed over positions),
  visible bias mean(v0 - v1), hidden bias mean(h0 - h1) (tied: summed over positions).

Modes:
  --check FILE   recompute the cases `deepbelief bench --local-rbm --local-dump FILE` wrote and
                 compare h0, v1, h1 and the gradient with ours (relative 1e-4); exit 1 on a
                 mismatch.
  (default)      time --batches CD-1 updates of batch 192 (after one warm-up) for each of --sizes
                 (48,144,192; 24x24 patches 8 apart, 192 hidden units each, Gaussian visible
                 units) and print seconds per million examples, one JSON line per size.
"""

import argparse
import json
import sys
import time

import numpy as np

PATCH, STRIDE, HIDDEN, BATCH = 24, 8, 192, 192


def sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


class Layer:
    def __init__(self, g, weights, hidden_bias, visible_bias, gaussian):
        self.rows_img, self.cols_img, self.ch = g["rows"], g["cols"], g["channels"]
        self.p, self.s, self.u, self.tied = g["patch"], g["stride"], g["hidden_per_patch"], g["tied"]
        self.pr = (self.rows_img - self.p) // self.s + 1
        self.pc = (self.cols_img - self.p) // self.s + 1
        self.positions = self.pr * self.pc
        self.width = self.p * self.p * self.ch
        banks = 1 if self.tied else self.positions
        self.w = np.asarray(weights, np.float32).reshape(banks, self.width, self.u)
        self.c = np.asarray(hidden_bias, np.float32).reshape(banks, self.u)
        self.b = np.asarray(visible_bias, np.float32)
        self.gaussian = gaussian

    def patches(self, v):
        rows = v.shape[0]
        img = v.reshape(rows, self.rows_img, self.cols_img, self.ch)
        win = np.lib.stride_tricks.sliding_window_view(img, (self.p, self.p), axis=(1, 2))[:, :: self.s, :: self.s]
        # (rows, pr, pc, ch, p, p) -> (rows, positions, p, p, ch)
        return np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(rows, self.positions, self.width)

    def up(self, x):
        if self.tied:
            h = x @ self.w[0] + self.c[0]
        else:
            h = np.einsum("rpi,pij->rpj", x, self.w, optimize=True) + self.c[None]
        return sigmoid(h)

    def down(self, h):
        rows = h.shape[0]
        if self.tied:
            y = h @ self.w[0].T
        else:
            y = np.einsum("rpj,pij->rpi", h, self.w, optimize=True)
        y = y.reshape(rows, self.positions, self.p, self.p, self.ch)
        out = np.zeros((rows, self.rows_img, self.cols_img, self.ch), np.float32)
        for q in range(self.positions):
            r0, c0 = (q // self.pc) * self.s, (q % self.pc) * self.s
            out[:, r0 : r0 + self.p, c0 : c0 + self.p, :] += y[:, q]
        v = out.reshape(rows, -1) + self.b
        return v if self.gaussian else sigmoid(v)

    def cd1(self, v0, uniforms):
        rows = v0.shape[0]
        x0 = self.patches(v0)
        h0 = self.up(x0)
        sample = (uniforms.reshape(h0.shape) < h0).astype(np.float32)
        v1 = self.down(sample)
        x1 = self.patches(v1)
        h1 = self.up(x1)
        gw = (np.einsum("rpi,rpj->pij", x0, h0, optimize=True) - np.einsum("rpi,rpj->pij", x1, h1, optimize=True)) / np.float32(rows)
        gc = (h0 - h1).sum(axis=0) / np.float32(rows)
        if self.tied:
            gw, gc = gw.sum(axis=0, keepdims=True), gc.sum(axis=0, keepdims=True)
        gb = (v0 - v1).mean(axis=0)
        return h0.reshape(rows, -1), v1, h1.reshape(rows, -1), gw.reshape(-1), gb, gc.reshape(-1)


def check(path):
    data = json.load(open(path))
    worst_all = 0.0
    for k, case in enumerate(data["cases"]):
        layer = Layer(case["geometry"], case["weights"], case["hidden_bias"], case["visible_bias"], case["visible_units"] == "gaussian")
        rows = case["rows"]
        v0 = np.asarray(case["batch"], np.float32).reshape(rows, -1)
        h0, v1, h1, gw, gb, gc = layer.cd1(v0, np.asarray(case["uniforms"], np.float32))
        for name, ours, theirs in [("h0", h0, case["h0"]), ("v1", v1, case["v1"]), ("h1", h1, case["h1"]), ("gradient_weights", gw, case["gradient_weights"]), ("gradient_visible_bias", gb, case["gradient_visible_bias"]), ("gradient_hidden_bias", gc, case["gradient_hidden_bias"])]:
            theirs = np.asarray(theirs, np.float32).reshape(ours.shape)
            scale = max(1.0, float(np.abs(theirs).max()))
            worst = float(np.abs(ours - theirs).max()) / scale
            worst_all = max(worst_all, worst)
            status = "ok" if worst <= 1e-4 else "MISMATCH"
            print(f"case {k} ({'tied' if layer.tied else 'local'}, {case['visible_units']}): {name} max |numpy - deepbelief| / scale = {worst:.2e} {status}")
    print(json.dumps({"check": path, "worst_relative_difference": worst_all, "agree": worst_all <= 1e-4}))
    return 0 if worst_all <= 1e-4 else 1


def time_sizes(sizes, batches, seed):
    rng = np.random.default_rng(seed)
    for size in sizes:
        g = {"rows": size, "cols": size, "channels": 1, "patch": PATCH, "stride": STRIDE, "hidden_per_patch": HIDDEN, "tied": False}
        positions = ((size - PATCH) // STRIDE + 1) ** 2
        layer = Layer(g, rng.normal(0, 0.01, positions * PATCH * PATCH * HIDDEN).astype(np.float32), np.zeros(positions * HIDDEN, np.float32), np.zeros(size * size, np.float32), True)
        v0 = rng.standard_normal((BATCH, size * size)).astype(np.float32)
        seconds = []
        for b in range(batches + 1):
            u = rng.random((BATCH, positions * HIDDEN), dtype=np.float32)
            started = time.perf_counter()
            _, _, _, gw, gb, gc = layer.cd1(v0, u)
            # The update itself (momentum step over the weights), as the crate's trainer does.
            layer.w -= np.float32(0.01) * gw.reshape(layer.w.shape)
            if b > 0:
                seconds.append(time.perf_counter() - started)
        median = sorted(seconds)[len(seconds) // 2]
        print(json.dumps({"image_size": size, "positions": positions, "batch": BATCH, "seconds": seconds, "seconds_median": median, "seconds_per_million": median / BATCH * 1e6, "numpy": np.__version__}))
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", metavar="FILE")
    parser.add_argument("--sizes", default="48,144,192")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.check:
        sys.exit(check(args.check))
    time_sizes([int(s) for s in args.sizes.split(",")], args.batches, args.seed)


if __name__ == "__main__":
    main()

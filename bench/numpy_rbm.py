#!/usr/bin/env python3
"""The CD-1 loop of `deepbelief::bench::bench_cpu_epoch` in NumPy float32 (BLAS threads as
NumPy sets them up): a 784-500 RBM, batches of 100, sigmoid units, a Bernoulli sample of
the hidden units, a mean-field reconstruction, the hidden probabilities of the
reconstruction, and a momentum update with weight decay (Hinton's recipe: learning rate 0.1,
momentum 0.5, weight cost 0.0002). Times one epoch over all the cases: one warm-up epoch on
a 1,000-case subset, then the median of 3 full epochs. Prints JSON.

usage: numpy_rbm.py IMAGES.idx3-ubyte[.gz] [--hidden 500] [--batch 100] [--repeats 3]
"""
import argparse
import json
import statistics
import time

import numpy as np

from idx import blas_threads, load_images

LEARNING_RATE = np.float32(0.1)
MOMENTUM = np.float32(0.5)
WEIGHT_COST = np.float32(0.0002)


def sigmoid(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


class Rbm:
    def __init__(self, data, n_hidden, rng):
        n_visible = data.shape[1]
        means = data.mean(axis=0).clip(1e-3, 1 - 1e-3)
        self.weights = (rng.standard_normal((n_visible, n_hidden), dtype=np.float32) * np.float32(0.01))
        self.visible_bias = np.log(means / (1 - means)).astype(np.float32)
        self.hidden_bias = np.zeros(n_hidden, dtype=np.float32)
        self.weights_velocity = np.zeros_like(self.weights)
        self.visible_velocity = np.zeros_like(self.visible_bias)
        self.hidden_velocity = np.zeros_like(self.hidden_bias)

    def train_epoch(self, data, batch_size, rng):
        order = rng.permutation(data.shape[0])
        squared_error = 0.0
        for start in range(0, len(order), batch_size):
            v0 = data[order[start : start + batch_size]]
            rows = np.float32(v0.shape[0])
            h0 = sigmoid(v0 @ self.weights + self.hidden_bias)
            h0_sample = (rng.random(h0.shape, dtype=np.float32) < h0).astype(np.float32)
            v1 = sigmoid(h0_sample @ self.weights.T + self.visible_bias)
            h1 = sigmoid(v1 @ self.weights + self.hidden_bias)
            squared_error += float(np.square(v0 - v1).sum())

            gradient = (v0.T @ h0 - v1.T @ h1) / rows
            self.weights_velocity *= MOMENTUM
            self.weights_velocity += LEARNING_RATE * (gradient - WEIGHT_COST * self.weights)
            self.weights += self.weights_velocity
            self.visible_velocity = MOMENTUM * self.visible_velocity + LEARNING_RATE * (v0.mean(axis=0) - v1.mean(axis=0))
            self.visible_bias += self.visible_velocity
            self.hidden_velocity = MOMENTUM * self.hidden_velocity + LEARNING_RATE * (h0.mean(axis=0) - h1.mean(axis=0))
            self.hidden_bias += self.hidden_velocity
        return squared_error / data.size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images")
    parser.add_argument("--hidden", type=int, default=500)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    data = load_images(args.images)
    rng = np.random.default_rng(1)
    rbm = Rbm(data, args.hidden, rng)
    rbm.train_epoch(data[:1000], args.batch, rng)  # warm-up: BLAS threads, allocations
    runs, errors = [], []
    for _ in range(max(args.repeats, 1)):
        started = time.perf_counter()
        errors.append(rbm.train_epoch(data, args.batch, rng))
        runs.append(time.perf_counter() - started)
    print(json.dumps({
        "numpy_epoch_s": statistics.median(runs),
        "epoch_runs_s": runs,
        "reconstruction_error": errors[-1],
        "threads": blas_threads(),
        "cases": int(data.shape[0]),
        "numpy": np.__version__,
    }))


if __name__ == "__main__":
    main()

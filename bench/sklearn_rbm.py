#!/usr/bin/env python3
"""scikit-learn's BernoulliRBM on the benchmark's data: n_components=500, batch_size=100,
n_iter=1 (one epoch), learning_rate=0.1, random_state=0, on float32 pixels in [0, 1].
Times `fit`: one warm-up fit on a 1,000-case subset, then the median of 3 full fits.
Prints JSON.

usage: sklearn_rbm.py IMAGES.idx3-ubyte[.gz] [--hidden 500] [--batch 100] [--repeats 3]
"""
import argparse
import json
import statistics
import time

import sklearn
from sklearn.neural_network import BernoulliRBM

from idx import blas_threads, load_images


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images")
    parser.add_argument("--hidden", type=int, default=500)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    data = load_images(args.images)

    def fit(x):
        rbm = BernoulliRBM(n_components=args.hidden, batch_size=args.batch, n_iter=1, learning_rate=0.1, random_state=0)
        started = time.perf_counter()
        rbm.fit(x)
        return time.perf_counter() - started

    fit(data[:1000])  # warm-up
    runs = [fit(data) for _ in range(max(args.repeats, 1))]
    print(json.dumps({
        "sklearn_epoch_s": statistics.median(runs),
        "epoch_runs_s": runs,
        "threads": blas_threads(),
        "cases": int(data.shape[0]),
        "sklearn": sklearn.__version__,
    }))


if __name__ == "__main__":
    main()

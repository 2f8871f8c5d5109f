#!/usr/bin/env python3
"""The peers of `deepbelief bench --sparse-coding` (issue 18; Raina, Madhavan & Ng 2009, Table 4):
seconds for one pass of sparse coding over --cases (5,000) patches of --patch x --patch (32 x 32)
pixels with --bases (1,024) basis vectors in mini-batches of --batch (1,000), at beta giving
--sparsities (3%, 6%, 10%) non-zero codes. One JSON line per sparsity and peer:

- sklearn: scikit-learn's MiniBatchDictionaryLearning(fit_algorithm='cd') for one epoch
  (max_iter=1, shuffle=False, dict_init = the crate's initial basis): coordinate descent
  (sparse_encode's lasso_cd) for the codes, Mairal et al.'s online update for the dictionary.
- numpy_raina: a NumPy port of the crate's fit with Raina's solver (src/sparse_coding/raina.rs,
  basis_step.rs, fit.rs): per mini-batch, every coordinate's soft-threshold minimiser in
  parallel, a line search along d = a* - a over the step sizes 1, 1/2, ..., 2^-20 taking the
  largest that lowers the objective, stop at a decrease below 1e-6 of it (at most 1,000
  iterations; g recomputed every 10); then projected gradient on B for the forgetting
  statistics (the crate's default, scikit-learn's: S = A^T A, T = X^T A and 1/2||X||^2 of the
  batches coded so far, multiplied by scikit-learn's factor before each batch adds its part),
  per-column steps 1/sum_t |S_jt|, to a decrease below 1e-6 or 100 iterations.
  float32 arrays, float64 sums, as the crate.

Both start from the crate's problem: the same patches (cut by the crate's Philox stream from
--images PNGs, or from the crate's Philox gratings; each patch's mean removed, all divided by
one deviation: `sparse_coding::inputs::centre_and_scale`) and the same initial basis
(`Basis::initialise`, Box-Muller of Philox uniforms, unit columns). beta comes from --betas (the
crate's rows' values), or from this script's own bisection on log beta with sparse_encode's
lasso_cd on the first 1,000 patches (the crate's rule, `sparse_coding::sparsity`). After the
timed pass, untimed: the whole set's objective 1/2 ||X - A B^T||^2 + beta |A|_1 with codes solved
afresh by lasso_cd for the final basis ("objective", comparable with the crate's row of the
same name), and for numpy_raina also with the pass's codes ("objective_stored").

usage: sparse_coding_sklearn.py [--cases 5000] [--patch 32] [--bases 1024] [--batch 1000]
       [--sparsities 0.03,0.06,0.10] [--betas B,B,B] [--peers sklearn,numpy_raina]
       [--images PNG ...] [--n-jobs N]
"""
import argparse
import json
import time

import numpy as np

from autoencoder_numpy import check_philox, sample_patches, uniforms
from idx import blas_threads

PURPOSE_INITIAL_WEIGHTS = 8
PURPOSE_DATA_SAMPLE = 9
INITIAL_BASIS_STEP = 3
DATA_SEED = 1
BASIS_SEED = 1
SEARCH_CASES = 1000
GRATING_IMAGES, GRATING_SIDE = 8, 256
STEP_SIZES = [2.0 ** -i for i in range(21)]
GRADIENT_REFRESH = 10
RAINA_TOLERANCE, RAINA_MAX_ITERATIONS = 1e-6, 1000
BASIS_TOLERANCE, BASIS_MAX_ITERATIONS = 1e-6, 100


def grating_images(count, side, seed):
    """`bench::sparse_coding::grating_images`: three gratings per image plus noise, from Philox."""
    parameters = uniforms(seed, 2, PURPOSE_DATA_SAMPLE, 12 * count).reshape(count, 3, 4)
    noise = uniforms(seed, 3, PURPOSE_DATA_SAMPLE, count * side * side).reshape(count, side, side)
    y, x = np.mgrid[0:side, 0:side].astype(np.float64)
    images = []
    for i in range(count):
        waves = np.zeros((side, side))
        for u in parameters[i]:
            angle, wavelength, amplitude, phase = np.pi * u[0], 4.0 + 12.0 * u[1], 0.5 + u[2], 2 * np.pi * u[3]
            f = 2 * np.pi / wavelength
            waves += amplitude * np.sin(np.cos(angle) * f * x + np.sin(angle) * f * y + phase)
        images.append((waves + 0.6 * (noise[i] - 0.5)).astype(np.float32).astype(np.float64))
    return images


def png_images(paths):
    """Grey levels in [0, 1] as the crate reads them: colour channels averaged, alpha ignored."""
    from PIL import Image

    images = []
    for path in paths:
        image = Image.open(path)
        grey = image.mode in ("L", "LA", "I;16", "I")
        pixels = np.asarray(image.convert("L" if grey else "RGB"), dtype=np.float64)
        pixels = pixels if grey else pixels.mean(axis=2)
        images.append((pixels / 255.0).astype(np.float32).astype(np.float64))
    return images


def centre_and_scale(patches):
    """`sparse_coding::inputs::centre_and_scale`: each patch's mean removed, all divided by the deviation."""
    centred = patches - patches.mean(axis=1, keepdims=True)
    deviation = np.sqrt(np.mean(centred ** 2))
    return (centred / deviation).astype(np.float32)


def initial_basis(k, n, seed):
    """`Basis::initialise`: Box-Muller normals of Philox uniforms, each column scaled to norm 1 (k x n)."""
    u = uniforms(seed, INITIAL_BASIS_STEP, PURPOSE_INITIAL_WEIGHTS, 2 * k * n).reshape(k * n, 2)
    normal = (np.sqrt(-2.0 * np.log(np.maximum(u[:, 0], 1.0 / 16777216.0))) * np.cos(2 * np.pi * u[:, 1])).reshape(k, n)
    return (normal / np.sqrt((normal ** 2).sum(axis=0))).astype(np.float32)


def objective(x, b, codes, beta):
    """1/2 ||X - A B^T||^2 + beta |A|_1 in float64, and the fraction of non-zero codes."""
    residual = x - codes @ b.T
    return 0.5 * float(np.sum(np.square(residual, dtype=np.float64))) + beta * float(np.abs(codes).sum(dtype=np.float64)), float(np.count_nonzero(codes)) / codes.size


def lasso_cd(x, b, beta, init=None, n_jobs=None):
    from sklearn.decomposition import sparse_encode

    return sparse_encode(x, b.T, algorithm="lasso_cd", alpha=beta, init=init, max_iter=1000, n_jobs=n_jobs).astype(np.float32)


def beta_for_sparsity(x, b, target, tolerance=0.05, max_evaluations=40, n_jobs=None):
    """`sparse_coding::sparsity::beta_for_sparsity` with lasso_cd: bracket below beta_max = max|B^T x|
    by factors of 1e-3, then bisect log beta, warm-starting each solve; (beta, fraction)."""
    beta_max = float(np.abs(x @ b).max())
    codes, evaluations, best = None, 0, None

    def evaluate(beta):
        nonlocal codes, evaluations, best
        codes = lasso_cd(x, b, beta, codes, n_jobs)
        evaluations += 1
        fraction = float(np.count_nonzero(codes)) / codes.size
        if best is None or abs(fraction - target) < abs(best[1] - target):
            best = (beta, fraction)
        return fraction

    close = lambda fraction: abs(fraction - target) <= tolerance * target
    high = low = beta_max
    while True:
        low *= 1e-3
        fraction = evaluate(low)
        if close(fraction):
            return low, fraction
        if fraction > target:
            break
        high = low
        if low < beta_max * 1e-12 or evaluations >= max_evaluations:
            raise SystemExit(f"sparsity {target} is not reachable (at beta {low:e}: {fraction})")
    while evaluations < max_evaluations:
        middle = np.sqrt(low * high)
        fraction = evaluate(middle)
        if close(fraction):
            return middle, fraction
        low, high = (middle, high) if fraction > target else (low, middle)
    return best


def raina_codes(x, b, beta):
    """`sparse_coding::raina::solve` from zero codes, for one batch; (codes, iterations per case)."""
    m, n = x.shape[0], b.shape[1]
    q = b.T @ b
    r = np.diag(q).astype(np.float64)
    c_all = x @ b
    codes = np.zeros((m, n), np.float32)
    iterations = np.full(m, RAINA_MAX_ITERATIONS)
    active = np.arange(m)
    a, c = codes.copy(), c_all.copy()
    g = a @ q - c
    f = 0.5 * np.sum(np.square(x, dtype=np.float64), axis=1)
    safe_r = np.where(r > 0, r, 1.0)
    for iteration in range(1, RAINA_MAX_ITERATIONS + 1):
        if active.size == 0:
            break
        if iteration > 1 and (iteration - 1) % GRADIENT_REFRESH == 0:
            g = a @ q - c
        u = r * a.astype(np.float64) - g.astype(np.float64)
        minimiser = np.where(r > 0, np.sign(u) * np.maximum(np.abs(u) - beta, 0.0) / safe_r, 0.0)
        d = (minimiser - a.astype(np.float64)).astype(np.float32)
        qd = d @ q
        moving = d != 0
        d64, a64 = d.astype(np.float64), a.astype(np.float64)
        alpha1 = np.sum(d64 * g.astype(np.float64), axis=1)
        alpha2 = 0.5 * np.sum(d64 * qd.astype(np.float64), axis=1)
        l1_now = np.sum(np.abs(a64) * moving, axis=1)
        chosen = np.zeros(active.size)
        change = np.zeros(active.size)
        for t in STEP_SIZES:
            open_ = (chosen == 0) & moving.any(axis=1)
            if not open_.any():
                break
            stepped = (a64 + t * d64).astype(np.float32).astype(np.float64)
            trial = alpha2 * t * t + alpha1 * t + beta * (np.sum(np.abs(stepped) * moving, axis=1) - l1_now)
            take = open_ & (trial < 0)
            chosen[take], change[take] = t, trial[take]
        stepping = chosen > 0
        t = chosen[:, None]
        a = np.where(moving & stepping[:, None], (a64 + t * d64).astype(np.float32), a)
        g = np.where(stepping[:, None], (g.astype(np.float64) + t * qd.astype(np.float64)).astype(np.float32), g)
        previous = f.copy()
        f = f + change
        stop = ~stepping | (-change < RAINA_TOLERANCE * previous)
        if iteration == RAINA_MAX_ITERATIONS:
            stop[:] = True
        codes[active[stop]] = a[stop]
        iterations[active[stop]] = iteration
        keep = ~stop
        active, a, c, g, f = active[keep], a[keep], c[keep], g[keep], f[keep]
    return codes, iterations


def project_columns(b):
    norms = np.sqrt(np.sum(np.square(b, dtype=np.float64), axis=0))
    return np.where(norms > 1.0, (b / np.maximum(norms, 1.0)).astype(np.float32), b)


def descend(b, s, t, half_data_norm2):
    """`sparse_coding::basis_step::descend` with the column-majoriser steps; (basis, iterations)."""
    steps = np.abs(s.astype(np.float64)).sum(axis=1)
    steps = np.where(steps > 0, 1.0 / np.where(steps > 0, steps, 1.0), 0.0)
    gradient = b @ s - t
    objective_now = half_data_norm2 + 0.5 * float(np.sum(b.astype(np.float64) * (gradient.astype(np.float64) - t)))
    iterations = 0
    while iterations < BASIS_MAX_ITERATIONS and steps.any():
        iterations += 1
        candidate = project_columns((b.astype(np.float64) - steps * gradient.astype(np.float64)).astype(np.float32))
        candidate_gradient = candidate @ s - t
        change = 0.5 * float(np.sum((candidate.astype(np.float64) - b) * (gradient.astype(np.float64) + candidate_gradient)))
        if change > 0:
            break
        b, gradient = candidate, candidate_gradient
        previous, objective_now = objective_now, objective_now + change
        if -change < BASIS_TOLERANCE * previous:
            break
    return b, iterations


def forgetting_factor(step, eta):
    """scikit-learn's `_update_inner_stats` factor (src/sparse_coding/fit.rs, forgetting_factor)."""
    theta = (step + 1) * eta if step + 1 < eta else eta * eta + step + 1 - eta
    return (theta + 1 - eta) / (theta + 1)


def numpy_raina_pass(x, b, beta, batch, forgetting=True):
    """One pass of `sparse_coding::fit` from zero codes with Raina's solver (forgetting: the
    crate's default statistics, scikit-learn's rule; else every case's latest codes alike)."""
    n = b.shape[1]
    codes = np.zeros((x.shape[0], n), np.float32)
    s, t = np.zeros((n, n), np.float32), np.zeros((x.shape[1], n), np.float32)
    half_data_norm2 = 0.0 if forgetting else 0.5 * float(np.sum(np.square(x, dtype=np.float64)))
    code_iterations, basis_iterations = [], []
    for step, first in enumerate(range(0, x.shape[0], batch)):
        rows = slice(first, first + batch)
        codes[rows], iterations = raina_codes(x[rows], b, beta)
        if forgetting:
            factor = np.float32(forgetting_factor(step, batch))
            s *= factor
            t *= factor
            half_data_norm2 = float(factor) * half_data_norm2 + 0.5 * float(np.sum(np.square(x[rows], dtype=np.float64)))
        s += codes[rows].T @ codes[rows]
        t += x[rows].T @ codes[rows]
        b, steps = descend(b, s, t, half_data_norm2)
        code_iterations.append(iterations)
        basis_iterations.append(steps)
    iterations = np.concatenate(code_iterations)
    return b, codes, {"code_iterations_mean": float(iterations.mean()), "code_iterations_max": int(iterations.max()),
                      "basis_iterations_mean": float(np.mean(basis_iterations))}


def sklearn_pass(x, b, beta, batch, n_jobs):
    from sklearn.decomposition import MiniBatchDictionaryLearning

    learner = MiniBatchDictionaryLearning(n_components=b.shape[1], alpha=beta, max_iter=1, fit_algorithm="cd", transform_algorithm="lasso_cd",
                                          batch_size=batch, shuffle=False, dict_init=b.T.copy(), random_state=0, n_jobs=n_jobs)
    learner.fit(x)
    return learner.components_.T.astype(np.float32), {"steps": int(learner.n_steps_)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--patch", type=int, default=32)
    parser.add_argument("--bases", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--sparsities", default="0.03,0.06,0.10", type=lambda s: [float(v) for v in s.split(",")])
    parser.add_argument("--betas", default=None, type=lambda s: [float(v) for v in s.split(",")],
                        help="beta per sparsity (the crate's rows' values) instead of this script's search")
    parser.add_argument("--peers", default="sklearn,numpy_raina", type=lambda s: s.split(","))
    parser.add_argument("--images", nargs="*", help="grey PNG images to cut the patches from (default: the crate's gratings)")
    parser.add_argument("--n-jobs", type=int, default=None, help="sklearn's n_jobs (default: one process)")
    args = parser.parse_args()
    if args.betas is not None and len(args.betas) != len(args.sparsities):
        raise SystemExit(f"--betas has {len(args.betas)} values for {len(args.sparsities)} sparsities")
    unknown = set(args.peers) - {"sklearn", "numpy_raina"}
    if unknown:
        raise SystemExit(f"--peers: unknown {sorted(unknown)}; expected sklearn, numpy_raina")

    check_philox()
    images = png_images(args.images) if args.images else grating_images(GRATING_IMAGES, GRATING_SIDE, DATA_SEED)
    x = centre_and_scale(sample_patches(images, args.patch, args.cases, DATA_SEED))
    k = args.patch * args.patch
    initial = initial_basis(k, args.bases, BASIS_SEED)
    import sklearn

    common = {"cases": args.cases, "inputs": k, "bases": args.bases, "batch": args.batch, "data": "images" if args.images else "gratings",
              "blas_threads": blas_threads(), "numpy": np.__version__, "sklearn": sklearn.__version__}
    for index, target in enumerate(args.sparsities):
        sample = x[:min(args.cases, SEARCH_CASES)]
        if args.betas is not None:
            beta, search_fraction = args.betas[index], None
        else:
            beta, search_fraction = beta_for_sparsity(sample, initial, target, n_jobs=args.n_jobs)
        for peer in args.peers:
            start = time.perf_counter()
            if peer == "sklearn":
                b, extra = sklearn_pass(x, initial.copy(), beta, args.batch, args.n_jobs)
                stored = {}
            else:
                b, codes, extra = numpy_raina_pass(x, initial.copy(), beta, args.batch)
                value, fraction = objective(x, b, codes, beta)
                stored = {"objective_stored": value, "nonzero_fraction_stored": fraction}
            seconds = time.perf_counter() - start
            fresh = lasso_cd(x, b, beta, n_jobs=args.n_jobs)
            value, fraction = objective(x, b, fresh, beta)
            print(json.dumps({"peer": peer, "sparsity_target": target, "beta": beta, "search_nonzero_fraction": search_fraction, **common,
                              "seconds": seconds, "objective": value, "nonzero_fraction": fraction, **stored, **extra}), flush=True)


if __name__ == "__main__":
    main()

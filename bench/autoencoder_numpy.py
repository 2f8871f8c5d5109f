#!/usr/bin/env python3
"""The NumPy peer of `deepbelief::autoencoder`: the sparse autoencoder cost and gradient
(UFLDL's sparseAutoencoderCost; Klaus & Welles 2014) written plainly in vectorised NumPy.

Two modes, each printing one JSON object:

- sweep (default): seconds for one full-batch cost + gradient of v x v/2 networks over
  --samples cases (10,000; uniform random inputs, UFLDL's initial weights), float32 as the
  crate computes; one warm-up, then the median of --repeats. Klaus & Welles' Table 6 sizes
  are v = 64 ... 8192 (--sizes 64,128,...,8192).
- --ufldl: the exercise's reference run: 64-25-64, rho = 0.01, lambda = 1e-4, beta = 3,
  400 iterations of SciPy's L-BFGS (memory 100, as minFunc's default) on 10,000 8x8 patches,
  mean-removed per patch, clipped at +-3 sigma and mapped to [0.1, 0.9] (normalizeData).
  It prints the final J. The patches are cut exactly as `data::patches::sample_patches`
  does (the crate's Philox stream, seed --seed), and the initial weights are the crate's
  `Autoencoder::initialise` (seed --init-seed), so the two runs start from the same point.
  Patches come from --patches FILE.npy (cases x 64, already normalised), or are cut from
  --images (PNG or .npy grey images), --skimage NAMES (scikit-image's data images, e.g.
  camera,moon,coins,page,text,grass,gravel,brick), or --synthetic N (oriented gratings plus
  noise, for a quick check); --zca EPS whitens the patches first.

Layouts follow the crate: W1 and W2 are both visible x hidden, so z2 = X W1 + b1 and
x_hat = sigmoid(a2 W2^T + b2); theta = [W1, W2, b1, b2], each row-major.

usage: autoencoder_numpy.py [--sizes 64,128,...] [--samples 10000] [--repeats 3]
       autoencoder_numpy.py --ufldl (--patches P.npy | --images F... | --skimage N,... | --synthetic N)
"""
import argparse
import json
import statistics
import time

import numpy as np

from idx import blas_threads

# Philox4x32-10 exactly as src/rng.rs (Salmon et al. 2011).
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)
PURPOSE_INITIAL_WEIGHTS = 8
PURPOSE_DATA_SAMPLE = 9


def philox4x32_10(counters, key):
    """counters: uint64 array (n, 4) of 32-bit words; key: two ints. Returns (n, 4) uint64."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for round_ in range(10):
        if round_ > 0:
            k0, k1 = (k0 + PHILOX_W0) & 0xFFFFFFFF, (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0 = np.uint64(PHILOX_M0) * c[0]
        p1 = np.uint64(PHILOX_M1) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
        c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
    return np.stack(c, axis=1)


def check_philox():
    """Random123's known answers, as src/rng.rs tests them."""
    cases = [
        ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
        ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
        ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0], [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
    ]
    for counter, key, expected in cases:
        got = philox4x32_10(np.array([counter], dtype=np.uint64), key)[0].tolist()
        if got != expected:
            raise AssertionError(f"Philox known answer: {got} != {expected}")


def uniforms(seed, step, purpose, count):
    """`RngStream::new(seed, step, purpose).uniform(i)` for i < count, as float64 (exact)."""
    index = np.arange(count, dtype=np.uint64)
    counters = np.stack(
        [(index >> np.uint64(2)) & MASK32, np.full_like(index, step & 0xFFFFFFFF), np.full_like(index, step >> 32),
         np.uint64(purpose) | ((index >> np.uint64(34)) << np.uint64(8))], axis=1)
    blocks = philox4x32_10(counters, [seed & 0xFFFFFFFF, seed >> 32])
    words = blocks[np.arange(count), (index & np.uint64(3)).astype(np.int64)]
    return (words >> np.uint64(8)).astype(np.float64) / 16777216.0


def initial_theta(visible, hidden, seed):
    """`Autoencoder::initialise`: W uniform in [-r, r), r = sqrt(6)/sqrt(v + h + 1), in float32."""
    r = np.float32(np.sqrt(6.0) / np.sqrt(visible + hidden + 1))
    w1, w2 = ((np.float32(2.0) * uniforms(seed, step, PURPOSE_INITIAL_WEIGHTS, visible * hidden).astype(np.float32) - np.float32(1.0)) * r
              for step in (1, 2))
    return w1.reshape(visible, hidden), w2.reshape(visible, hidden), np.zeros(hidden, np.float32), np.zeros(visible, np.float32)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def cost_and_gradient(w1, w2, b1, b2, x, lam, rho, beta):
    """J and its gradient (same dtype as the inputs; the three terms of J summed in float64)."""
    m = x.shape[0]
    a2 = sigmoid(x @ w1 + b1)
    rho_hat = a2.mean(axis=0)
    a3 = sigmoid(a2 @ w2.T + b2)
    error = a3 - x
    reconstruction = 0.5 * np.sum(np.square(error, dtype=np.float64)) / m
    decay = 0.5 * lam * (np.sum(np.square(w1, dtype=np.float64)) + np.sum(np.square(w2, dtype=np.float64)))
    rho_hat64 = rho_hat.astype(np.float64)
    sparsity = beta * np.sum(rho * np.log(rho / rho_hat64) + (1 - rho) * np.log((1 - rho) / (1 - rho_hat64)))
    delta3 = error * a3 * (1 - a3)
    sparsity_delta = (beta * (-rho / rho_hat64 + (1 - rho) / (1 - rho_hat64))).astype(x.dtype)
    delta2 = (delta3 @ w2 + sparsity_delta) * a2 * (1 - a2)
    dtype = x.dtype.type
    g_w2 = delta3.T @ a2 / dtype(m) + dtype(lam) * w2
    g_b2 = delta3.sum(axis=0) / dtype(m)
    g_w1 = x.T @ delta2 / dtype(m) + dtype(lam) * w1
    g_b1 = delta2.sum(axis=0) / dtype(m)
    return reconstruction + decay + sparsity, (g_w1, g_w2, g_b1, g_b2)


def sweep(args):
    rng = np.random.default_rng(args.seed)
    results = []
    for visible in args.sizes:
        hidden = visible // 2
        x = rng.random((args.samples, visible), dtype=np.float32)
        w1, w2, b1, b2 = initial_theta(visible, hidden, args.init_seed)
        cost_and_gradient(w1, w2, b1, b2, x, args.weight_decay, args.sparsity_target, args.sparsity_weight)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            j, _ = cost_and_gradient(w1, w2, b1, b2, x, args.weight_decay, args.sparsity_target, args.sparsity_weight)
            times.append(time.perf_counter() - start)
        results.append({"visible": visible, "hidden": hidden, "seconds": statistics.median(times), "cost": float(j)})
        del x
    return {"mode": "sweep", "samples": args.samples, "dtype": "float32", "repeats": args.repeats,
            "blas_threads": blas_threads(), "numpy": np.__version__, "results": results}


def grating_images(count, side, seed):
    """Three random gratings per image (wavelength 4-16 px) plus uniform noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float64)
    images = []
    for _ in range(count):
        image = np.zeros((side, side))
        for _ in range(3):
            angle, wavelength = rng.random() * np.pi, 4 + 12 * rng.random()
            f = 2 * np.pi / wavelength
            image += (0.5 + rng.random()) * np.sin(np.cos(angle) * f * x + np.sin(angle) * f * y + rng.random() * 2 * np.pi)
        images.append(image + 0.6 * (rng.random((side, side)) - 0.5))
    return images


def load_images(args):
    if args.synthetic:
        return grating_images(args.synthetic, 128, args.seed)
    images = []
    for path in args.images or []:
        if path.endswith(".npy"):
            images.append(np.load(path).astype(np.float64))
        else:
            from PIL import Image
            images.append(np.asarray(Image.open(path).convert("L"), dtype=np.float64))
    if args.skimage:
        try:
            import skimage.data
            from skimage.color import rgb2gray
        except ImportError as e:
            raise SystemExit(f"--skimage needs scikit-image (pip install scikit-image, or apt-get install python3-skimage): {e}")
        for name in args.skimage.split(","):
            image = np.asarray(getattr(skimage.data, name)(), dtype=np.float64)
            images.append(rgb2gray(image) if image.ndim == 3 else image)
    for i, image in enumerate(images):
        if image.ndim != 2:
            raise SystemExit(f"image {i} has shape {image.shape}; expected a grey image (rows x cols)")
    if not images:
        raise SystemExit("--ufldl needs --patches, --images, --skimage or --synthetic")
    return images


def sample_patches(images, side, count, seed):
    """`data::patches::sample_patches`: image floor(u[3k]*n), row and column likewise."""
    u = uniforms(seed, 0, PURPOSE_DATA_SAMPLE, 3 * count).reshape(count, 3)
    patches = np.empty((count, side * side), np.float64)
    pick = lambda v, n: min(int(v * n), n - 1)
    for k in range(count):
        image = images[pick(u[k, 0], len(images))]
        rows, cols = image.shape
        if rows < side or cols < side:
            raise SystemExit(f"an image of {rows} x {cols} pixels is smaller than a {side} x {side} patch")
        r, c = pick(u[k, 1], rows - side + 1), pick(u[k, 2], cols - side + 1)
        patches[k] = image[r:r + side, c:c + side].reshape(-1)
    return patches


def zca(patches, epsilon):
    """UFLDL's ZCA: W = U diag(1/sqrt(lambda + eps)) U^T of the covariance of the mean-removed cases."""
    centred = patches - patches.mean(axis=0)
    sigma = centred.T @ centred / patches.shape[0]
    eigenvalues, u = np.linalg.eigh(sigma)
    white = u @ np.diag(1.0 / np.sqrt(np.maximum(eigenvalues, 0) + epsilon)) @ u.T
    return centred @ white


def normalise(patches):
    """UFLDL's normalizeData: remove each patch's mean, clip at +-3 sigma (ddof 1), map to [0.1, 0.9]."""
    centred = patches - patches.mean(axis=1, keepdims=True)
    clip = 3 * centred.std(ddof=1)
    return (np.clip(centred, -clip, clip) / clip + 1) * 0.4 + 0.1


def ufldl(args):
    from scipy.optimize import minimize

    check_philox()
    if args.patches:
        x = np.load(args.patches).astype(np.float64)
    else:
        patches = sample_patches(load_images(args), 8, args.samples, args.seed)
        if args.zca is not None:
            patches = zca(patches, args.zca)
        x = normalise(patches).astype(np.float32).astype(np.float64)
    visible, hidden = x.shape[1], args.hidden
    w1, w2, b1, b2 = (a.astype(np.float64) for a in initial_theta(visible, hidden, args.init_seed))
    shapes = [w1.shape, w2.shape, b1.shape, b2.shape]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(theta):
        parts, offset = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(theta[offset:offset + size].reshape(shape))
            offset += size
        return parts

    def objective(theta):
        j, grads = cost_and_gradient(*unpack(theta), x, args.weight_decay, args.sparsity_target, args.sparsity_weight)
        return j, np.concatenate([g.reshape(-1) for g in grads])

    theta0 = np.concatenate([w1.reshape(-1), w2.reshape(-1), b1, b2])
    initial_j = objective(theta0)[0]
    history = []
    start = time.perf_counter()
    result = minimize(objective, theta0, jac=True, method="L-BFGS-B", callback=lambda t: history.append(None),
                      options={"maxiter": args.iterations, "maxcor": 100, "maxfun": 1000, "gtol": 1e-9, "ftol": 1e-12})
    seconds = time.perf_counter() - start
    w1, w2, b1, b2 = unpack(result.x)
    rho_hat = sigmoid(x @ w1 + b1).mean(axis=0)
    return {"mode": "ufldl", "visible": visible, "hidden": hidden, "samples": int(x.shape[0]),
            "lambda": args.weight_decay, "rho": args.sparsity_target, "beta": args.sparsity_weight,
            "initial_cost": float(initial_j), "final_cost": float(result.fun), "iterations": int(result.nit),
            "evaluations": int(result.nfev), "message": str(result.message), "seconds": seconds,
            "mean_rho_hat": float(rho_hat.mean()), "scipy_method": "L-BFGS-B (maxcor 100)"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128,256,512,1024,2048,4096,8192",
                        type=lambda s: [int(v) for v in s.split(",")], help="visible sizes v of the v x v/2 sweep")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="data: the sweep's inputs, or the patch positions")
    parser.add_argument("--init-seed", type=int, default=1, help="the crate's initial-weights seed")
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--sparsity-target", type=float, default=0.01)
    parser.add_argument("--sparsity-weight", type=float, default=3.0)
    parser.add_argument("--ufldl", action="store_true", help="run the exercise with SciPy's L-BFGS instead of the sweep")
    parser.add_argument("--hidden", type=int, default=25)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--patches", help=".npy of normalised patches (cases x 64)")
    parser.add_argument("--images", nargs="*", help="grey images (PNG or .npy) to cut patches from")
    parser.add_argument("--skimage", help="comma-separated scikit-image data images, e.g. camera,moon,coins")
    parser.add_argument("--synthetic", type=int, default=0, help="N synthetic 128x128 grating images")
    parser.add_argument("--zca", type=float, default=None, help="ZCA-whiten the patches with this epsilon first")
    args = parser.parse_args()
    print(json.dumps(ufldl(args) if args.ufldl else sweep(args)))


if __name__ == "__main__":
    main()

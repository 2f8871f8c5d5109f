#!/usr/bin/env python3
"""The PyTorch peer of `deepbelief bench --sparse-coding` (issue 18; Raina, Madhavan & Ng 2009,
Table 4): seconds for one pass of sparse coding over --cases (5,000) patches of --patch x --patch
(32 x 32) pixels with --bases (1,024) basis vectors in mini-batches of --batch (1,000), at beta
giving --sparsities (3%, 6%, 10%) non-zero codes, with exactly the crate's algorithm
(src/sparse_coding/raina.rs, basis_step.rs, fit.rs; on the device shaders/sparse_coding_*.wgsl):

- code step, per mini-batch, from the batch's latest codes (zeros in the first pass): Raina's
  parallel solver. Q = B^T B, C = X B, g = A Q - C; per iteration every coordinate's own
  minimiser a*_j = sign(u_j) max(|u_j| - beta, 0) / Q_jj (u_j = Q_jj a_j - g_j), d = a* - a,
  one product D Q, then per case a line search over t = 1, 1/2, ..., 2^-20 taking the largest t
  whose change alpha2 t^2 + alpha1 t + beta sum_j(|a_j + t d_j| - |a_j|) is negative
  (alpha1 = d.g, alpha2 = d.Qd / 2); a += t d, g += t Qd. A case stops when its objective fell
  by less than 1e-6 of its value, when no t lowers it, or when d = 0; at most 1,000 iterations;
  g recomputed as A Q - C every 10 iterations.
- basis step, per mini-batch, on the statistics S = A^T A and T = X^T A: with --statistics
  forgetting (the crate's default, scikit-learn's rule) S, T and 1/2||X||^2 are first multiplied
  by (theta + 1 - eta)/(theta + 1), theta = (t + 1) eta for step t < eta - 1 else
  eta^2 + t + 1 - eta, and the batch's part added; with whole-set every case's latest codes (the
  batch's old part taken away, its new part added). Then projected gradient,
  B' = P(B - G diag(eta)), G = B S - T, eta_j = 1 / sum_t |S_jt| (the ColumnMajoriser rule),
  P scaling columns of norm above 1 to norm 1; the exact change 1/2 <B' - B, G + G'> accepted
  when not positive; stop at a change below 1e-6 of the objective, a rejected step, or 100
  iterations.

Precision: float32 tensors (TF32 OFF: torch.backends.cuda.matmul.allow_tf32 = False, float32
matmul precision "highest"), as the crate's device kernels: the per-case sums alpha1, alpha2 and
the L1 change in float32, each case's objective tracked in float64 from the accepted changes,
the basis step's change and objective in float64. --tf32 adds rows of the fastest variant with
TF32 on (the products' inputs rounded to 10-bit mantissas: another arithmetic, for reference).

Variants (--variants), each the same algorithm:
  eager    the plain loop: after every iteration the stopped cases leave the batch (boolean
           indexing, so one host synchronisation per iteration, as the crate's CPU reference
           narrows its batch); the basis step reads its change back every iteration.
  chunked  the same tensors kept at the batch's shape, stopped cases frozen by masks; the host
           checks for running cases every 10 code iterations (aligned with the gradient refresh)
           and every 5 basis iterations: no synchronisation in between.
  packed   chunked, and between chunks the running cases are packed into the smallest
           power-of-two bucket that holds them whenever it halves (padding slots frozen), as the
           crate's device narrows its products to the cases still running.
  graph    (CUDA only) packed, each chunk (a refresh and 10 code iterations; 5 basis
           iterations) captured once per bucket size in a CUDA graph (all of them before the
           timed passes) and replayed.
  compile  chunked, the chunk functions through torch.compile (--compile-mode, default
           "default"), at the batch's shape.
Each variant first runs one untimed batch (graph capture, compilation: `setup_seconds`), then
--repeats timed passes from the initial basis and zero codes (`seconds` the median, `seconds_all`
each), synchronised at the end of each step (`seconds_codes`, `seconds_basis` of the last pass).

The problem is the crate's, number for number: the same patches (cut by the crate's Philox stream
from --images PNGs, or from the crate's Philox gratings; each patch's mean removed, all divided
by one deviation) and the same initial basis (`Basis::initialise`), through the NumPy ports in
sparse_coding_sklearn.py / autoencoder_numpy.py (checked against Random123's known answers).
beta comes from --betas (the crate's rows' values: bench/sparse_coding_device.sh passes them),
or from this script's own search: the crate's rule (`sparse_coding::sparsity`: bracket below
max|B^T x| by factors of 1e-3, bisect log beta, warm starts, within 5% of the target, at most 40
code steps) on the first 1,000 patches, but coding with Raina's solver (the crate codes with
coordinate descent, so its beta can differ in the last digits).

After the timed passes, untimed: the whole set's objective 1/2 ||X - A B^T||^2 + beta |A|_1 with
the pass's codes (`objective_stored`: the crate's field of that name, the same algorithm from
the same start), and with codes solved afresh by this Raina solver for the final basis
(`objective_raina`; the crate's `objective` solves them by coordinate descent: both stop at the
1e-6 rule, so they agree to about 1e-5).

Agreement seen (CPU, --device cpu, 2 threads; the crate's `bench --sparse-coding --cases 200
--patch 6 --bases 16 --coding-batch 100 --sparsities 0.1,0.2 --solvers raina` against
`--cases 200 --patch 6 --bases 16 --batch 100 --sparsities 0.1,0.2 --betas <the crate's>`):
  beta from this script's own search equals the crate's to the last digit (1.3900812694951978 at
  10%, 1.0330799706364562 at 20%); objective_stored 2509.9272 / 2083.3333 against the crate's
  CPU 2509.9370 / 2083.3311 (3.9e-6, 1.1e-6) and device (lavapipe) 2509.9306 / 2083.3333 (1.4e-6,
  1.2e-8); the same non-zero fraction of the pass's codes at 20% (21.72%; 14.38% vs 14.41% at
  10%), the same most code iterations per case (122, 124) and basis iterations (7.0, 11.5);
  objective_raina within 2e-5 of the crate's coordinate-descent objective; the eager, chunked,
  packed and compile variants within 1e-8 of each other.

Prints one JSON line per sparsity and variant. Runs on the CPU (--device cpu, or where there is
no CUDA device; the graph variant is then skipped) for a correctness check on a small shape.

usage: sparse_coding_torch.py [--cases 5000] [--patch 32] [--bases 1024] [--batch 1000]
       [--sparsities 0.03,0.06,0.10] [--betas B,B,B] [--variants eager,chunked,packed,graph,compile]
       [--repeats 1] [--passes 1] [--tf32] [--images PNG ...] [--device cuda|cpu]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from autoencoder_numpy import check_philox, sample_patches  # noqa: E402
from sparse_coding_sklearn import (BASIS_SEED, DATA_SEED, GRATING_IMAGES, GRATING_SIDE, SEARCH_CASES, centre_and_scale,  # noqa: E402
                                   grating_images, initial_basis, png_images)

STEP_COUNT = 21
GRADIENT_REFRESH = 10
RAINA_TOLERANCE, RAINA_MAX_ITERATIONS = 1e-6, 1000
BASIS_TOLERANCE, BASIS_MAX_ITERATIONS = 1e-6, 100
CODE_CHUNK = GRADIENT_REFRESH  # code iterations between convergence checks (chunked variants)
BASIS_CHUNK = 5  # basis iterations between checks
VARIANTS = ["eager", "chunked", "packed", "graph", "compile"]


def log(message):
    print(message, file=sys.stderr, flush=True)


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")


def synchronise(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- the code step's arithmetic, shared by every variant ----------------------------------------

def directions(a, g, r, beta):
    """d = a* - a, a*_j the soft-threshold minimiser of coordinate j (0 where Q_jj = 0)."""
    u = r * a - g
    minimiser = torch.where(r > 0, torch.sign(u) * torch.clamp(u.abs() - beta, min=0.0) / torch.where(r > 0, r, torch.ones_like(r)), torch.zeros_like(u))
    return minimiser - a


def line_search(a, g, d, qd, f, beta, steps):
    """Every case's largest step of `steps` that lowers its objective: (a', g', f', stepped,
    stop). A case that does not step keeps a, g and f; it stops, as does one whose objective
    fell by less than the tolerance of its value."""
    moving = d != 0
    alpha1 = (d * g).sum(1)
    alpha2 = 0.5 * (d * qd).sum(1)
    stepped_codes = a.unsqueeze(1) + steps.view(1, -1, 1) * d.unsqueeze(1)
    l1_change = torch.where(moving.unsqueeze(1), stepped_codes.abs() - a.abs().unsqueeze(1), torch.zeros((), dtype=a.dtype, device=a.device)).sum(2)
    t64 = steps.double().view(1, -1)
    change = alpha2.double().unsqueeze(1) * t64 * t64 + alpha1.double().unsqueeze(1) * t64 + beta * l1_change.double()
    lowers = change < 0
    stepped = lowers.any(1)
    first = lowers.to(torch.int8).argmax(1, keepdim=True)  # the first (largest) step that lowers
    t = torch.where(stepped, steps.gather(0, first.squeeze(1)), torch.zeros((), dtype=a.dtype, device=a.device)).unsqueeze(1)
    chosen = torch.where(stepped, change.gather(1, first).squeeze(1), torch.zeros((), dtype=torch.float64, device=a.device))
    a_next = torch.where(moving & stepped.unsqueeze(1), a + t * d, a)
    g_next = torch.where(stepped.unsqueeze(1), g + t * qd, g)
    f_next = f + chosen
    stop = ~stepped | (-chosen < RAINA_TOLERANCE * f)
    return a_next, g_next, f_next, stop


def case_objectives(x, b, a, beta):
    """Each case's 1/2 ||x - B a||^2 + beta |a|_1 in float64 (1/2 ||x||^2 where a = 0)."""
    residual = x - a @ b.T
    return 0.5 * residual.double().square().sum(1) + beta * a.double().abs().sum(1)


def code_chunk(a, g, f, running, iterations, c, q, r, beta, steps):
    """One refresh g = AQ - C and CODE_CHUNK iterations on fixed shapes; stopped cases frozen."""
    g = torch.where(running.unsqueeze(1), a @ q - c, g)
    for _ in range(CODE_CHUNK):
        d = torch.where(running.unsqueeze(1), directions(a, g, r, beta), torch.zeros_like(a))
        qd = d @ q
        a_next, g_next, f_next, stop = line_search(a, g, d, qd, f, beta, steps)
        keep = running.unsqueeze(1)
        a, g = torch.where(keep, a_next, a), torch.where(keep, g_next, g)
        f = torch.where(running, f_next, f)
        iterations = iterations + running.to(iterations.dtype)
        running = running & ~stop
    return a, g, f, running, iterations


def basis_chunk(b, grad, objective, done, iterations, s, t, eta):
    """BASIS_CHUNK projected-gradient iterations on fixed shapes; after `done` nothing moves."""
    for _ in range(BASIS_CHUNK):
        candidate = b - grad * eta
        norms = torch.linalg.vector_norm(candidate, dim=0)
        candidate = torch.where(norms > 1, candidate / norms, candidate)
        candidate_grad = candidate @ s - t
        change = 0.5 * ((candidate.double() - b.double()) * (grad.double() + candidate_grad.double())).sum()
        take = ~done & (change <= 0)
        b = torch.where(take, candidate, b)
        grad = torch.where(take, candidate_grad, grad)
        iterations = iterations + (~done).to(iterations.dtype)
        previous = objective
        objective = torch.where(take, objective + change, objective)
        done = done | (change > 0) | (take & (-change < BASIS_TOLERANCE * previous))
        done = done | (iterations >= BASIS_MAX_ITERATIONS)
    return b, grad, objective, done, iterations


# --- the solvers: eager, chunked, graph, compile ---------------------------------------------------

def power_of_two(count):
    return 1 << max(count - 1, 0).bit_length()


class Graphs:
    """One CUDA graph per input shape of `function`, each capturing `function(*static)` with its
    outputs copied back onto the first of its static inputs (a chunk updates its state in place)."""

    def __init__(self, function, outputs):
        self.function, self.outputs, self.graphs = function, outputs, {}

    def __call__(self, *state):
        key = tuple(tuple(v.shape) for v in state)
        if key not in self.graphs:
            static = [v.clone() for v in state]
            device = static[0].device
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):  # warm-up outside the capture, as CUDA graphs require
                self.function(*[v.clone() for v in static])
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for target, value in zip(static, self.function(*static)):
                    target.copy_(value)
            self.graphs[key] = (graph, static)
        graph, static = self.graphs[key]
        for target, value in zip(static, state):
            if target.data_ptr() != value.data_ptr():
                target.copy_(value)
        graph.replay()
        return tuple(static[:self.outputs])


class Solver:
    """The code step and the basis step of one variant (its graphs and compiled functions kept
    across batches, sparsities and passes)."""

    def __init__(self, variant, device, compile_mode):
        self.variant, self.device = variant, device
        self.steps = torch.tensor([2.0 ** -i for i in range(STEP_COUNT)], dtype=torch.float32, device=device)
        self.code_chunk, self.basis_chunk = code_chunk, basis_chunk
        if variant == "compile":
            self.code_chunk = torch.compile(code_chunk, mode=compile_mode, dynamic=False)
            self.basis_chunk = torch.compile(basis_chunk, mode=compile_mode, dynamic=False)
        if variant == "graph":
            self.code_chunk, self.basis_chunk = Graphs(code_chunk, 5), Graphs(basis_chunk, 5)

    def prepare(self, m, k, n, beta):
        """The graph variant: every bucket's graph captured now, not inside a timed pass."""
        if self.variant != "graph":
            return
        bucket = power_of_two(m)
        while True:
            zeros = torch.zeros((bucket, n), dtype=torch.float32, device=self.device)
            a, g, running, iterations, beta_t = self.state(zeros, beta)
            f = torch.zeros(bucket, dtype=torch.float64, device=self.device)
            q = torch.eye(n, dtype=torch.float32, device=self.device)
            self.code_chunk(a, g, f, running, iterations, zeros.clone(), q, torch.diagonal(q).clone(), beta_t, self.steps)
            if bucket == 1:
                break
            bucket //= 2

    # The code step ----------------------------------------------------------------------------
    def codes(self, x, b, a0, beta, warm):
        """Raina's solver for the batch `x` from its codes `a0`: (codes, iterations per case)."""
        q = b.T @ b
        r = torch.diagonal(q).clone()
        c = x @ b
        f = case_objectives(x, b, a0, beta) if warm else 0.5 * x.double().square().sum(1)
        if self.variant == "eager":
            return self.codes_eager(a0, f, c, q, r, beta)
        if self.variant in ("packed", "graph"):
            return self.codes_packed(a0, f, c, q, r, beta)
        return self.codes_chunked(a0, f, c, q, r, beta)

    def codes_eager(self, a0, f, c, q, r, beta):
        """The loop as the crate's CPU reference runs it: stopped cases leave after each iteration."""
        codes = a0.clone()
        iterations = torch.full((a0.shape[0],), RAINA_MAX_ITERATIONS, dtype=torch.int32, device=a0.device)
        active = torch.arange(a0.shape[0], device=a0.device)
        a = a0.clone()
        g = a @ q - c
        for iteration in range(1, RAINA_MAX_ITERATIONS + 1):
            if active.numel() == 0:
                break
            if iteration > 1 and (iteration - 1) % GRADIENT_REFRESH == 0:
                g = a @ q - c
            d = directions(a, g, r, beta)
            a, g, f, stop = line_search(a, g, d, d @ q, f, beta, self.steps)
            if iteration == RAINA_MAX_ITERATIONS:
                stop = torch.ones_like(stop)
            done = active[stop]
            codes[done] = a[stop]
            iterations[done] = iteration
            keep = ~stop
            active, a, g, f, c = active[keep], a[keep], g[keep], f[keep], c[keep]
        return codes, iterations

    def state(self, a0, beta):
        m, device = a0.shape[0], a0.device
        return (a0.clone(), torch.zeros_like(a0), torch.ones(m, dtype=torch.bool, device=device), torch.zeros(m, dtype=torch.int32, device=device),
                torch.tensor(beta, dtype=torch.float32, device=device))

    def codes_chunked(self, a0, f, c, q, r, beta):
        """Fixed shapes, stopped cases frozen, a check every CODE_CHUNK iterations."""
        a, g, running, iterations, beta_t = self.state(a0, beta)
        for _ in range(RAINA_MAX_ITERATIONS // CODE_CHUNK):
            a, g, f, running, iterations = self.code_chunk(a, g, f, running, iterations, c, q, r, beta_t, self.steps)
            if not bool(running.any()):
                break
        return a, iterations

    def codes_packed(self, a0, f, c, q, r, beta):
        """As codes_chunked, the running cases packed into the smallest power-of-two bucket that
        holds them whenever it halves (padding slots: copies of a live case, frozen)."""
        m = a0.shape[0]
        codes = a0.clone()
        counts = torch.zeros(m, dtype=torch.int32, device=a0.device)
        a, g, running, iterations, beta_t = self.state(a0, beta)
        cases = torch.arange(m, device=a0.device)
        real, bucket = m, m
        for chunk in range(RAINA_MAX_ITERATIONS // CODE_CHUNK):
            count = m if chunk == 0 else int(running[:real].sum())
            if count == 0:
                break
            if chunk == 0 or power_of_two(count) < bucket:
                keep = torch.arange(m, device=a0.device) if chunk == 0 else running[:real].nonzero().squeeze(1)
                bucket = power_of_two(count)
                slots = torch.cat([keep, keep[:1].expand(bucket - count)])
                a, g, f, c, iterations, cases = a[slots], g[slots], f[slots], c[slots], iterations[slots], cases[slots]
                running = torch.arange(bucket, device=a0.device) < count
                real = count
            a, g, f, running, iterations = self.code_chunk(a, g, f, running, iterations, c, q, r, beta_t, self.steps)
            codes[cases[:real]] = a[:real]
            counts[cases[:real]] = iterations[:real]
        return codes, counts

    # The basis step ---------------------------------------------------------------------------
    def basis(self, b, s, t, half_data_norm2):
        """Projected gradient on B for the objective S and T define: (basis, iterations)."""
        sums = s.abs().sum(1)
        eta = torch.where(sums > 0, 1.0 / torch.where(sums > 0, sums, torch.ones_like(sums)), torch.zeros_like(sums))
        grad = b @ s - t
        objective = half_data_norm2 + 0.5 * (b.double() * (grad.double() - t.double())).sum()
        if self.variant == "eager":
            return self.basis_eager(b, grad, objective, s, t, eta)
        done = ~(eta > 0).any()
        iterations = torch.zeros((), dtype=torch.int32, device=b.device)
        for _ in range(BASIS_MAX_ITERATIONS // BASIS_CHUNK):
            b, grad, objective, done, iterations = self.basis_chunk(b, grad, objective, done, iterations, s, t, eta)
            if bool(done):
                break
        return b, int(iterations)

    def basis_eager(self, b, grad, objective, s, t, eta):
        objective = float(objective)
        iterations = 0
        moving = bool((eta > 0).any())
        while iterations < BASIS_MAX_ITERATIONS and moving:
            iterations += 1
            candidate = b - grad * eta
            norms = torch.linalg.vector_norm(candidate, dim=0)
            candidate = torch.where(norms > 1, candidate / norms, candidate)
            candidate_grad = candidate @ s - t
            change = float(0.5 * ((candidate.double() - b.double()) * (grad.double() + candidate_grad.double())).sum())
            if change > 0:
                break
            b, grad = candidate, candidate_grad
            previous, objective = objective, objective + change
            if -change < BASIS_TOLERANCE * previous:
                break
        return b, iterations


# --- a pass, the problem, the rows ------------------------------------------------------------------

def forgetting_factor(step, eta):
    """scikit-learn's `_update_inner_stats` factor (src/sparse_coding/fit.rs, forgetting_factor)."""
    theta = (step + 1) * eta if step + 1 < eta else eta * eta + step + 1 - eta
    return (theta + 1 - eta) / (theta + 1)


def fit(solver, x, b, codes, beta, batch, passes, device, forgetting=True):
    """`sparse_coding::fit` without whole-set tracking: `passes` passes of a code step and a basis
    step per mini-batch; (basis, codes, seconds of the codes and basis steps, iterations)."""
    m, k = x.shape
    n = b.shape[1]
    s = torch.zeros((n, n), dtype=torch.float32, device=device)
    t = torch.zeros((k, n), dtype=torch.float32, device=device)
    half_data_norm2 = 0.0 if forgetting else 0.5 * x.double().square().sum()
    step = 0
    seconds_codes = seconds_basis = 0.0
    code_means, code_max, basis_iterations = [], 0, []
    for pass_ in range(1, passes + 1):
        for first in range(0, m, batch):
            rows = slice(first, min(first + batch, m))
            xb, old = x[rows], codes[rows]
            started = time.perf_counter()
            if pass_ > 1 and not forgetting:
                s -= old.T @ old
                t -= xb.T @ old
            new, iterations = solver.codes(xb, b, old, beta, warm=pass_ > 1)
            codes[rows] = new
            if forgetting:
                factor = forgetting_factor(step, batch)
                s *= factor
                t *= factor
                half_data_norm2 = factor * half_data_norm2 + 0.5 * xb.double().square().sum()
            step += 1
            s += new.T @ new
            t += xb.T @ new
            synchronise(device)
            coded = time.perf_counter()
            b, steps = solver.basis(b, s, t, half_data_norm2)
            synchronise(device)
            seconds_codes += coded - started
            seconds_basis += time.perf_counter() - coded
            iterations = iterations.double()
            code_means.append(float(iterations.mean()))
            code_max = max(code_max, int(iterations.max()))
            basis_iterations.append(steps)
    return b, codes, seconds_codes, seconds_basis, {"code_iterations_mean": float(np.mean(code_means)), "code_iterations_max": code_max,
                                                    "basis_iterations_mean": float(np.mean(basis_iterations))}


def objective(x, b, codes, beta):
    """1/2 ||X - A B^T||^2 + beta |A|_1 in float64, and the fraction of non-zero codes."""
    residual = x - codes @ b.T
    value = 0.5 * residual.double().square().sum() + beta * codes.double().abs().sum()
    return float(value), float((codes != 0).double().mean())


def encode(solver, x, b, beta, batch):
    """Codes afresh for `b`, from zero, in batches."""
    return torch.cat([solver.codes(x[first:first + batch], b, torch.zeros((min(batch, x.shape[0] - first), b.shape[1]), dtype=torch.float32, device=x.device), beta, warm=False)[0]
                      for first in range(0, x.shape[0], batch)])


def beta_for_sparsity(solver, x, b, target, tolerance=0.05, max_evaluations=40):
    """`sparse_coding::sparsity::beta_for_sparsity` coding with Raina's solver (warm-started from
    the previous evaluation's codes); (beta, fraction)."""
    beta_max = float((x @ b).abs().max())
    codes = torch.zeros((x.shape[0], b.shape[1]), dtype=torch.float32, device=x.device)
    evaluations, best = 0, None

    def evaluate(beta):
        nonlocal codes, evaluations, best
        codes = solver.codes(x, b, codes, beta, warm=evaluations > 0)[0]
        evaluations += 1
        fraction = float((codes != 0).double().mean())
        if best is None or abs(fraction - target) < abs(best[1] - target):
            best = (beta, fraction)
        return fraction

    close = lambda fraction: abs(fraction - target) <= tolerance * target  # noqa: E731
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
        middle = float(np.sqrt(low * high))
        fraction = evaluate(middle)
        if close(fraction):
            return middle, fraction
        low, high = (middle, high) if fraction > target else (low, middle)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--patch", type=int, default=32)
    parser.add_argument("--bases", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--statistics", choices=["forgetting", "whole-set"], default="forgetting")
    parser.add_argument("--sparsities", default="0.03,0.06,0.10", type=lambda v: [float(x) for x in v.split(",")])
    parser.add_argument("--betas", default=None, type=lambda v: [float(x) for x in v.split(",")],
                        help="beta per sparsity (the crate's rows' values) instead of this script's search")
    parser.add_argument("--variants", default=",".join(VARIANTS), type=lambda v: v.split(","))
    parser.add_argument("--repeats", type=int, default=1, help="timed passes per sparsity and variant (the median is `seconds`)")
    parser.add_argument("--tf32", action="store_true", help="also time the fastest variant with TF32 on")
    parser.add_argument("--compile-mode", default="default", help="torch.compile's mode for the compile variant")
    parser.add_argument("--images", nargs="*", help="grey PNG images to cut the patches from (default: the crate's gratings)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    if args.betas is not None and len(args.betas) != len(args.sparsities):
        raise SystemExit(f"--betas has {len(args.betas)} values for {len(args.sparsities)} sparsities")
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"--variants: unknown {sorted(unknown)}; expected some of {', '.join(VARIANTS)}")
    device = torch.device(args.device)
    variants = [v for v in args.variants if v != "graph" or device.type == "cuda"]
    if len(variants) < len(args.variants):
        log("the graph variant needs CUDA: skipped")
    set_tf32(False)

    check_philox()
    images = png_images(args.images) if args.images else grating_images(GRATING_IMAGES, GRATING_SIDE, DATA_SEED)
    k = args.patch * args.patch
    x = torch.from_numpy(centre_and_scale(sample_patches(images, args.patch, args.cases, DATA_SEED))).to(device)
    initial = torch.from_numpy(initial_basis(k, args.bases, BASIS_SEED)).to(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    common = {"peer": "torch", "cases": args.cases, "inputs": k, "bases": args.bases, "batch": args.batch, "passes": args.passes, "statistics": args.statistics,
              "data": "images" if args.images else "gratings", "device": name, "torch": torch.__version__}
    solvers = {}
    search_solver = Solver("chunked", device, args.compile_mode)
    for index, target in enumerate(args.sparsities):
        if args.betas is not None:
            beta, search_fraction = args.betas[index], None
        else:
            beta, search_fraction = beta_for_sparsity(search_solver, x[:min(args.cases, SEARCH_CASES)], initial, target)
        rows = []
        runs = [(v, False) for v in variants]
        for variant, tf32 in runs + ([("best", True)] if args.tf32 else []):
            if variant == "best":
                variant = min(rows, key=lambda r: r["seconds"])["variant"]
            set_tf32(tf32)
            solver = solvers.setdefault((variant, tf32), Solver(variant, device, args.compile_mode))
            started = time.perf_counter()
            solver.prepare(min(args.batch, args.cases), k, args.bases, beta)
            zeros = torch.zeros((min(args.batch, args.cases), args.bases), dtype=torch.float32, device=device)
            b, _ = solver.basis(initial.clone(), *fit_statistics(solver, x[:args.batch], initial, zeros, beta))
            synchronise(device)
            setup_seconds = time.perf_counter() - started
            seconds = []
            for _ in range(args.repeats):
                codes = torch.zeros((args.cases, args.bases), dtype=torch.float32, device=device)
                synchronise(device)
                started = time.perf_counter()
                b, codes, seconds_codes, seconds_basis, extra = fit(solver, x, initial.clone(), codes, beta, args.batch, args.passes, device, args.statistics == "forgetting")
                synchronise(device)
                seconds.append(time.perf_counter() - started)
            stored, stored_fraction = objective(x, b, codes, beta)
            fresh, fresh_fraction = objective(x, b, encode(search_solver, x, b, beta, args.batch), beta)
            row = {**common, "variant": variant, "tf32": tf32, "sparsity_target": target, "beta": beta, "search_nonzero_fraction": search_fraction,
                   "seconds": statistics.median(seconds), "seconds_all": seconds, "seconds_codes": seconds_codes, "seconds_basis": seconds_basis,
                   "setup_seconds": setup_seconds, "objective_stored": stored, "nonzero_fraction_stored": stored_fraction,
                   "objective_raina": fresh, "nonzero_fraction_raina": fresh_fraction, **extra}
            rows.append(row)
            print(json.dumps(row), flush=True)
        set_tf32(False)


def fit_statistics(solver, xb, b, zeros, beta):
    """The warm-up: one batch's code step, and the statistics its basis step takes."""
    codes, _ = solver.codes(xb, b, zeros, beta, warm=False)
    return codes.T @ codes, xb.T @ codes, 0.5 * xb.double().square().sum()


if __name__ == "__main__":
    main()

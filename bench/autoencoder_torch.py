#!/usr/bin/env python3
"""The PyTorch peer of `deepbelief bench --autoencoder`: one full-batch sparse-autoencoder cost
and gradient (UFLDL's sparseAutoencoderCost; Klaus & Welles 2014, Table 6) over --cases
(10,000) for v x v/2 networks, as fast as PyTorch does it in float32.

Precision: float32 throughout, TF32 OFF (torch.backends.cuda.matmul.allow_tf32 = False,
cudnn too, float32 matmul precision "highest"): the same arithmetic as the crate's kernels.

The problem is the crate's, number for number: inputs are the first m*v uniforms of Philox
stream (seed 1, step 1, Purpose::DataSample) and W1, W2 are `Autoencoder::initialise(v, v/2, 1)`
(Philox (1, step 1|2, InitialWeights), uniform in [-r, r), r = sqrt(6)/sqrt(v + h + 1)), biases
zero; lambda = 1e-4, beta = 3, rho = 0.01. So J is comparable with `deepbelief bench
--autoencoder` (the Philox here is checked against autoencoder_numpy.py's, which is checked
against Random123's known answers).

Per size, every variant that runs here is timed (median and minimum of --repeats after
--warmups evaluations); one evaluation is J and the gradient with J read back to the host (a
.item(), so the time includes the synchronisation), the gradient left on the device: the
optimiser-in-the-loop cost, as `deepbelief`'s `resident` row.

  variant          how
  eager-explicit   the formula written out (5 addmm, the element-wise work in between)
  eager-autograd   the forward pass, torch.autograd.grad for the gradient
  compile-*        the same through torch.compile (--compile-mode; `auto` tries max-autotune
                   and falls back to the default mode once one compilation takes longer than
                   --compile-budget-s; once compiling has taken --compile-total-s in all, later
                   sizes skip these variants, and say so)
  graph-*          the eager version captured once in a CUDA graph and replayed (CUDA only)

After each size a row with variant "best" repeats the fastest one (`best_of` names it), with
the largest relative difference of J between the variants and, up to --check-up-to, of the
explicit gradient against autograd's (max |difference| / max |g| over the four blocks).

Prints one JSON line per row: {size, hidden, cases, backend, variant, seconds_median,
seconds_min, seconds, warmups, J, gflops, device, ...}. Runs on the CPU too (--device cpu, or
where there is no CUDA device), for a smoke test; there the CUDA-graph variants are skipped.

usage: autoencoder_torch.py [--sizes 64,128,...] [--cases 10000] [--repeats 10] [--device cuda|cpu]
"""
import argparse
import importlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
if hasattr(torch, "set_float32_matmul_precision"):
    torch.set_float32_matmul_precision("highest")

SIZES = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
MASK32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
PURPOSE_INITIAL_WEIGHTS, PURPOSE_DATA_SAMPLE = 8, 9
DATA_SEED, DATA_STEP, INIT_SEED = 1, 1, 1


def log(message):
    print(message, file=sys.stderr, flush=True)


# --- Philox4x32-10 in int64 tensors (src/rng.rs), one block per 4 consecutive values ---------

def mulhilo(a, c):
    """(hi, lo) 32-bit words of the constant a (< 2^32) times each word of c, without int64
    overflow: c split in 16-bit halves."""
    t = a * (c & 0xFFFF)
    u = a * (c >> 16)
    low = t + ((u & 0xFFFF) << 16)
    return ((u >> 16) + (low >> 32)) & MASK32, low & MASK32


def philox_blocks(blocks, step, purpose, seed):
    """The four words of Philox block b = counter (b, step, step >> 32, purpose | (b >> 32) << 8)."""
    c0 = blocks & MASK32
    c1 = torch.full_like(blocks, step & MASK32)
    c2 = torch.full_like(blocks, step >> 32)
    c3 = ((blocks >> 32) << 8) | purpose
    k0, k1 = seed & MASK32, seed >> 32
    for round_ in range(10):
        if round_ > 0:
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        hi0, lo0 = mulhilo(PHILOX_M0, c0)
        hi1, lo1 = mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return torch.stack([c0, c1, c2, c3], dim=1)


def uniforms(seed, step, purpose, count, device, chunk_blocks=1 << 22):
    """`RngStream::new(seed, step, purpose).uniform(i)` for i < count, float32 (exact)."""
    out = torch.empty(count, dtype=torch.float32, device=device)
    n_blocks = (count + 3) // 4
    for start in range(0, n_blocks, chunk_blocks):
        blocks = torch.arange(start, min(start + chunk_blocks, n_blocks), dtype=torch.int64, device=device)
        words = philox_blocks(blocks, step, purpose, seed).reshape(-1)
        first = 4 * start
        values = (words >> 8).to(torch.float32) * (1.0 / 16777216.0)
        out[first:first + values.numel()] = values[: count - first]
    return out


def check_philox(device):
    """Against autoencoder_numpy.py's Philox (itself checked against Random123's answers)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import autoencoder_numpy
    autoencoder_numpy.check_philox()
    for seed, step, purpose in [(DATA_SEED, DATA_STEP, PURPOSE_DATA_SAMPLE), (INIT_SEED, 2, PURPOSE_INITIAL_WEIGHTS), (0xDEADBEEF12345, 7, 3)]:
        expected = autoencoder_numpy.uniforms(seed, step, purpose, 1003).astype(np.float32)
        got = uniforms(seed, step, purpose, 1003, device).cpu().numpy()
        if not np.array_equal(got, expected):
            raise SystemExit(f"Philox in torch differs from autoencoder_numpy.uniforms({seed}, {step}, {purpose}) at {np.flatnonzero(got != expected)[:5]}")


def problem(v, cases, device):
    """The crate's inputs and initial parameters for a v x v/2 network."""
    h = v // 2
    x = uniforms(DATA_SEED, DATA_STEP, PURPOSE_DATA_SAMPLE, cases * v, device).reshape(cases, v)
    r = float(np.float32(math.sqrt(6.0) / math.sqrt(v + h + 1)))
    w1, w2 = ((2.0 * uniforms(INIT_SEED, step, PURPOSE_INITIAL_WEIGHTS, v * h, device) - 1.0).mul_(r).reshape(v, h) for step in (1, 2))
    return x, (w1, w2, torch.zeros(h, device=device), torch.zeros(v, device=device))


# --- The cost: written out, and by autograd ---------------------------------------------------

def make_functions(lam, rho, beta):
    def forward(w1, w2, b1, b2, x):
        m = x.shape[0]
        a2 = torch.sigmoid(torch.addmm(b1, x, w1))
        rho_hat = a2.mean(0)
        a3 = torch.sigmoid(torch.addmm(b2, a2, w2.t()))
        error = a3 - x
        reconstruction = 0.5 * error.square().sum() / m
        decay = 0.5 * lam * (w1.square().sum() + w2.square().sum())
        kl = rho * torch.log(rho / rho_hat) + (1 - rho) * torch.log((1 - rho) / (1 - rho_hat))
        return a2, rho_hat, a3, error, reconstruction + decay + beta * kl.sum()

    def cost(w1, w2, b1, b2, x):
        return forward(w1, w2, b1, b2, x)[-1]

    def explicit(w1, w2, b1, b2, x):
        m = x.shape[0]
        a2, rho_hat, a3, error, j = forward(w1, w2, b1, b2, x)
        delta3 = error * a3 * (1 - a3)
        sparsity = beta * (-rho / rho_hat + (1 - rho) / (1 - rho_hat))
        delta2 = torch.addmm(sparsity, delta3, w2) * a2 * (1 - a2)
        g_w2 = torch.addmm(w2, delta3.t(), a2, beta=lam, alpha=1.0 / m)
        g_w1 = torch.addmm(w1, x.t(), delta2, beta=lam, alpha=1.0 / m)
        return j, (g_w1, g_w2, delta2.sum(0) / m, delta3.sum(0) / m)

    return cost, explicit


def autograd_of(cost):
    def evaluate(w1, w2, b1, b2, x):
        j = cost(w1, w2, b1, b2, x)
        return j, torch.autograd.grad(j, (w1, w2, b1, b2))
    return evaluate


# --- Timing -------------------------------------------------------------------------------------

def timed(step, warmups, repeats):
    """`step()` returns J as a 0-d tensor; float() reads it back (and synchronises)."""
    j = float("nan")
    for _ in range(warmups):
        j = float(step())
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        j = float(step())
        runs.append(time.perf_counter() - started)
    return runs, j


def graphed(evaluate, inputs, device):
    """`evaluate(*inputs)` captured in a CUDA graph (after warm-up on a side stream, as CUDA
    graph capture requires); returns replay() -> J, the gradient staying in the graph's buffers."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            evaluate(*inputs)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_j, static_gradient = evaluate(*inputs)

    def replay():
        graph.replay()
        return static_j
    return replay, (graph, static_gradient)


def mark_step():
    if hasattr(torch, "compiler") and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
        torch.compiler.cudagraph_mark_step_begin()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), type=lambda s: [int(v) for v in s.split(",")])
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--warmups", type=int, default=3)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--variants", default="eager-explicit,eager-autograd,graph-explicit,graph-autograd,compile-explicit,compile-autograd",
                   help="in this order (the compiled ones last: a long compilation cut short by a time limit loses only them)")
    p.add_argument("--compile-mode", default="auto", help="auto (CUDA: max-autotune, falling back to default; CPU: default), or a torch.compile mode")
    p.add_argument("--compile-budget-s", type=float, default=40.0, help="auto: a size whose compilation takes longer switches later sizes to the default mode")
    p.add_argument("--compile-total-s", type=float, default=float("inf"), help="compile-* variants stop (for later sizes) once compiling has taken this long in all")
    p.add_argument("--time-budget-s", type=float, default=float("inf"), help="sizes not started by then are skipped (and said so)")
    p.add_argument("--check-up-to", type=int, default=2048, help="sizes up to this v compare the explicit gradient with autograd's")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU: torch threads (default: every core)")
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--sparsity-target", type=float, default=0.01)
    p.add_argument("--sparsity-weight", type=float, default=3.0)
    a = p.parse_args()

    started = time.perf_counter()
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    torch.set_num_threads(a.threads)
    wanted = a.variants.split(",")
    unknown = [v for v in wanted if v.split("-", 1)[0] not in ("eager", "compile", "graph") or v.split("-", 1)[-1] not in ("explicit", "autograd")]
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}; expected (eager|compile|graph)-(explicit|autograd)")
    if not cuda and any(v.startswith("graph-") for v in wanted):
        log("skipped: graph-* variants (CUDA graphs need a CUDA device)")
        wanted = [v for v in wanted if not v.startswith("graph-")]
    if not hasattr(torch, "compile") and any(v.startswith("compile-") for v in wanted):
        log(f"skipped: compile-* variants (torch {torch.__version__} has no torch.compile)")
        wanted = [v for v in wanted if not v.startswith("compile-")]
    compile_mode = a.compile_mode if a.compile_mode != "auto" else ("max-autotune" if cuda else "default")
    check_philox(device)

    name = torch.cuda.get_device_name(device) if cuda else f"CPU ({torch.get_num_threads()} threads)"
    common = {"backend": f"torch-{device.type}", "device": name, "torch": torch.__version__, "tf32": torch.backends.cuda.matmul.allow_tf32,
              "dtype": "float32", "threads": None if cuda else torch.get_num_threads()}
    cost, explicit = make_functions(a.weight_decay, a.sparsity_target, a.sparsity_weight)
    eager = {"explicit": explicit, "autograd": autograd_of(cost)}

    compile_total = 0.0
    for v in a.sizes:
        h = v // 2
        if compile_total > a.compile_total_s and any(w.startswith("compile-") for w in wanted):
            log(f"skipped: compile-* variants from {v}x{h} on (compiling took {compile_total:.0f} s, over --compile-total-s {a.compile_total_s:.0f})")
            wanted = [w for w in wanted if not w.startswith("compile-")]
            print(json.dumps({"size": v, "hidden": h, "cases": a.cases, **common, "variant": "compile-*", "skipped": f"this size and the later ones: compiling took {compile_total:.0f} s in all, over --compile-total-s {a.compile_total_s:.0f}"}), flush=True)
        if time.perf_counter() - started > a.time_budget_s:
            log(f"skipped: torch {v}x{h} (time budget of {a.time_budget_s:.0f} s spent)")
            print(json.dumps({"size": v, "hidden": h, "cases": a.cases, **common, "variant": "skipped", "skipped": f"time budget {a.time_budget_s:.0f} s"}), flush=True)
            continue
        x, theta = problem(v, a.cases, device)
        leaves = tuple(t.clone().requires_grad_(True) for t in theta)
        inputs = {"explicit": (*theta, x), "autograd": (*leaves, x)}
        flops = 10.0 * a.cases * v * h
        rows = []
        keep = []
        for variant in wanted:
            kind, formula = variant.split("-", 1)
            extra = {}
            try:
                if kind == "eager":
                    step = lambda f=eager[formula], i=inputs[formula]: f(*i)[0]
                elif kind == "graph":
                    replay, held = graphed(eager[formula], inputs[formula], device)
                    keep.append(held)
                    step = replay
                else:
                    importlib.import_module("torch._dynamo").reset()
                    if formula == "explicit":
                        compiled = torch.compile(explicit, mode=compile_mode, dynamic=False)
                    else:
                        compiled = autograd_of(torch.compile(cost, mode=compile_mode, dynamic=False))

                    def step(f=compiled, i=inputs[formula]):
                        mark_step()
                        return f(*i)[0]
                    t0 = time.perf_counter()
                    float(step())
                    compile_s = time.perf_counter() - t0
                    compile_total += compile_s
                    extra = {"compile_mode": compile_mode, "compile_s": compile_s}
                    if a.compile_mode == "auto" and compile_mode != "default" and compile_s > a.compile_budget_s:
                        log(f"torch.compile mode {compile_mode} took {compile_s:.0f} s at {v}x{h} (budget {a.compile_budget_s:.0f} s): later sizes use mode default")
                        compile_mode = "default"
                runs, j = timed(step, a.warmups, a.repeats)
            except Exception as e:  # a variant that fails is reported, the others still run
                log(f"failed: torch {variant} at {v}x{h}: {type(e).__name__}: {e}")
                print(json.dumps({"size": v, "hidden": h, "cases": a.cases, **common, "variant": variant, "failed": f"{type(e).__name__}: {e}"[:500]}), flush=True)
                continue
            median = statistics.median(runs)
            row = {"size": v, "hidden": h, "cases": a.cases, **common, "variant": variant, "seconds_median": median, "seconds_min": min(runs),
                   "seconds": runs, "warmups": a.warmups, "J": j, "gflops": flops / median / 1e9, **extra}
            rows.append(row)
            print(json.dumps(row), flush=True)
            log(f"torch {v}x{h} {variant}: median {median:.5f} s, min {min(runs):.5f} s, J {j:.6f}")
        if rows:
            best = min(rows, key=lambda r: r["seconds_median"])
            js = [r["J"] for r in rows]
            summary = {**best, "variant": "best", "best_of": best["variant"],
                       "J_spread": (max(js) - min(js)) / abs(best["J"]) if best["J"] else None}
            if v <= a.check_up_to:
                j_explicit, g_explicit = explicit(*inputs["explicit"])
                _, g_autograd = eager["autograd"](*inputs["autograd"])
                summary["gradient_check"] = max(float((ge - ga).abs().max() / ga.abs().max().clamp_min(1e-30)) for ge, ga in zip(g_explicit, g_autograd))
            print(json.dumps(summary), flush=True)
        del x, theta, leaves, inputs, keep
        if cuda:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

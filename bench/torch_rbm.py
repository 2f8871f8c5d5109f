"""PyTorch peers of `deepbelief bench --backend gpu`: the same CD-1 loop as the crate's
GpuCdTrainer with CdConfig::hinton(), written the plain way and the strongest ways a PyTorch
user would (issue 22), so every GPU figure of ours is a ratio against the best of them.

  python3 bench/torch_rbm.py --images train-10k-images-idx3-ubyte.gz --json

Shapes (--shapes):
  mnist  784-500, batches of 100, 60,000 cases (--cases: the 10k MNIST file tiled 6x), lr 0.1:
         seconds per epoch (ours: gpu_epoch_s);
  raina  Raina et al. (2009) Table 2's 4096x11008 (--raina-shape), batches of 192, random binary
         bytes (255 with probability 0.15), --raina-batches (300) batches an epoch, lr 0.01:
         seconds per 1M examples (ours: raina[].seconds_per_million);
  and an 8192^3 fp32 product (--sgemm; 0 skips it): cuBLAS's TFLOP/s against our square GEMM.

Variants (--variants; each under try/except, so one that fails still leaves the other rows):
  eager             the step as plain torch calls, the batch gathered by Python slicing of a
                    device-side shuffled order (the loop this script always timed);
  cuda-graph        the step captured once with torch.cuda.graph and replayed per batch; the
                    batch is gathered inside the graph from the static order through a device
                    counter (start += batch), so one replay is the whole batch;
  cuda-graph-epoch  the same step captured --batches times in a row: one replay per epoch;
  compile           torch.compile(step, mode=--compile-mode, default
                    "max-autotune-no-cudagraphs"), captured in a CUDA graph (per batch or per
                    epoch, whichever of the two eager graphs ran faster for the shape); a mode
                    with Inductor's own CUDA graphs ("max-autotune", "reduce-overhead") is
                    called per batch instead;
  tf32              the fastest fp32 variant of each shape again with TF32 on (and the compiled
                    one too where it won): a separate row, never the fp32 figure.
Order: the sgemm rows, then the eager forms of every shape, their TF32 rows, then compile (the
slow part: autotuning; a time limit cut there keeps the rest). Every fp32 row runs with TF32 off
(allow_tf32 False, float32 matmul precision "highest").

Each figure is the median of --repeats epochs (3 for raina) after untimed ones for at least
--warm-up-seconds (the GPU's clock rises only after sustained work; ours warms up the same
way, bench::gpu_warm_up_seconds). An epoch ends with one read-back of the summed squared
error (float(err): the host waits for the device), as ours reads its epoch scalars once.

The step is ours (src/gpu/trainer, src/train/contrastive_divergence.rs, weights_update.rs):
  v0 = data[order[batch]] / 255 (u8 on the device, gathered per batch);
  h0 = sigmoid(v0 W + c); hs = Bernoulli(h0) sample; v1 = sigmoid(hs W' + b) (mean field, not
  sampled); h1 = sigmoid(v1 W + c) (probabilities);
  G = (v0'h0 - v1'h1) / rows - 2e-4 W (L2 penalty on the weights only); VW = m VW + lr G;
  W += VW; biases: Vb = m Vb + lr (mean v0 - mean v1), Vc likewise with h0, h1, no penalty;
  err += sum (v0 - v1)^2.
Differences, all in ours' disfavour unless said:
  - ours also computes, every batch, the cosine between this gradient and the previous one
    (kept in a second buffer), the gradient's RMS and the largest |increment| (the adaptive
    schedule's inputs and the page's charts), a per-batch log of them, and max |W| at the
    epoch's end; PyTorch computes none of these;
  - ours shuffles on the host (ChaCha, Fisher-Yates) and uploads the order each epoch;
    PyTorch's randperm runs on the device;
  - momentum: ours is 0.5 for 5 epochs, then 0.9 (hinton()); here it stays 0.5 (same work);
  - random numbers: ours Philox per (seed, batch, purpose); here torch's generator (seeded 1);
    initial weights: ours Masters' initialisation, here small uniform ones (same work);
  - the crate's sparsity term is zero under hinton(); ours may still read its (zero) vector;
  - an epoch's read-back: ours the training state, the per-batch log and max |W| (a few KB);
    here one float.
The gather inside the graphs (rather than a copy into a static input before each replay)
is the stronger form: nothing runs outside the graph between batches.
CPU: --device cpu runs eager and compile (no CUDA graphs, no TF32) at any size, for a smoke
test, e.g. --device cpu --cases 1000 --raina-shape 64x128 --raina-batches 4 --sgemm 256.
"""
import argparse, gzip, json, sys, time
import numpy as np
import torch


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")


set_tf32(False)

VARIANTS = ["eager", "cuda-graph", "cuda-graph-epoch", "compile", "tf32"]
GRAPHS = ["cuda-graph", "cuda-graph-epoch"]
WARM_UP_SECONDS = 1.0


def log(message):
    print(message, file=sys.stderr, flush=True)


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols)


def make_update(batch, lr, momentum, weight_penalty):
    """One CD-1 batch on `v0_u8` (rows of bytes); model tensors updated in place, the squared
    error added into `err`. `grad`: a buffer for G, or None to allocate it (torch.compile)."""
    scale = 1.0 / batch

    def update(w, b, c, vw, vb, vc, grad, err, v0_u8):
        v0 = v0_u8.float().div(255.0)
        h0 = torch.sigmoid(torch.addmm(c, v0, w))
        hs = (torch.rand_like(h0) < h0).float()
        v1 = torch.sigmoid(torch.addmm(b, hs, w.t()))
        h1 = torch.sigmoid(torch.addmm(c, v1, w))
        # G = v0'h0 / rows - penalty W, then - v1'h1 / rows: the scalings ride on the products.
        if grad is None:
            g = torch.addmm(w, v0.t(), h0, beta=-weight_penalty, alpha=scale)
        else:
            g = torch.addmm(w, v0.t(), h0, beta=-weight_penalty, alpha=scale, out=grad)
        g.addmm_(v1.t(), h1, alpha=-scale)
        vw.mul_(momentum).add_(g, alpha=lr)
        w.add_(vw)
        vb.mul_(momentum).add_(v0.mean(0) - v1.mean(0), alpha=lr)
        b.add_(vb)
        vc.mul_(momentum).add_(h0.mean(0) - h1.mean(0), alpha=lr)
        c.add_(vc)
        err.add_((v0 - v1).square().sum())

    return update


def make_gathered(update, batch):
    """`update` on the next batch of the static `order`, found through the device counter
    `start` (advanced here): no host value changes between batches, so it can be captured."""

    def step(w, b, c, vw, vb, vc, grad, err, data, order, start, positions):
        rows = order.index_select(0, start + positions)
        update(w, b, c, vw, vb, vc, grad, err, data.index_select(0, rows))
        start.add_(batch)

    return step


class Run:
    """A fresh model (seeded) and the static tensors of one (shape, variant)."""

    def __init__(self, data, nh, batch, lr, dev):
        torch.manual_seed(1)
        nv = data.shape[1]
        self.data, self.batch, self.dev = data, batch, dev
        self.n = data.shape[0] - data.shape[0] % batch
        self.batches = self.n // batch
        self.w = (torch.rand(nv, nh, device=dev) - 0.5) * (0.1 / (nv * nh) ** 0.25)
        self.b = torch.zeros(nv, device=dev)
        self.c = torch.zeros(nh, device=dev)
        self.vw, self.vb, self.vc = torch.zeros_like(self.w), torch.zeros_like(self.b), torch.zeros_like(self.c)
        self.grad = torch.empty_like(self.w)
        self.err = torch.zeros((), device=dev)
        self.order = torch.randperm(self.n, device=dev)
        self.start = torch.zeros((), dtype=torch.int64, device=dev)
        self.positions = torch.arange(batch, dtype=torch.int64, device=dev)
        self.update = make_update(batch, lr, 0.5, 0.0002)
        self.step = make_gathered(self.update, batch)

    def model(self):
        return (self.w, self.b, self.c, self.vw, self.vb, self.vc)

    def static(self, grad):
        return (*self.model(), grad, self.err, self.data, self.order, self.start, self.positions)

    def reset(self):
        """An epoch's start: a new order into the static buffer, counter and error to zero."""
        self.order.copy_(torch.randperm(self.n, device=self.dev))
        self.start.zero_()
        self.err.zero_()

    def eager_epoch(self):
        order = torch.randperm(self.n, device=self.dev)
        self.err.zero_()
        for s in range(0, self.n, self.batch):
            self.update(*self.model(), self.grad, self.err, self.data[order[s:s + self.batch]])
        return float(self.err)  # one read-back per epoch, as the crate

    def captured(self, step, grad, per_epoch):
        """`step` warmed up on a side stream (compiling it, if compiled), then captured once
        (per_epoch: `batches` times in a row); returns the epoch function."""
        args = self.static(grad)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.reset()
            for _ in range(3):
                step(*args)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(self.batches if per_epoch else 1):
                step(*args)
        self.graph = graph  # kept alive with the run
        replays = 1 if per_epoch else self.batches

        def epoch():
            self.reset()
            for _ in range(replays):
                graph.replay()
            return float(self.err)
        return epoch

    def called(self, step, grad, before_each):
        """`step` called per batch (CPU, or a compiled step with Inductor's own graphs)."""
        args = self.static(grad)

        def epoch():
            self.reset()
            for _ in range(self.batches):
                before_each()
                step(*args)
            return float(self.err)
        return epoch


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, runs, dev):
    # Untimed calls for at least WARM_UP_SECONDS: the GPU's clock rises only after sustained
    # work (ours warms up the same way, bench::gpu_warm_up_seconds).
    started = time.perf_counter()
    fn()
    sync(dev)
    while time.perf_counter() - started < WARM_UP_SECONDS:
        fn()
        sync(dev)
    times, value = [], None
    for _ in range(runs):
        t = time.perf_counter()
        value = fn()
        sync(dev)
        times.append(time.perf_counter() - t)
    return float(np.median(times)), times, value


def mark_step():
    if hasattr(torch, "compiler") and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
        torch.compiler.cudagraph_mark_step_begin()


def reset_dynamo():
    import torch._dynamo
    torch._dynamo.reset()


def build(run, variant, a, graph_kind):
    """The epoch function of `variant` on `run`, and what building it took."""
    cuda = run.dev.type == "cuda"
    if variant == "eager":
        return run.eager_epoch, {}
    if variant in GRAPHS:
        t = time.perf_counter()
        epoch = run.captured(run.step, run.grad, variant == "cuda-graph-epoch")
        return epoch, {"setup_s": time.perf_counter() - t}
    # compile: the gathered step compiled whole (gather, products, updates, error, counter).
    reset_dynamo()
    compiled = torch.compile(run.step, mode=a.compile_mode, dynamic=False)
    own_graphs = a.compile_mode in ("reduce-overhead", "max-autotune")
    t = time.perf_counter()
    if cuda and not own_graphs:
        epoch = run.captured(compiled, None, graph_kind == "epoch")
        extra = {"graph": graph_kind}
    else:
        epoch = run.called(compiled, None, mark_step if own_graphs else (lambda: None))
        epoch()  # compiles
        extra = {"graph": "inductor" if own_graphs and cuda else "none"}
    return epoch, {"compile_mode": a.compile_mode, "setup_s": time.perf_counter() - t, **extra}


def main():
    global WARM_UP_SECONDS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", default="../shared/data/mnist/train-10k-images-idx3-ubyte.gz")
    p.add_argument("--cases", type=int, default=60000, help="mnist: the file's cases tiled to this many (rounded down to whole batches)")
    p.add_argument("--repeats", type=int, default=5, help="timed epochs of the mnist shape (raina: 3)")
    p.add_argument("--shapes", default="mnist,raina")
    p.add_argument("--raina-shape", default="4096x11008", help="visible x hidden")
    p.add_argument("--raina-batches", type=int, default=300)
    p.add_argument("--sgemm", type=int, default=8192, help="n of the n^3 reference product (0: none)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="any of " + ",".join(VARIANTS))
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    p.add_argument("--warm-up-seconds", type=float, default=WARM_UP_SECONDS)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--json", action="store_true", help="one JSON line per row (else readable lines)")
    a = p.parse_args()
    WARM_UP_SECONDS = a.warm_up_seconds
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    wanted = a.variants.split(",")
    unknown = [v for v in wanted if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}; expected some of {VARIANTS}")
    if not cuda:
        skipped = [v for v in wanted if v in GRAPHS or v == "tf32"]
        if skipped:
            log(f"skipped on {dev}: {skipped} (CUDA only)")
        wanted = [v for v in wanted if v not in skipped]
    common = {"peer": "torch", "device": torch.cuda.get_device_name(dev) if cuda else f"CPU ({torch.get_num_threads()} threads)",
              "torch": torch.__version__}
    rows = []

    def emit(row):
        row = {**common, **row}
        rows.append(row)
        print(json.dumps(row) if a.json else " ".join(f"{k}={v}" for k, v in row.items() if k not in common and k != "runs_s"), flush=True)

    def set_precision(precision):
        if cuda:
            set_tf32(precision == "tf32")

    # The reference product, fp32 then TF32.
    if a.sgemm > 0:
        for precision in ["fp32"] + (["tf32"] if "tf32" in wanted else []):
            try:
                set_precision(precision)
                x = torch.randn(a.sgemm, a.sgemm, device=dev)
                seconds, runs, _ = timed(lambda: torch.mm(x, x), 10, dev)
                emit({"shape": "sgemm", "n": a.sgemm, "variant": "mm", "precision": precision, "seconds_median": seconds, "runs_s": runs,
                      "tflops": 2 * a.sgemm ** 3 / seconds / 1e12})
                del x
            except Exception as e:
                emit({"shape": "sgemm", "n": a.sgemm, "variant": "mm", "precision": precision, "failed": f"{type(e).__name__}: {e}"[:500]})
        set_precision("fp32")

    shapes = {}
    for name in a.shapes.split(","):
        if name == "mnist":
            images = load_idx(a.images)
            tiled = np.concatenate([images] * (a.cases // len(images) + 1))[: a.cases]
            shapes[name] = dict(data=torch.from_numpy(np.ascontiguousarray(tiled)).to(dev), nh=500, batch=100, lr=0.1, repeats=a.repeats)
        elif name == "raina":
            nv, nh = (int(v) for v in a.raina_shape.lower().split("x"))
            torch.manual_seed(42)
            data = (torch.rand(192 * a.raina_batches, nv, device=dev) < 0.15).to(torch.uint8) * 255
            shapes[name] = dict(data=data, nh=nh, batch=192, lr=0.01, repeats=3)
        else:
            raise SystemExit(f"--shapes: unknown {name!r}; expected mnist and/or raina")

    def measure(name, variant, precision, graph_kind="epoch"):
        """Times one (shape, variant, precision); its row, or None where it failed."""
        s = shapes[name]
        nv = s["data"].shape[1]
        head = {"shape": name, "n_visible": nv, "n_hidden": s["nh"], "batch": s["batch"], "variant": variant, "precision": precision}
        run = epoch = None
        try:
            set_precision(precision)
            run = Run(s["data"], s["nh"], s["batch"], s["lr"], dev)
            epoch, extra = build(run, variant, a, graph_kind)
            seconds, runs, err = timed(epoch, s["repeats"], dev)
            row = {**head, "cases": run.n, "batches": run.batches, "seconds_median": seconds, "runs_s": runs,
                   "reconstruction_error": err / (run.n * nv), **extra}
            if name == "mnist":
                row["epoch_s"] = seconds
            else:
                row["s_per_million"] = seconds / run.n * 1e6
            emit(row)
            return row
        except Exception as e:  # the other variants still run
            log(f"failed: {name} {variant} {precision}: {type(e).__name__}: {e}")
            emit({**head, "failed": f"{type(e).__name__}: {e}"[:500]})
            return None
        finally:
            set_precision("fp32")
            run = epoch = None  # the graph and its memory pool go with them
            if cuda:
                try:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                except Exception as e:  # a broken context fails the next rows, not this loop
                    log(f"after {name} {variant} {precision}: {type(e).__name__}: {e}")

    def key(row):
        return row["seconds_median"]

    best = {}  # shape -> fastest fp32 row so far
    for name in shapes:
        for variant in ("eager", *GRAPHS):
            if variant in wanted:
                row = measure(name, variant, "fp32")
                if row and (name not in best or key(row) < key(best[name])):
                    best[name] = row
    if "tf32" in wanted:
        for name, row in best.items():
            measure(name, row["variant"], "tf32", row.get("graph", "epoch"))
    if "compile" in wanted:
        for name in shapes:
            graphs = [r for r in rows if r.get("shape") == name and r.get("variant") in GRAPHS and r.get("precision") == "fp32" and "seconds_median" in r]
            graph_kind = "batch" if graphs and min(graphs, key=key)["variant"] == "cuda-graph" else "epoch"
            row = measure(name, "compile", "fp32", graph_kind)
            if row and (name not in best or key(row) < key(best[name])):
                best[name] = row
                if "tf32" in wanted:
                    measure(name, "compile", "tf32", graph_kind)

    def fastest(precision):
        out = {}
        for r in rows:
            if r.get("precision") == precision and "seconds_median" in r:
                if r["shape"] not in out or (r["tflops"] > out[r["shape"]]["tflops"] if r["shape"] == "sgemm" else key(r) < key(out[r["shape"]])):
                    out[r["shape"]] = r
        keep = ("variant", "epoch_s", "s_per_million", "tflops", "graph")
        return {shape: {k: v for k, v in r.items() if k in keep} for shape, r in out.items()}

    fp32, tf32 = fastest("fp32"), fastest("tf32")
    summary = {**common, "summary": True, "fastest_fp32": fp32, "fastest_tf32": tf32,
               # The fields this script printed before issue 22, now the fastest fp32 variant's.
               "torch_epoch_s": fp32.get("mnist", {}).get("epoch_s"),
               "raina_4096x11008_s_per_million": fp32.get("raina", {}).get("s_per_million") if a.raina_shape == "4096x11008" else None,
               "sgemm_8192_tflops": fp32.get("sgemm", {}).get("tflops") if a.sgemm == 8192 else None}
    print(json.dumps(summary) if a.json else summary, flush=True)


if __name__ == "__main__":
    main()

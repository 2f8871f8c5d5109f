#!/usr/bin/env bash
# Issue 18's Table 4 replica (Raina, Madhavan & Ng 2009: one pass of sparse coding over 5,000
# 32x32 patches, 1,024 bases, mini-batches of 1,000, beta for 3/6/10% non-zero codes) on the H100
# device machine: ours and PyTorch's port of the same algorithm in one run, at most
# GPU_TIMEOUT_S + TORCH_TIMEOUT_S + CPU_S = 570 s by default (under the device tool's 600 s per
# command). Every figure is a JSON line in $OUT/sc_*.jsonl, a table in $OUT/sc_summary.txt.
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)
# and the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md):
#
#   bash bench/sparse_coding_device.sh            (device run: carry [".sweep", ".gl"])
#
# In this order, each step under `timeout` (what it printed before that stays in its file):
#   1. ours on the GPU: deepbelief bench --sparse-coding --backend gpu (Raina's solver on the
#      device after one untimed warm-up pass; seconds = the steps with everything resident,
#      seconds_with_transfers adds the upload and the read-back; beta searched on the CPU).
#   2. PyTorch on the GPU: bench/sparse_coding_torch.py with ours' beta of each sparsity
#      (--betas, to the last digit), fp32 with TF32 off, every variant (eager, chunked, packed,
#      graph, compile) and a TF32 row of the fastest; --repeats passes each, the median.
#   3. (CPU_S > 0) the CPU path of both on CPU_THREADS cores, Raina's solver only: ours
#      (bench --sparse-coding --backend cpu --solvers raina, RAYON_NUM_THREADS) and PyTorch's
#      eager variant (--device cpu, torch.set_num_threads through OMP_NUM_THREADS); skipped
#      when the time left for it is spent.
#
# Knobs (environment): SPARSITIES, CASES, PATCH, BASES, BATCH, REPEATS, VARIANTS, GPU_TIMEOUT_S,
# TORCH_TIMEOUT_S, CPU_S (seconds for step 3 in all; 0 skips it), CPU_THREADS, BIN, TORCH_DEVICE
# (cuda; cpu runs step 2 on the CPU: a smoke test of this script where there is no CUDA, e.g.
#  SPARSITIES=0.1,0.2 CASES=200 PATCH=6 BASES=16 BATCH=100 TORCH_DEVICE=cpu VARIANTS=eager,packed
#  WGPU_BACKEND=vulkan VK_DRIVER_FILES=<lavapipe's ICD> BIN=target/release/deepbelief).
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/sparse_coding_device}
mkdir -p "$OUT"
LOG=$OUT/sc.log
: >"$LOG"
SPARSITIES=${SPARSITIES:-0.03,0.06,0.10}
CASES=${CASES:-5000}
PATCH=${PATCH:-32}
BASES=${BASES:-1024}
BATCH=${BATCH:-1000}
REPEATS=${REPEATS:-3}
VARIANTS=${VARIANTS:-eager,chunked,packed,graph,compile}
GPU_TIMEOUT_S=${GPU_TIMEOUT_S:-180}
TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-270}
CPU_S=${CPU_S:-120}
CPU_THREADS=${CPU_THREADS:-4}
BIN=${BIN:-.sweep/bin/deepbelief}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
SHAPE=(--cases "$CASES" --patch "$PATCH" --bases "$BASES")
export PYTHONUNBUFFERED=1
START=$(date +%s)
FAILED=()

say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG" >&2; }

if [ ! -x "$BIN" ] || ! "$BIN" bench --help | grep -q -- --coding-batch; then
  say "error: $BIN is missing or has no 'bench --sparse-coding' (build it: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)"
  exit 2
fi

# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh

{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc); CPU step threads: $CPU_THREADS; shape: $CASES x ${PATCH}x$PATCH, $BASES bases, batches of $BATCH; sparsities $SPARSITIES"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  python3 -c 'import numpy, torch, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}; $(ldconfig -p | grep -c libvulkan) libvulkan entries"
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/sc_env.txt" 2>&1
cat "$OUT/sc_env.txt" >&2

# --- 1. Ours on the GPU ---------------------------------------------------------------------------
say "ours GPU (wgpu, Vulkan): bench --sparse-coding --backend gpu, at most ${GPU_TIMEOUT_S} s"
if ! timeout "$GPU_TIMEOUT_S" "$BIN" bench --sparse-coding --backend gpu "${SHAPE[@]}" --coding-batch "$BATCH" --sparsities "$SPARSITIES" \
  --solvers raina --json >"$OUT/sc_ours_gpu.jsonl" 2>>"$LOG"; then
  FAILED+=("ours gpu")
fi

# ours' beta per sparsity, in --sparsities order (every sparsity measured, else the torch script searches)
BETAS=$(python3 - "$OUT/sc_ours_gpu.jsonl" "$SPARSITIES" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
betas = {r["sparsity_target"]: r["beta"] for r in rows}
wanted = [float(s) for s in sys.argv[2].split(",")]
print(",".join(repr(betas[s]) for s in wanted) if all(s in betas for s in wanted) else "")
PY
)
BETA_ARGS=()
if [ -n "$BETAS" ]; then BETA_ARGS=(--betas "$BETAS"); else say "no beta from ours for every sparsity: the torch script searches its own"; fi

# --- 2. PyTorch on the GPU ------------------------------------------------------------------------
say "PyTorch GPU (fp32, TF32 off; variants $VARIANTS; a TF32 row), at most ${TORCH_TIMEOUT_S} s"
if ! timeout "$TORCH_TIMEOUT_S" python3 bench/sparse_coding_torch.py --device "$TORCH_DEVICE" "${SHAPE[@]}" --batch "$BATCH" --sparsities "$SPARSITIES" "${BETA_ARGS[@]}" \
  --variants "$VARIANTS" --repeats "$REPEATS" --tf32 >"$OUT/sc_torch_gpu.jsonl" 2>>"$LOG"; then
  FAILED+=("torch gpu (exit or timeout; rows printed before it are kept)")
fi

# --- 3. The CPU path of both ----------------------------------------------------------------------
: >"$OUT/sc_ours_cpu.jsonl"
: >"$OUT/sc_torch_cpu.jsonl"
if [ "$CPU_S" -gt 0 ]; then
  CPU_START=$(date +%s)
  say "ours CPU (Raina's solver, $CPU_THREADS threads), at most $((CPU_S / 2)) s"
  if ! RAYON_NUM_THREADS=$CPU_THREADS timeout "$((CPU_S / 2))" "$BIN" bench --sparse-coding --backend cpu "${SHAPE[@]}" --coding-batch "$BATCH" \
    --sparsities "$SPARSITIES" --solvers raina --json >"$OUT/sc_ours_cpu.jsonl" 2>>"$LOG"; then
    FAILED+=("ours cpu (exit or timeout)")
  fi
  LEFT=$((CPU_S - ($(date +%s) - CPU_START)))
  if [ "$LEFT" -ge 10 ]; then
    say "PyTorch CPU (eager, $CPU_THREADS threads), at most $LEFT s"
    if ! OMP_NUM_THREADS=$CPU_THREADS MKL_NUM_THREADS=$CPU_THREADS CUDA_VISIBLE_DEVICES= timeout "$LEFT" python3 bench/sparse_coding_torch.py --device cpu \
      "${SHAPE[@]}" --batch "$BATCH" --sparsities "$SPARSITIES" "${BETA_ARGS[@]}" --variants eager >"$OUT/sc_torch_cpu.jsonl" 2>>"$LOG"; then
      FAILED+=("torch cpu (exit or timeout)")
    fi
  else
    say "PyTorch CPU skipped: $LEFT s left of CPU_S=$CPU_S"
  fi
fi

# --- Summary --------------------------------------------------------------------------------------
python3 - "$OUT" "$SPARSITIES" >"$OUT/sc_summary.txt" <<'PY'
import json, sys
out, sparsities = sys.argv[1], [float(s) for s in sys.argv[2].split(",")]
def rows(name):
    try:
        return [json.loads(l) for l in open(f"{out}/{name}") if l.startswith("{")]
    except OSError:
        return []
ours_gpu, torch_gpu, ours_cpu, torch_cpu = (rows(f"sc_{n}.jsonl") for n in ("ours_gpu", "torch_gpu", "ours_cpu", "torch_cpu"))
pick = lambda rs, s, **kv: next((r for r in rs if r["sparsity_target"] == s and all(r.get(k) == v for k, v in kv.items())), None)
seconds = lambda r: f"{r['seconds']:.3f}" if r else "-"
ratio = lambda a, b: f"{a['seconds'] / b['seconds']:.2f}" if a and b else "-"
relative = lambda a, b: f"{abs(a - b) / abs(b):.1e}" if a is not None and b is not None else "-"
paper = {0.03: 37.0, 0.06: 41.5, 0.10: 55.8}
print("seconds per pass (Raina's solver; ours: the steps with everything resident; torch: median of the repeats)")
print("ratios: ours / torch's fastest fp32 variant (<= 1 is ours faster)")
print(f"{'sparsity':>8} {'beta':>9} | {'ours GPU':>8} {'(+xfer)':>8} | {'torch best':>10} {'(variant)':<10} {'ratio':>5} {'torch TF32':>10} | {'ours CPU':>8} {'torch CPU':>9} | paper GPU (GTX 280)")
for s in sparsities:
    og, oc, tc = pick(ours_gpu, s), pick(ours_cpu, s), pick(torch_cpu, s, variant="eager")
    fp32 = [r for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]]
    best = min(fp32, key=lambda r: r["seconds"]) if fp32 else None
    tf32 = pick(torch_gpu, s, tf32=True)
    beta = (og or best or {}).get("beta")
    xfer = f"{og['seconds_with_transfers']:.3f}" if og and og.get("seconds_with_transfers") is not None else "-"
    print(f"{s:>8.2f} {beta if beta is None else f'{beta:.5f}':>9} | {seconds(og):>8} {xfer:>8} | {seconds(best):>10} {('(' + best['variant'] + ')') if best else '':<10} {ratio(og, best):>5} {seconds(tf32):>10} | {seconds(oc):>8} {seconds(tc):>9} | {paper.get(round(s, 2), '-')} s")
print()
print("torch GPU per variant (fp32): seconds per pass (codes + basis), setup (capture/compile) seconds")
for s in sparsities:
    parts = [f"{r['variant']} {r['seconds']:.3f} ({r['seconds_codes']:.3f} + {r['seconds_basis']:.3f}; setup {r['setup_seconds']:.1f})" for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]]
    print(f"{s:>8.2f}: " + ("; ".join(parts) if parts else "-"))
print()
print("objectives: the whole set's 1/2||X - AB^T||^2 + beta|A|_1 with the pass's codes (objective_stored: the same algorithm from the same start),")
print("and with codes solved afresh for the final basis (ours: coordinate descent, 'objective'; torch: its Raina solver, 'objective_raina')")
print(f"{'sparsity':>8} | {'ours GPU stored':>15} {'torch stored':>13} {'rel.':>7} {'ours CPU stored':>15} {'rel. GPU':>8} | {'ours fresh':>11} {'torch fresh':>11} {'rel.':>7} | non-zero % ours / torch")
for s in sparsities:
    og, oc = pick(ours_gpu, s), pick(ours_cpu, s)
    fp32 = [r for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]]
    tg = min(fp32, key=lambda r: r["seconds"]) if fp32 else None
    get = lambda r, k: r[k] if r else None
    fmt = lambda v: f"{v:.4f}" if v is not None else "-"
    print(f"{s:>8.2f} | {fmt(get(og, 'objective_stored')):>15} {fmt(get(tg, 'objective_stored')):>13} {relative(get(og, 'objective_stored'), get(tg, 'objective_stored')):>7} "
          f"{fmt(get(oc, 'objective_stored')):>15} {relative(get(og, 'objective_stored'), get(oc, 'objective_stored')):>8} | "
          f"{fmt(get(og, 'objective')):>11} {fmt(get(tg, 'objective_raina')):>11} {relative(get(og, 'objective'), get(tg, 'objective_raina')):>7} | "
          f"{100 * og['nonzero_fraction'] if og else float('nan'):.2f} / {100 * tg['nonzero_fraction_raina'] if tg else float('nan'):.2f}")
spread = [(s, max(r["objective_stored"] for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]) / min(r["objective_stored"] for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]) - 1)
          for s in sparsities if any(r["sparsity_target"] == s and not r["tf32"] for r in torch_gpu)]
if spread:
    print("torch fp32 variants' objective_stored spread (max/min - 1): " + ", ".join(f"{s:.2f}: {v:.1e}" for s, v in spread))
print()
print("iterations per case (mean over batches, most) and basis iterations per batch:")
for s in sparsities:
    og = pick(ours_gpu, s)
    fp32 = [r for r in torch_gpu if r["sparsity_target"] == s and not r["tf32"]]
    tg = min(fp32, key=lambda r: r["seconds"]) if fp32 else None
    show = lambda r: f"{r['code_iterations_mean']:.1f} (most {r['code_iterations_max']}), basis {r['basis_iterations_mean']:.1f}" if r else "-"
    print(f"{s:>8.2f}: ours GPU {show(og)}; torch {show(tg)}")
PY
cat "$OUT/sc_summary.txt"
if [ ${#FAILED[@]} -gt 0 ]; then
  say "failed steps: ${FAILED[*]}"
  exit 1
fi
say "done"

#!/usr/bin/env bash
# Issue 17's v x v/2 sparse-autoencoder sweep on the H100 device machine: one command, about
# 5-8 minutes, every figure a JSON line in $OUT/ae.jsonl, a table in $OUT/ae_summary.txt.
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)
# and the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md):
#
#   bash bench/autoencoder_device.sh            (device run: carry [".sweep", ".gl"])
#
# In this order:
#   1. CPU, size by size, each size NumPy (bench/autoencoder_numpy.py) then ours
#      (deepbelief bench --autoencoder --backend cpu), both on every core: BLAS threads
#      (OMP/OPENBLAS/MKL_NUM_THREADS) and RAYON_NUM_THREADS = nproc. Sizes whose predicted
#      time does not fit the CPU budget (CPU_BUDGET_S) are skipped and said so.
#   2. PyTorch on the GPU (bench/autoencoder_torch.py: fp32, TF32 off; eager, torch.compile,
#      CUDA graphs; explicit gradient and autograd), largest size first.
#   3. Ours on the GPU (native wgpu, Vulkan): the `resident` and `upload_download` rows, largest
#      size first, one process per size, the CPU's J beside the GPU's up to v = 1024.
# Each step runs under `timeout`; what it printed before that stays in ae.jsonl.
#
# Knobs (environment): SIZES, CASES, CPU_REPEATS, GPU_REPEATS, CPU_BUDGET_S, TORCH_TIMEOUT_S,
# GPU_TIMEOUT_S, BIN. NumPy's inputs are its own default_rng(1) draws; ours and PyTorch's are
# the crate's Philox stream, so J agrees closely between ours and PyTorch and only roughly
# with NumPy.
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/autoencoder_device}
mkdir -p "$OUT"
JSONL=$OUT/ae.jsonl
LOG=$OUT/ae.log
: >"$JSONL"
: >"$LOG"
SIZES=${SIZES:-64,128,256,512,1024,2048,4096,8192}
CASES=${CASES:-10000}
CPU_REPEATS=${CPU_REPEATS:-3}
GPU_REPEATS=${GPU_REPEATS:-10}
CPU_BUDGET_S=${CPU_BUDGET_S:-170}
TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-200}
GPU_TIMEOUT_S=${GPU_TIMEOUT_S:-100}
BIN=${BIN:-.sweep/bin/deepbelief}
CORES=$(nproc)
DESCENDING=$(tr ',' '\n' <<<"$SIZES" | sort -rn | paste -sd, -)
export PYTHONUNBUFFERED=1
START=$(date +%s)
FAILED=()

say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG" >&2; }
skipped() { # size backend reason
  echo "{\"size\": $1, \"hidden\": $(($1 / 2)), \"cases\": $CASES, \"backend\": \"$2\", \"variant\": \"skipped\", \"skipped\": \"$3\"}" >>"$JSONL"
  say "skipped: $2 size $1 ($3)"
}

if [ ! -x "$BIN" ] || ! "$BIN" bench --help | grep -q -- --autoencoder; then
  say "error: $BIN is missing or has no 'bench --autoencoder' (build it: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)"
  exit 2
fi

# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh

export OMP_NUM_THREADS=$CORES OPENBLAS_NUM_THREADS=$CORES MKL_NUM_THREADS=$CORES RAYON_NUM_THREADS=$CORES
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $CORES; sizes: $SIZES; cases: $CASES"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  python3 -c 'import numpy, torch, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  python3 -c 'import numpy; from threadpoolctl import threadpool_info; print("NumPy BLAS:", [(p["internal_api"], p["num_threads"]) for p in threadpool_info()])' 2>&1
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}; $(ldconfig -p | grep -c libvulkan) libvulkan entries"
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/ae_env.txt" 2>&1
cat "$OUT/ae_env.txt" >&2

# --- 1. CPU: NumPy, then ours, size by size, every core ------------------------------------
say "CPU: NumPy and ours on all $CORES cores (OMP/OPENBLAS/MKL_NUM_THREADS and RAYON_NUM_THREADS = $CORES), budget ${CPU_BUDGET_S} s"
CPU_START=$(date +%s)
LAST_S=0
OUT_OF_TIME=""
for v in ${SIZES//,/ }; do
  LEFT=$((CPU_BUDGET_S - ($(date +%s) - CPU_START)))
  # Both the work and the set-up (NumPy's Philox weights) grow as v^2: 4x per doubling.
  PREDICTED=$((LAST_S * 9 / 2))
  if [ -n "$OUT_OF_TIME" ] || [ "$PREDICTED" -gt "$LEFT" ]; then
    OUT_OF_TIME=1
    skipped "$v" numpy "CPU budget: about ${PREDICTED} s predicted, ${LEFT} s left of ${CPU_BUDGET_S}"
    skipped "$v" cpu "CPU budget: about ${PREDICTED} s predicted, ${LEFT} s left of ${CPU_BUDGET_S}"
    continue
  fi
  T0=$(date +%s)
  say "NumPy $v x $((v / 2))"
  if ! timeout "$LEFT" python3 bench/autoencoder_numpy.py --sizes "$v" --samples "$CASES" --repeats "$CPU_REPEATS" 2>>"$LOG" >"$OUT/numpy.json"; then
    FAILED+=("numpy $v")
    skipped "$v" numpy "failed or out of time (see ae.log)"
  else
    python3 - "$OUT/numpy.json" "$CORES" >>"$JSONL" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for r in report["results"]:
    print(json.dumps({"size": r["visible"], "hidden": r["hidden"], "cases": report["samples"], "backend": "numpy",
                      "variant": "cost_and_gradient", "seconds_median": r["seconds"], "seconds_min": None, "J": r["cost"],
                      "warmups": 1, "repeats": report["repeats"], "threads": report["blas_threads"],
                      "device": f"NumPy {report['numpy']} ({report['blas_threads']} BLAS threads; OMP_NUM_THREADS={sys.argv[2]})",
                      "data": "NumPy default_rng(1) uniforms, not the crate's Philox stream"}))
PY
  fi
  LEFT=$((CPU_BUDGET_S - ($(date +%s) - CPU_START)))
  say "ours (CPU) $v x $((v / 2))"
  if ! timeout "$((LEFT > 5 ? LEFT : 5))" "$BIN" bench --autoencoder --backend cpu --sizes "$v" --cases "$CASES" --repeats "$CPU_REPEATS" --warmups 1 --json >>"$JSONL" 2>>"$LOG"; then
    FAILED+=("cpu $v")
    skipped "$v" cpu "failed or out of time (see ae.log)"
  fi
  LAST_S=$(($(date +%s) - T0))
done
rm -f "$OUT/numpy.json"

# --- 2. PyTorch on the GPU ------------------------------------------------------------------
say "PyTorch GPU (fp32, TF32 off), sizes $DESCENDING, at most ${TORCH_TIMEOUT_S} s"
if ! timeout "$TORCH_TIMEOUT_S" python3 bench/autoencoder_torch.py --sizes "$DESCENDING" --cases "$CASES" --repeats "$GPU_REPEATS" --warmups 3 \
  --compile-mode auto --compile-budget-s 40 --compile-total-s 80 --time-budget-s $((TORCH_TIMEOUT_S - 40)) >>"$JSONL" 2>>"$LOG"; then
  FAILED+=("torch (exit or timeout; rows printed before it are kept)")
fi

# --- 3. Ours on the GPU ---------------------------------------------------------------------
# One process per size: a size that fails (a device limit, say) costs only its own rows.
say "ours GPU (wgpu, Vulkan), sizes $DESCENDING, at most ${GPU_TIMEOUT_S} s"
GPU_START=$(date +%s)
for v in ${DESCENDING//,/ }; do
  LEFT=$((GPU_TIMEOUT_S - ($(date +%s) - GPU_START)))
  if [ "$LEFT" -lt 5 ]; then
    skipped "$v" gpu "GPU time limit of ${GPU_TIMEOUT_S} s spent"
    continue
  fi
  if ! timeout "$LEFT" "$BIN" bench --autoencoder --backend gpu --sizes "$v" --cases "$CASES" --repeats "$GPU_REPEATS" --warmups 3 \
    --check-up-to 1024 --json >>"$JSONL" 2>>"$LOG"; then
    FAILED+=("ours gpu $v")
    skipped "$v" gpu "failed or out of time (see ae.log)"
  fi
done

# --- Summary --------------------------------------------------------------------------------
python3 - "$JSONL" >"$OUT/ae_summary.txt" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
def pick(v, backend, variant):
    for r in rows:
        if r.get("size") == v and r.get("backend") == backend and r.get("variant") == variant and "seconds_median" in r:
            return r
torch_backend = "torch-cuda" if any(r.get("backend") == "torch-cuda" for r in rows) else "torch-cpu"
sizes = sorted({r["size"] for r in rows if "size" in r})
f = lambda r: f"{r['seconds_median']:.4f}" if r else "-"
ratio = lambda a, b: f"{a['seconds_median'] / b['seconds_median']:.2f}" if a and b else "-"
print("seconds per full-batch cost + gradient (median); ratios: ours / peer (<= 1 is ours faster)")
print(f"{'v x h':>11} | {'NumPy':>8} {'ours CPU':>8} {'ratio':>5} | {'torch best':>10} {'(variant)':<16} {'ours GPU':>8} {'ratio':>5} {'GPU up+down':>11} | J ours CPU / GPU / torch")
for v in sizes:
    numpy, cpu = pick(v, "numpy", "cost_and_gradient"), pick(v, "cpu", "cost_and_gradient")
    torch, gpu, transfer = pick(v, torch_backend, "best"), pick(v, "gpu", "resident"), pick(v, "gpu", "upload_download")
    js = " / ".join(f"{r['J']:.6f}" if r else "-" for r in (cpu, gpu, torch))
    print(f"{v:>5} x {v // 2:<4} | {f(numpy):>8} {f(cpu):>8} {ratio(cpu, numpy):>5} | {f(torch):>10} {('(' + torch['best_of'] + ')') if torch else '':<16} {f(gpu):>8} {ratio(gpu, torch):>5} {f(transfer):>11} | {js}")
print()
for v in sizes:
    cpu, gpu, torch = pick(v, "cpu", "cost_and_gradient"), pick(v, "gpu", "resident"), pick(v, torch_backend, "best")
    notes = []
    if gpu and gpu.get("J_relative_difference") is not None:
        notes.append(f"GPU J vs CPU reference on the same problem (J_relative_difference): {gpu['J_relative_difference']:.1e}")
    if gpu and torch:
        notes.append(f"GPU J vs torch: {abs(gpu['J'] - torch['J']) / abs(torch['J']):.1e}")
    if cpu and torch:
        notes.append(f"CPU J vs torch: {abs(cpu['J'] - torch['J']) / abs(torch['J']):.1e}")
    if torch and torch.get("gradient_check") is not None:
        notes.append(f"torch explicit vs autograd gradient: {torch['gradient_check']:.1e}")
    if notes:
        print(f"{v:>5}: " + "; ".join(notes))
print()
print("issue 17's bars (figures, not asserts):")
for v in sizes:
    numpy, cpu = pick(v, "numpy", "cost_and_gradient"), pick(v, "cpu", "cost_and_gradient")
    if v >= 512 and numpy and cpu:
        print(f"  CPU <= 1.0x NumPy at {v}: {ratio(cpu, numpy)}x")
for v in sizes:
    torch, gpu = pick(v, torch_backend, "best"), pick(v, "gpu", "resident")
    if torch and gpu:
        print(f"  GPU (resident) <= 1.2x PyTorch at {v}: {ratio(gpu, torch)}x")
gpu = pick(8192, "gpu", "resident")
if gpu:
    print(f"  GPU 8192 x 4096 <= 0.15 s: {gpu['seconds_median']:.4f} s")
for r in rows:
    if "skipped" in r or "failed" in r:
        print(f"  not measured: {r.get('backend')} {r.get('variant')} {r.get('size')}: {r.get('skipped') or r.get('failed')}")
PY
cat "$OUT/ae_summary.txt"
if [ ${#FAILED[@]} -gt 0 ]; then
  say "failed steps: ${FAILED[*]}"
  exit 1
fi
say "done"

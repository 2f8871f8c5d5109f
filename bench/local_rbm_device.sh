#!/usr/bin/env bash
# Issue 19's Table 3 replica (Raina, Madhavan & Ng 2009, §5: CD-1 of the overlapping-patch RBM,
# 24x24 patches 8 apart, 192 hidden units each, batches of 192, at 144² and 192²) and their
# four-layer DBN on the H100 device machine, in one run, at most
# (number of TILINGS) × OURS_TIMEOUT_S + TORCH_TIMEOUT_S + DBN_TIMEOUT_S + CPU_S = 440 s by
# default (plus PROFILE_TIMEOUT_S per tiling with PROFILE=1). Every figure is a JSON line in
# $OUT/lr_*.jsonl, a table in $OUT/lr_summary.txt.
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)
# and the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md):
#
#   bash bench/local_rbm_device.sh            (device run: carry [".sweep", ".gl"])
#
# In this order, each step under `timeout` (what it printed before that stays in its file):
#   0. (PROFILE=1) for each of TILINGS: deepbelief bench --local-rbm --backend gpu
#      --local-profile --local-sizes SIZES with DEEPBELIEF_LOCAL_TILING set: each dispatch of a
#      CD-1 batch timed with GPU timestamps (µs, TFLOP/s of the products, their sum), appended
#      to $OUT/lr_profile.txt (and --json objects to lr_profile.jsonl).
#   1. ours on the GPU, once per tiling of TILINGS: deepbelief bench --local-rbm --backend gpu
#      --local-sizes SIZES (the device-resident trainer, BATCHES batches submitted back to back
#      after WARMUPS; seconds per million examples; targets 20 / 40 s at 144² / 192²); each
#      row labelled with the knob's value ("knob") and the kernels it ran ("tiling").
#   2. PyTorch on the GPU: bench/local_rbm_torch.py --check (its step against the NumPy peer's,
#      on the CPU), then the same layers with unfold + bmm, eager and CUDA-graph captured.
#   3. Raina's four-layer DBN (25,600 → 82,944 → 8,192 → 4,608 → 1,024 units, 91.4M weights)
#      trained greedily from the CLI on the device: deepbelief local-rbm --layers
#      local:24:8:256,local:4:2:128,local:3:1:128,dense:1024 --image-size 160 --backend gpu,
#      DBN_EPOCHS epochs per layer on DBN_CASES crops of Philox grating images (synthetic, made
#      by the binary: no data files), propagation between layers on the device; each epoch's
#      seconds and the whole run's wall time (target: under 30 minutes).
#   4. (CPU_S > 0) the scaled 48² layer on the CPU, ours (bench --local-rbm --backend cpu,
#      RAYON_NUM_THREADS=CPU_THREADS) against bench/local_rbm_numpy.py (OMP threads alike).
#
# Knobs (environment): TILINGS (space-separated values of DEEPBELIEF_LOCAL_TILING, the product
# kernels: "new old" by default; new = 8x8, also 4x8, 4x4, wide; see docs/LOCAL_RBM.md),
# PROFILE (1: step 0; 0, the default: not), PROFILE_BATCHES (5), PROFILE_TIMEOUT_S (60),
# SIZES (144,192), BATCHES (20), WARMUPS (3), REPEATS (3), VARIANTS
# (eager,cuda-graph), OURS_TIMEOUT_S (80), TORCH_TIMEOUT_S (90), DBN_EPOCHS (3), DBN_CASES (3840),
# DBN_TIMEOUT_S (150), DBN_LAYERS, DBN_SIZE (160), DBN_RATE (empty: per-layer defaults), DBN_CHECKPOINT_EVERY (1), CPU_S (40; 0 skips step 4), CPU_THREADS (4),
# BIN (.sweep/bin/deepbelief), TORCH_DEVICE (cuda; cpu for a smoke test without CUDA). A smoke
# test of our half where there is no GPU: SIZES=48 BATCHES=2 WARMUPS=1 DBN_LAYERS=local:8:4:8,dense:16
# DBN_SIZE=16 DBN_CASES=384 DBN_EPOCHS=2 TORCH_TIMEOUT_S=0 CPU_S=0 PROFILE=1 WGPU_BACKEND=vulkan
# VK_DRIVER_FILES=<lavapipe's ICD> BIN=target/release/deepbelief.
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/local_rbm_device}
mkdir -p "$OUT"
LOG=$OUT/lr.log
: >"$LOG"
SIZES=${SIZES:-144,192}
TILINGS=${TILINGS:-new old}
PROFILE=${PROFILE:-0}
PROFILE_BATCHES=${PROFILE_BATCHES:-5}
PROFILE_TIMEOUT_S=${PROFILE_TIMEOUT_S:-60}
BATCHES=${BATCHES:-20}
WARMUPS=${WARMUPS:-3}
REPEATS=${REPEATS:-3}
VARIANTS=${VARIANTS:-eager,cuda-graph}
OURS_TIMEOUT_S=${OURS_TIMEOUT_S:-80}
TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-90}
DBN_EPOCHS=${DBN_EPOCHS:-3}
DBN_CASES=${DBN_CASES:-3840}
DBN_TIMEOUT_S=${DBN_TIMEOUT_S:-150}
DBN_LAYERS=${DBN_LAYERS:-local:24:8:256,local:4:2:128,local:3:1:128,dense:1024}
DBN_SIZE=${DBN_SIZE:-160}
# Empty: each layer's default rate, scaled to its overlap (default_learning_rate); a number: every layer's.
DBN_RATE=${DBN_RATE:-}
# Download the model after every N epochs (0: each layer's last only); the JSON's layer_breakdown
# gives each epoch's train / score / download / checkpoint seconds.
DBN_CHECKPOINT_EVERY=${DBN_CHECKPOINT_EVERY:-1}
CPU_S=${CPU_S:-40}
CPU_THREADS=${CPU_THREADS:-4}
BIN=${BIN:-.sweep/bin/deepbelief}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
export PYTHONUNBUFFERED=1
START=$(date +%s)
FAILED=()

say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG" >&2; }

if [ ! -x "$BIN" ] || ! "$BIN" bench --help | grep -q -- --local-rbm || ! "$BIN" local-rbm --help | grep -q -- --layers; then
  say "error: $BIN is missing or has no 'bench --local-rbm' / 'local-rbm --layers' (build it: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)"
  exit 2
fi

# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh

{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc); sizes $SIZES, $BATCHES batches of 192 after $WARMUPS, tilings $TILINGS (profile: $PROFILE); DBN $DBN_LAYERS at ${DBN_SIZE}², $DBN_EPOCHS epochs of $DBN_CASES crops"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  python3 -c 'import numpy, torch, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}; $(ldconfig -p | grep -c libvulkan) libvulkan entries"
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/lr_env.txt" 2>&1
cat "$OUT/lr_env.txt" >&2

# --- 0. Where a batch's time goes, per tiling (PROFILE=1) -----------------------------------------
if [ "$PROFILE" = 1 ]; then
  : >"$OUT/lr_profile.jsonl"
  for tiling in $TILINGS; do
    say "profile (DEEPBELIEF_LOCAL_TILING=$tiling): bench --local-rbm --backend gpu --local-profile --local-sizes $SIZES, at most ${PROFILE_TIMEOUT_S} s"
    { echo "== $(date -u +%FT%TZ) $("$BIN" --version) DEEPBELIEF_LOCAL_TILING=$tiling"
      DEEPBELIEF_LOCAL_TILING=$tiling timeout "$PROFILE_TIMEOUT_S" "$BIN" bench --local-rbm --backend gpu --local-profile --local-sizes "$SIZES" \
        --local-batches "$PROFILE_BATCHES" --local-warmups "$WARMUPS" --json 2>&1 || echo "(failed or timed out)"; } >"$OUT/lr_profile_run.txt"
    grep -v '^{' "$OUT/lr_profile_run.txt" | tee -a "$OUT/lr_profile.txt" >&2
    grep '^{' "$OUT/lr_profile_run.txt" | python3 -c 'import json, sys
for line in sys.stdin:
    row = json.loads(line); row["knob"] = sys.argv[1]; print(json.dumps(row))' "$tiling" >>"$OUT/lr_profile.jsonl"
    grep -q '^{' "$OUT/lr_profile_run.txt" || FAILED+=("profile $tiling (no rows)")
  done
  rm -f "$OUT/lr_profile_run.txt"
fi

# --- 1. Ours on the GPU, per tiling ---------------------------------------------------------------
: >"$OUT/lr_ours_gpu.jsonl"
for tiling in $TILINGS; do
  say "ours GPU (wgpu, Vulkan, DEEPBELIEF_LOCAL_TILING=$tiling): bench --local-rbm --backend gpu --local-sizes $SIZES, at most ${OURS_TIMEOUT_S} s"
  if ! DEEPBELIEF_LOCAL_TILING=$tiling timeout "$OURS_TIMEOUT_S" "$BIN" bench --local-rbm --backend gpu --local-sizes "$SIZES" --local-batches "$BATCHES" \
    --local-warmups "$WARMUPS" --json 2>>"$LOG" >"$OUT/lr_ours_gpu_run.jsonl"; then
    FAILED+=("ours gpu $tiling (exit or timeout)")
  fi
  grep '^{' "$OUT/lr_ours_gpu_run.jsonl" | python3 -c 'import json, sys
for line in sys.stdin:
    row = json.loads(line); row["knob"] = sys.argv[1]; print(json.dumps(row))' "$tiling" >>"$OUT/lr_ours_gpu.jsonl"
done
rm -f "$OUT/lr_ours_gpu_run.jsonl"

# --- 2. PyTorch on the GPU ------------------------------------------------------------------------
: >"$OUT/lr_torch_gpu.jsonl"
if [ "$TORCH_TIMEOUT_S" -gt 0 ]; then
  say "PyTorch: --check against the NumPy peer (CPU), then $SIZES on $TORCH_DEVICE ($VARIANTS), at most ${TORCH_TIMEOUT_S} s"
  if ! timeout 30 python3 bench/local_rbm_torch.py --check >"$OUT/lr_torch_check.json" 2>>"$LOG"; then
    FAILED+=("torch check (the step differs from NumPy's, or failed)")
  fi
  if ! timeout "$TORCH_TIMEOUT_S" python3 bench/local_rbm_torch.py --device "$TORCH_DEVICE" --sizes "$SIZES" --batches "$BATCHES" --warmups "$WARMUPS" \
    --repeats "$REPEATS" --variants "$VARIANTS" >"$OUT/lr_torch_gpu.jsonl" 2>>"$LOG"; then
    FAILED+=("torch gpu (exit or timeout; rows printed before it are kept)")
  fi
fi

# --- 3. Raina's four-layer DBN from the CLI -------------------------------------------------------
say "DBN: local-rbm --layers $DBN_LAYERS --image-size $DBN_SIZE --backend gpu, $DBN_EPOCHS epochs, $DBN_CASES crops, at most ${DBN_TIMEOUT_S} s"
DBN_START=$(date +%s)
if ! timeout "$DBN_TIMEOUT_S" "$BIN" local-rbm --layers "$DBN_LAYERS" --image-size "$DBN_SIZE" --backend gpu --epochs "$DBN_EPOCHS" \
  ${DBN_RATE:+--learning-rate "$DBN_RATE"} --checkpoint-every "$DBN_CHECKPOINT_EVERY" --cases "$DBN_CASES" --out "$OUT/dbn" --json >"$OUT/lr_dbn.jsonl" 2>"$OUT/lr_dbn.log"; then
  FAILED+=("dbn (exit or timeout; its epochs so far are in lr_dbn.log and the checkpoint $OUT/dbn/local_rbm.bin)")
fi
DBN_WALL=$(($(date +%s) - DBN_START))
echo "{\"dbn_wall_seconds\": $DBN_WALL}" >>"$OUT/lr_dbn.jsonl"
rm -f "$OUT/dbn/local_rbm.bin"  # 365 MB: the figures are in lr_dbn.*

# --- 4. The scaled 48² layer on the CPU -----------------------------------------------------------
: >"$OUT/lr_ours_cpu.jsonl"
: >"$OUT/lr_numpy_cpu.jsonl"
if [ "$CPU_S" -gt 0 ]; then
  say "CPU 48²: ours and NumPy on $CPU_THREADS threads, at most $CPU_S s"
  RAYON_NUM_THREADS=$CPU_THREADS timeout "$((CPU_S / 2))" "$BIN" bench --local-rbm --backend cpu --local-sizes 48 --local-batches 5 --json \
    >"$OUT/lr_ours_cpu.jsonl" 2>>"$LOG" || FAILED+=("ours cpu (exit or timeout)")
  OMP_NUM_THREADS=$CPU_THREADS OPENBLAS_NUM_THREADS=$CPU_THREADS MKL_NUM_THREADS=$CPU_THREADS timeout "$((CPU_S / 2))" \
    python3 bench/local_rbm_numpy.py --sizes 48 --batches 5 >"$OUT/lr_numpy_cpu.jsonl" 2>>"$LOG" || FAILED+=("numpy cpu (exit or timeout)")
fi

# --- Summary --------------------------------------------------------------------------------------
python3 - "$OUT" >"$OUT/lr_summary.txt" <<'PY'
import json, re, sys
out = sys.argv[1]
def rows(name):
    try:
        return [json.loads(l) for l in open(f"{out}/{name}") if l.startswith("{")]
    except OSError:
        return []
ours, torch_rows, dbn = rows("lr_ours_gpu.jsonl"), rows("lr_torch_gpu.jsonl"), rows("lr_dbn.jsonl")
targets = {144: 20.0, 192: 40.0}
print("Table 3: seconds per million examples of CD-1 (batches of 192; ratio = ours / torch's fastest, <= 1 is ours faster; one row per tiling)")
print(f"{'size':>5} {'tiling':>10} | {'ours GPU':>9} {'target':>7} | {'torch eager':>11} {'torch graph':>11} {'ratio':>6} | {'GTX 280':>8} | recon. error ours / torch")
for r in ours:
    size = r["image_size"]
    label = f"{r.get('knob', '-')}" + (f"={r['tiling']}" if r.get("tiling") and r.get("tiling") != r.get("knob") else "")
    t = {x["variant"]: x for x in torch_rows if x["image_size"] == size}
    best = min(t.values(), key=lambda x: x["seconds_per_million"]) if t else None
    fmt = lambda x: f"{x['seconds_per_million']:.1f}" if x else "-"
    ratio = f"{r['seconds_per_million'] / best['seconds_per_million']:.2f}" if best else "-"
    print(f"{size:>5} {label:>10} | {r['seconds_per_million']:>9.1f} {targets.get(size, float('nan')):>7.0f} | {fmt(t.get('eager')):>11} {fmt(t.get('cuda-graph')):>11} {ratio:>6} | "
          f"{r.get('paper_gtx_280') or '-':>8} | {r['reconstruction_error']:.4f} / {best['reconstruction_error'] if best else float('nan'):.4f}")
try:
    print("torch check:", open(f"{out}/lr_torch_check.json").read().strip())
except OSError:
    pass
for p in rows("lr_profile.jsonl"):
    products = [d for d in p["dispatches"] if d["gflop"] > 0]
    parts = ", ".join(f"{d['label']} {d['microseconds']:.0f}" for d in p["dispatches"])
    products_us = sum(d["microseconds"] for d in products)
    print(f"profile {p['image_size']}² {p['knob']} ({p['tiling'].split(':')[0]}): sum {p['dispatch_sum_us']:.0f} µs, span {p['batch_span_us']:.0f} µs"
          f" ({p['batch_span_us'] / 192:.1f} s per million), products {products_us:.0f} µs ({p['gflop'] / max(products_us, 1e-9) * 1e-3:.1f} TFLOP/s); {parts}")
print()
final = next((r for r in dbn if "layers" in r), None)
wall = next((r["dbn_wall_seconds"] for r in dbn if "dbn_wall_seconds" in r), None)
epochs = []
try:
    for line in open(f"{out}/lr_dbn.log"):
        m = re.search(r"layer (\d+) epoch (\d+) \((\w+)\): reconstruction error ([\d.eE+-]+|NaN|inf), ([\d.]+) s", line)
        if m:
            epochs.append((int(m[1]), int(m[2]), m[3], float(m[4]), float(m[5])))
except OSError:
    pass
print(f"Raina's DBN: {len(epochs)} epochs finished; wall {wall} s (binary start to exit)")
for layer in sorted({e[0] for e in epochs}):
    mine = [e for e in epochs if e[0] == layer]
    print(f"  layer {layer}: " + ", ".join(f"epoch {e[1]} {e[4]:.2f} s ({e[2]}, error {e[3]:.4f})" for e in mine))
if final:
    print(f"  parameters {final['parameters']}, training {final['training_seconds']:.1f} s, backends {final['backends']}, fell back: {final['fell_back']}")
    per_epoch = sum(sum(l) / len(l) for l in final["epoch_seconds"] if l)
    for b in final.get("layer_breakdown", []):
        print(f"  layer {b['layer']}: rate {b['learning_rate']:.4g}, input mean {b['input']['mean']:.4f} spread {b['input']['spread']:.4f}, errors {[round(e, 5) for e in b['reconstruction_errors']]}, "
              + "epochs (train/score/download/checkpoint s) " + ", ".join(f"{e['train']:.2f}/{e['score']:.2f}/{e['download']:.2f}/{e['checkpoint']:.2f}" for e in b["epochs"])
              + f", propagate {b['propagate_seconds'] or 0:.2f} s")
    print(f"  one epoch of every layer (the means summed): {per_epoch:.2f} s; 30 minutes would hold {1800 / per_epoch if per_epoch else float('nan'):.0f} such epochs")
print()
cpu, numpy_rows = rows("lr_ours_cpu.jsonl"), rows("lr_numpy_cpu.jsonl")
if cpu or numpy_rows:
    o, n = (cpu or [None])[0], (numpy_rows or [None])[0]
    print(f"48² on the CPU: ours {o['seconds_per_million'] if o else '-'} s per million, NumPy {n['seconds_per_million'] if n else '-'}"
          + (f", ratio {o['seconds_per_million'] / n['seconds_per_million']:.2f}" if o and n else ""))
PY
cat "$OUT/lr_summary.txt"
if [ ${#FAILED[@]} -gt 0 ]; then
  say "failed steps: ${FAILED[*]}"
  exit 1
fi
say "done"

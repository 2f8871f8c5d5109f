#!/usr/bin/env bash
# Issue 20's sweep on the device machine: microseconds per online RTRL step on Moore's n-bit
# adder (2n-2n-n, Elman by default) for ours on the GPU (DeviceRtrl: every step on the device,
# a repeat's steps in one submission; and again with one submission and read-back per step,
# --rtrl-submit 1), ours on the CPU, the NumPy peer (bench/rtrl_numpy.py, the same algorithm on
# the CPU) and the PyTorch peer on CUDA (bench/rtrl_torch.py: eager, and a CUDA-graph captured
# step; Elman with the shortcut only), one after the other in one run. Every row is a JSON line
# in $OUT/rtrl_{gpu,gpu1,cpu,numpy,torch}.jsonl, a table in $OUT/rtrl_summary.txt (each row also
# carries the mean E of its timed steps: all agree to float32 rounding when they ran the same
# steps).
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/)
# and the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md):
#
#   bash bench/rtrl_device.sh            (device run: carry [".sweep", ".gl"])
#
# Knobs (environment): SIZES (16,32,64,96,128), PRESET (elman|jordan|feedforward), SHORTCUT
# (1; 0 runs full RTRL: --rtrl-no-shortcut / --no-shortcut), STEPS (20 per repeat), REPEATS (3),
# GPU_TIMEOUT_S (200), CPU_TIMEOUT_S (200), NUMPY_TIMEOUT_S (170), TORCH_TIMEOUT_S (200),
# TORCH (1; 0 skips it), ACCURACY (1: after the timings, `deepbelief rtrl --backend gpu` trains
# the adder for ACC_STEPS (20000) online steps at ACC_RATE (0.01) per n of ACC_SIZES (SIZES)
# and reports the held-out accuracy, whole sums and bits, in $OUT/rtrl_accuracy.jsonl;
# ACC_TIMEOUT_S (300) for all of them), CPU_THREADS (all; sets
# RAYON_NUM_THREADS and OMP/OPENBLAS threads), BIN (.sweep/bin/deepbelief), PROFILE (1: first,
# `deepbelief bench --rtrl --backend gpu --rtrl-profile` per n of SIZES: each dispatch's label and
# µs in a step, their sum and the per-step time with the steps in one pass, appended to
# $OUT/rtrl_profile.txt; 0, the default: not), PROFILE_SETTINGS (with PROFILE=1: a
# space-separated list of settings, one profile each; a setting is "default" or comma-separated
# key=value of tiling=auto|small|medium|wide|large|huge (DEEPBELIEF_RTRL_TILING, the
# sensitivity products' GEMM tiles), splits=auto|N (DEEPBELIEF_RTRL_SPLIT_K) and fused=1|0
# (DEEPBELIEF_RTRL_FUSED: 0 finishes each tensor and folds it into the gradient in two kernels
# instead of finish_fold's one); e.g. "default fused=0 tiling=wide,fused=0 splits=2"; default
# "default"), PROFILE_STEPS (8). A smoke test where
# there is no GPU: SIZES=2,4 WGPU_BACKEND=vulkan VK_DRIVER_FILES=<lavapipe's ICD> BIN=target/release/deepbelief.
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/rtrl_device}
mkdir -p "$OUT"
SIZES=${SIZES:-16,32,64,96,128}
PRESET=${PRESET:-elman}
SHORTCUT=${SHORTCUT:-1}
STEPS=${STEPS:-20}
REPEATS=${REPEATS:-3}
BIN=${BIN:-.sweep/bin/deepbelief}
CPU_THREADS=${CPU_THREADS:-$(nproc)}
# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc); CPU threads: $CPU_THREADS; sizes $SIZES, preset $PRESET, shortcut $SHORTCUT, $REPEATS x $STEPS steps"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  python3 -c 'import numpy, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__)' 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/rtrl_env.txt" 2>&1
cat "$OUT/rtrl_env.txt" >&2
ours_flags=(--rtrl --sizes "$SIZES" --rtrl-preset "$PRESET" --rtrl-steps "$STEPS" --repeats "$REPEATS" --json)
peer_flags=(--sizes "$SIZES" --preset "$PRESET" --steps "$STEPS" --repeats "$REPEATS")
if [ "$SHORTCUT" = 0 ]; then ours_flags+=(--rtrl-no-shortcut); peer_flags+=(--no-shortcut); fi

: >"$OUT/rtrl.log"
if [ "${PROFILE:-0}" = 1 ]; then
  for setting in ${PROFILE_SETTINGS:-default}; do
    knobs=()
    if [ "$setting" != default ]; then
      IFS=, read -r -a pairs <<<"$setting"
      for pair in "${pairs[@]}"; do
        case "${pair%%=*}" in
          tiling) knobs+=("DEEPBELIEF_RTRL_TILING=${pair#*=}") ;;
          splits) knobs+=("DEEPBELIEF_RTRL_SPLIT_K=${pair#*=}") ;;
          fused) knobs+=("DEEPBELIEF_RTRL_FUSED=${pair#*=}") ;;
          *) echo "rtrl_device.sh: PROFILE_SETTINGS: $pair: expected tiling=, splits= or fused=" >&2; exit 2 ;;
        esac
      done
    fi
    echo "== ours, GPU profile, setting $setting" | tee -a "$OUT/rtrl.log" >&2
    { echo "== $(date -u +%FT%TZ) $("$BIN" --version) setting: $setting ${knobs[*]}"
      env "${knobs[@]}" timeout "${GPU_TIMEOUT_S:-200}" "$BIN" bench --backend gpu --rtrl --rtrl-profile --sizes "$SIZES" --rtrl-preset "$PRESET" \
        --rtrl-steps "${PROFILE_STEPS:-8}" $([ "$SHORTCUT" = 0 ] && echo --rtrl-no-shortcut) 2>>"$OUT/rtrl.log"; } | tee -a "$OUT/rtrl_profile.txt" >&2
  done
fi

echo "== ours, GPU" | tee -a "$OUT/rtrl.log" >&2
timeout "${GPU_TIMEOUT_S:-200}" "$BIN" bench --backend gpu "${ours_flags[@]}" 2>>"$OUT/rtrl.log" | grep '^{' >"$OUT/rtrl_gpu.jsonl"
echo "== ours, GPU, one submission per step" | tee -a "$OUT/rtrl.log" >&2
timeout "${GPU_TIMEOUT_S:-200}" "$BIN" bench --backend gpu "${ours_flags[@]}" --rtrl-submit 1 2>>"$OUT/rtrl.log" | grep '^{' >"$OUT/rtrl_gpu1.jsonl"
echo "== ours, CPU ($CPU_THREADS threads)" | tee -a "$OUT/rtrl.log" >&2
RAYON_NUM_THREADS=$CPU_THREADS timeout "${CPU_TIMEOUT_S:-200}" "$BIN" bench --backend cpu "${ours_flags[@]}" 2>>"$OUT/rtrl.log" | grep '^{' >"$OUT/rtrl_cpu.jsonl"
echo "== NumPy ($CPU_THREADS threads)" | tee -a "$OUT/rtrl.log" >&2
(cd bench && OMP_NUM_THREADS=$CPU_THREADS OPENBLAS_NUM_THREADS=$CPU_THREADS MKL_NUM_THREADS=$CPU_THREADS timeout "${NUMPY_TIMEOUT_S:-170}" python3 rtrl_numpy.py "${peer_flags[@]}") 2>>"$OUT/rtrl.log" >"$OUT/rtrl_numpy.jsonl"

if [ "${TORCH:-1}" = 1 ] && [ "$PRESET" = elman ] && [ "$SHORTCUT" = 1 ]; then
  echo "== PyTorch" | tee -a "$OUT/rtrl.log" >&2
  (cd bench && timeout "${TORCH_TIMEOUT_S:-200}" python3 rtrl_torch.py --sizes "$SIZES" --steps "$STEPS" --repeats "$REPEATS" ${TORCH_DEVICE:+--device "$TORCH_DEVICE"}) 2>>"$OUT/rtrl.log" >"$OUT/rtrl_torch.jsonl"
fi

if [ "${ACCURACY:-1}" = 1 ]; then
  echo "== accuracy on the adder (GPU, ${ACC_STEPS:-20000} steps per n)" | tee -a "$OUT/rtrl.log" >&2
  acc_flags=(--preset "$PRESET" --steps "${ACC_STEPS:-20000}" --rate "${ACC_RATE:-0.01}" --backend gpu --json)
  if [ "$SHORTCUT" = 0 ]; then acc_flags+=(--no-shortcut); fi
  : >"$OUT/rtrl_accuracy.jsonl"
  deadline=$(( $(date +%s) + ${ACC_TIMEOUT_S:-300} ))
  acc_sizes=${ACC_SIZES:-$SIZES}
  for n in ${acc_sizes//,/ }; do
    left=$(( deadline - $(date +%s) ))
    [ "$left" -gt 0 ] || { echo "accuracy: out of time before n = $n" >>"$OUT/rtrl.log"; break; }
    timeout "$left" "$BIN" rtrl --task add --bits "$n" "${acc_flags[@]}" --out "$OUT/rtrl_add$n" 2>>"$OUT/rtrl.log" | tail -n 1 | grep '^{' \
      | python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); r["bits"] = int(sys.argv[1]); print(json.dumps(r))' "$n" >>"$OUT/rtrl_accuracy.jsonl"
  done
fi

python3 - "$OUT" <<'PY' | tee "$OUT/rtrl_summary.txt"
import json, sys, os
out = sys.argv[1]
rows = {}
for side in ("gpu", "gpu1", "cpu", "numpy", "torch"):
    path = os.path.join(out, f"rtrl_{side}.jsonl")
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        key = side if side != "torch" else "torch-" + r["variant"]
        rows.setdefault(r["bits"], {})[key] = r
cols = [("gpu", "GPU"), ("gpu1", "GPU 1/sub"), ("cpu", "CPU"), ("numpy", "NumPy"), ("torch-eager", "torch eager"), ("torch-cuda-graph", "torch graph")]
print(f"{'n':>4} {'layers':>12} " + " ".join(f"{t + ' µs':>15}" for _, t in cols) + f" {'CPU/GPU':>8} {'graph/GPU':>10}  mean E per column")
for n in sorted(rows):
    r = rows[n]
    us = {k: v["microseconds_per_step"] for k, v in r.items()}
    layers = "-".join(map(str, next(iter(r.values()))["layers"]))
    ratio = lambda a: f"{us[a] / us['gpu']:.2f}" if a in us and "gpu" in us else "-"
    cell = lambda k: f"{us[k]:.1f}" if k in us else "-"
    errors = ", ".join(f"{r[k]['mean_error']:.6f}" if k in r else "-" for k, _ in cols)
    print(f"{n:>4} {layers:>12} " + " ".join(f"{cell(k):>15}" for k, _ in cols) + f" {ratio('cpu'):>8} {ratio('torch-cuda-graph'):>10}  {errors}")
gpu = next((r["gpu"]["backend"] for r in rows.values() if "gpu" in r), "no GPU rows")
torch_device = next((r[k]["device"] for r in rows.values() for k in r if k.startswith("torch")), "no torch rows")
print(f"device: {gpu}; torch on {torch_device}")
path = os.path.join(out, "rtrl_accuracy.jsonl")
accuracy = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
if accuracy:
    print(f"{'n':>4} {'layers':>12} {'steps':>8} {'held-out accuracy':>18} {'bits':>8} {'mean E':>10} {'µs/step':>9}  (online RTRL on the GPU)")
    for r in accuracy:
        layers = "-".join(map(str, r["layers"]))
        print(f"{r['bits']:>4} {layers:>12} {r['steps']:>8} {100 * r['accuracy']:>17.2f}% {100 * r['bit_accuracy']:>7.2f}% {r['mean_error']:>10.5f} {r['microseconds_per_step']:>9.1f}")
PY

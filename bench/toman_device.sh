#!/usr/bin/env bash
# Issue 21's device benchmark: Toman's setting (784-25-15-10, all sigmoid, full batch on the
# 10,000 MNIST test digits, his adaptive rule with robust training, up/down 1.3/0.7) on the
# GPU, ours (`deepbelief mlp --backend gpu`: the rule, the best weights and the rollback
# resident on the device, 32 bytes read back per epoch) against the PyTorch peer
# (bench/toman_torch.py: the same rule in torch ops, eager and captured in a CUDA graph), from
# the same starting weights, in one run; ours on the CPU too. Every row is a JSON line in
# $OUT/toman_{gpu,cpu,torch}.jsonl; a table in $OUT/toman_summary.txt (ms per epoch, the
# error at epochs 1, 100 and 265: the issue's bars are ≤ 3 ms per epoch and ≤ PyTorch on the
# device, ≤ 40 ms per epoch on the CPU, error ≤ 0.046 by epoch 265).
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/),
# the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md) and the MNIST test
# files (MNIST=folder with t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz; default
# ../shared/data/mnist, or pass the folder as the first argument):
#
#   bash bench/toman_device.sh [MNIST_FOLDER]        (device run: carry [".sweep", ".gl"])
#
# Knobs (environment): EPOCHS (265), UP (1.3), DOWN (0.7), SEED (1), LIMIT (all cases),
# VARIANTS (eager,graph), CPU (1: also ours on the CPU; 0: not), GPU_TIMEOUT_S (200),
# CPU_TIMEOUT_S (200), TORCH_TIMEOUT_S (200), BIN (.sweep/bin/deepbelief), PROFILE (1: also
# `deepbelief mlp --backend gpu --profile`: each dispatch's µs in an epoch and the one-pass
# epoch, appended to $OUT/toman_profile.txt; 0: not), PROFILE_SETTINGS (with PROFILE=1: a
# space-separated list of settings, one profile each; a setting is "default" or
# comma-separated key=value of forward=small|medium|wide|large|auto
# (DEEPBELIEF_MLP_FORWARD_TILING), splits=N|auto (DEEPBELIEF_MLP_GRADIENT_SPLITS),
# kernels=fold|gemm (DEEPBELIEF_MLP_KERNELS); e.g. "default forward=auto kernels=gemm
# forward=medium,splits=8"; default "default"). A smoke test where
# there is no GPU: EPOCHS=3 LIMIT=200 WGPU_BACKEND=vulkan VK_DRIVER_FILES=<lavapipe's ICD>
# BIN=target/release/deepbelief bash bench/toman_device.sh.
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/toman_device}
mkdir -p "$OUT"
MNIST=${1:-${MNIST:-../shared/data/mnist}}
IMAGES=$MNIST/t10k-images-idx3-ubyte.gz
LABELS=$MNIST/t10k-labels-idx1-ubyte.gz
EPOCHS=${EPOCHS:-265}
UP=${UP:-1.3}
DOWN=${DOWN:-0.7}
SEED=${SEED:-1}
LIMIT=${LIMIT:-0}
VARIANTS=${VARIANTS:-eager,graph}
BIN=${BIN:-.sweep/bin/deepbelief}
for f in "$IMAGES" "$LABELS" "$BIN"; do
  [ -e "$f" ] || { echo "toman_device.sh: $f is missing" >&2; exit 2; }
done
# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc); $EPOCHS epochs, up/down $UP/$DOWN, seed $SEED, limit $LIMIT"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/toman_env.txt" 2>&1
cat "$OUT/toman_env.txt" >&2
limit=()
[ "$LIMIT" != 0 ] && limit=(--limit "$LIMIT")
data=(--images "$IMAGES" --labels "$LABELS" "${limit[@]}")
# The starting weights, shared by every run: ours writes them (seeded), the peer reads them.
"$BIN" mlp --layers 784,25,15,10 "${data[@]}" --epochs 0 --seed "$SEED" --out "$OUT/start" >/dev/null 2>>"$OUT/toman.log"
rule=(--up "$UP" --down "$DOWN" --epochs "$EPOCHS" --checkpoint-every 0 --json)

ours() { # backend, timeout
  echo "== ours, $1" | tee -a "$OUT/toman.log" >&2
  timeout "$2" "$BIN" mlp "${data[@]}" --weights "$OUT/start/mlp.json" "${rule[@]}" --backend "$1" --out "$OUT/run_$1" 2>>"$OUT/toman.log" | tail -n 1 | grep '^{' >"$OUT/toman_$1.jsonl"
}
ours gpu "${GPU_TIMEOUT_S:-200}"
if [ "${PROFILE:-0}" = 1 ]; then
  for setting in ${PROFILE_SETTINGS:-default}; do
    knobs=()
    if [ "$setting" != default ]; then
      IFS=, read -r -a pairs <<<"$setting"
      for pair in "${pairs[@]}"; do
        case "${pair%%=*}" in
          forward) knobs+=("DEEPBELIEF_MLP_FORWARD_TILING=${pair#*=}") ;;
          splits) knobs+=("DEEPBELIEF_MLP_GRADIENT_SPLITS=${pair#*=}") ;;
          kernels) knobs+=("DEEPBELIEF_MLP_KERNELS=${pair#*=}") ;;
          *) echo "toman_device.sh: PROFILE_SETTINGS: $pair: expected forward=, splits= or kernels=" >&2; exit 2 ;;
        esac
      done
    fi
    echo "== ours, gpu profile, setting $setting" | tee -a "$OUT/toman.log" >&2
    { echo "== $(date -u +%FT%TZ) $("$BIN" --version) setting: $setting ${knobs[*]}"
      env "${knobs[@]}" timeout "${GPU_TIMEOUT_S:-200}" "$BIN" mlp "${data[@]}" --weights "$OUT/start/mlp.json" --up "$UP" --down "$DOWN" \
        --backend gpu --profile --out "$OUT/profile" 2>>"$OUT/toman.log"; } | tee -a "$OUT/toman_profile.txt" >&2
  done
fi
[ "${CPU:-1}" = 1 ] && ours cpu "${CPU_TIMEOUT_S:-200}"
echo "== PyTorch ($VARIANTS)" | tee -a "$OUT/toman.log" >&2
timeout "${TORCH_TIMEOUT_S:-200}" python3 bench/toman_torch.py "${data[@]}" --start "$OUT/start/mlp.json" --epochs "$EPOCHS" \
  --up "$UP" --down "$DOWN" --variants "$VARIANTS" 2>>"$OUT/toman.log" >"$OUT/toman_torch.jsonl"

python3 - "$OUT" <<'PY' | tee "$OUT/toman_summary.txt"
import json, os, sys
out = sys.argv[1]
rows = []
for side in ("gpu", "cpu"):
    path = os.path.join(out, f"toman_{side}.jsonl")
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        # The epochs' own time (stage_seconds: the device's loop, or the CPU's four stages).
        seconds = sum(r["stage_seconds"].values())
        rows.append((f"ours {side} ({r.get('ran_on', side)})", 1000 * seconds / max(r["epochs"], 1), dict(r["errors_at"]), r["rollbacks"], r["error"]))
path = os.path.join(out, "toman_torch.jsonl")
for line in open(path) if os.path.exists(path) else []:
    r = json.loads(line)
    if "skipped" in r:
        continue
    rows.append((f"torch {r['variant']} ({r['device']})", r["ms_per_epoch"], {int(k): v for k, v in r["errors_at"]}, r["rollbacks"], r["final_error"]))
print(f"{'run':<44} {'ms/epoch':>9} {'E@1':>9} {'E@100':>9} {'E@265':>9} {'rollbacks':>9} {'final':>9}")
for name, ms, at, rollbacks, final in rows:
    cell = lambda e: f"{at[e]:.5f}" if e in at else "-"
    print(f"{name:<44} {ms:>9.3f} {cell(1):>9} {cell(100):>9} {cell(265):>9} {rollbacks:>9} {final:>9.5f}")
PY

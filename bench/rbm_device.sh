#!/usr/bin/env bash
# Issue 22's GPU comparison on the device machine, in one run: our CD-1 epoch, Raina's
# 4096x11008 shape and the 8192^3 GEMM (`deepbelief bench --backend gpu --json`, once per
# setting of SETTINGS), then PyTorch's peers of the same loop (bench/torch_rbm.py: eager, one
# batch captured in a CUDA graph, a whole epoch captured, torch.compile inside the graph, and the
# fastest again with TF32 as a separate row). Each step under `timeout`; what a step printed
# before its timeout stays. Rows in $OUT/rbm_ours.jsonl (one per setting, with "setting") and
# $OUT/rbm_torch.jsonl (one per shape, variant and precision; a summary last); the table in
# $OUT/rbm_summary.txt: epoch s, Raina s per 1M examples and GEMM TFLOP/s of every row, ours /
# the fastest fp32 PyTorch variant, and the targets (epoch <= 0.020 s, Raina <= 11 s/M, GEMM
# >= 40 TFLOP/s). About 4 minutes by default; at most OURS_TIMEOUT_S per setting +
# TORCH_TIMEOUT_S.
#
# Run from the repository root there, with our binary carried at .sweep/bin/deepbelief (built
# here: cargo build --release --bin deepbelief && cp target/release/deepbelief .sweep/bin/), the
# 10k MNIST images at .sweep/train-10k-images-idx3-ubyte.gz (tiled to CASES cases by both
# sides) and the Vulkan loader's .debs in .gl/ (see /work/.library/device/README.md):
#
#   bash bench/rbm_device.sh            (device run: carry [".sweep", ".gl"])
#
# Knobs (environment): SETTINGS (space-separated; each "default" or environment assignments
# joined by '+', run as one `deepbelief bench` each, for A/B: e.g.
# SETTINGS="default DEEPBELIEF_FUSED_UPDATE=0 DEEPBELIEF_GEMM_TUNING=rule=1+DEEPBELIEF_BENCH_WARM_UP_S=2";
# default "default"), CASES (60000), REPEATS (5: timed MNIST epochs, both sides), RAINA (1; 0:
# no Raina shapes and no 8192^3 GEMM, ours --no-raina, torch --shapes mnist --sgemm 0),
# RAINA_BATCHES (300), VARIANTS (eager,cuda-graph,cuda-graph-epoch,compile,tf32), COMPILE_MODE
# (max-autotune-no-cudagraphs), TORCH (1; 0 skips PyTorch), TORCH_DEVICE (cuda; cpu for a smoke
# test), OURS_TIMEOUT_S (90 per setting), TORCH_TIMEOUT_S (210), BIN (.sweep/bin/deepbelief),
# IMAGES (.sweep/train-10k-images-idx3-ubyte.gz), OUT (/tmp/rbm_device), OURS_EXTRA (more flags
# for ours, split on spaces; for smoke tests). A smoke test where there is no GPU (the GEMM
# timings at 500 hidden units take minutes on lavapipe): CASES=1000 REPEATS=1 RAINA=0 TORCH=0
# OURS_EXTRA="--hidden 32" BIN=target/release/deepbelief WGPU_BACKEND=vulkan
# VK_DRIVER_FILES=<lavapipe's ICD> bash bench/rbm_device.sh
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/rbm_device}
mkdir -p "$OUT"
LOG=$OUT/rbm.log
: >"$LOG"
BIN=${BIN:-.sweep/bin/deepbelief}
IMAGES=${IMAGES:-.sweep/train-10k-images-idx3-ubyte.gz}
SETTINGS=${SETTINGS:-default}
CASES=${CASES:-60000}
REPEATS=${REPEATS:-5}
RAINA=${RAINA:-1}
RAINA_BATCHES=${RAINA_BATCHES:-300}
VARIANTS=${VARIANTS:-eager,cuda-graph,cuda-graph-epoch,compile,tf32}
COMPILE_MODE=${COMPILE_MODE:-max-autotune-no-cudagraphs}
TORCH=${TORCH:-1}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
OURS_TIMEOUT_S=${OURS_TIMEOUT_S:-90}
TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-210}
export PYTHONUNBUFFERED=1
for f in "$BIN" "$IMAGES"; do
  [ -e "$f" ] || { echo "rbm_device.sh: $f is missing" >&2; exit 2; }
done
for setting in $SETTINGS; do
  [ "$setting" = default ] && continue
  IFS=+ read -r -a pairs <<<"$setting"
  for pair in "${pairs[@]}"; do
    [[ "$pair" =~ ^[A-Z_][A-Z0-9_]*= ]] || { echo "rbm_device.sh: SETTINGS: $pair: expected NAME=VALUE (settings are 'default' or NAME=VALUE joined by '+')" >&2; exit 2; }
  done
done
# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $(nproc); cases $CASES, repeats $REPEATS, raina $RAINA ($RAINA_BATCHES batches), settings: $SETTINGS"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1
  [ "$TORCH" = 1 ] && python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "deepbelief: $("$BIN" --version)"
} >"$OUT/rbm_env.txt" 2>&1
cat "$OUT/rbm_env.txt" >&2

ours_flags=(bench --backend gpu --json --images "$IMAGES" --cases "$CASES" --repeats "$REPEATS" --raina-batches "$RAINA_BATCHES" ${OURS_EXTRA:-})
torch_flags=(--json --images "$IMAGES" --cases "$CASES" --repeats "$REPEATS" --raina-batches "$RAINA_BATCHES" --variants "$VARIANTS" --compile-mode "$COMPILE_MODE" --device "$TORCH_DEVICE")
if [ "$RAINA" != 1 ]; then
  ours_flags+=(--no-raina)
  torch_flags+=(--shapes mnist --sgemm 0)
fi

: >"$OUT/rbm_ours.jsonl"
for setting in $SETTINGS; do
  knobs=()
  [ "$setting" != default ] && IFS=+ read -r -a knobs <<<"$setting"
  echo "== ours, setting $setting" | tee -a "$LOG" >&2
  env ${knobs[@]+"${knobs[@]}"} timeout "$OURS_TIMEOUT_S" "$BIN" "${ours_flags[@]}" 2>>"$LOG" | tail -n 1 | grep '^{' \
    | python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); r["setting"] = sys.argv[1]; print(json.dumps(r))' "$setting" >>"$OUT/rbm_ours.jsonl" 2>>"$LOG" \
    || echo "ours, setting $setting: no report (timeout after ${OURS_TIMEOUT_S} s, or a failure: see above)" | tee -a "$LOG" >&2
done

if [ "$TORCH" = 1 ]; then
  echo "== PyTorch ($VARIANTS)" | tee -a "$LOG" >&2
  timeout "$TORCH_TIMEOUT_S" python3 bench/torch_rbm.py "${torch_flags[@]}" 2>>"$LOG" >"$OUT/rbm_torch.jsonl" \
    || echo "PyTorch: exit $? (124: cut by TORCH_TIMEOUT_S=$TORCH_TIMEOUT_S; the rows printed before stay)" | tee -a "$LOG" >&2
fi

python3 - "$OUT" <<'PY' | tee "$OUT/rbm_summary.txt"
import json, os, sys
out = sys.argv[1]
TARGET_EPOCH_S, TARGET_RAINA, TARGET_GEMM = 0.020, 11.0, 40.0

def lines(name):
    path = os.path.join(out, name)
    rows = []
    for line in open(path) if os.path.exists(path) else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows

ours = lines("rbm_ours.jsonl")
torch_rows = [r for r in lines("rbm_torch.jsonl") if not r.get("summary")]
table = []  # (name, epoch s, Raina s/M, GEMM TFLOP/s)
for r in ours:
    raina = next((x["seconds_per_million"] for x in r.get("raina", []) if (x["n_visible"], x["n_hidden"]) == (4096, 11008)), None)
    gemm = next((g["gflops"] / 1000 for g in r.get("gemm", []) if (g["m"], g["k"], g["n"]) == (8192, 8192, 8192)), None)
    table.append((f"ours {r['setting']}", r["gpu_epoch_s"], raina, gemm))
fastest = {}  # shape -> (value, variant) of the fastest fp32 PyTorch row
by_run = {}
for r in torch_rows:
    if "failed" in r or "seconds_median" not in r:
        continue
    shape, precision = r["shape"], r["precision"]
    value = r.get("epoch_s", r.get("s_per_million", r.get("tflops")))
    name = "torch mm (cuBLAS)" if shape == "sgemm" else f"torch {r['variant']}" + (f" [{r['graph']} graph]" if r.get("graph") in ("batch", "epoch") else "")
    cells = by_run.setdefault((name, precision), [None, None, None])
    cells[{"mnist": 0, "raina": 1, "sgemm": 2}[shape]] = value
    if precision == "fp32":
        better = (lambda a, b: a > b) if shape == "sgemm" else (lambda a, b: a < b)
        if shape not in fastest or better(value, fastest[shape][0]):
            fastest[shape] = (value, r["variant"])
for (name, precision), cells in by_run.items():
    table.append((f"{name} {precision}", *cells))

def cell(value, digits):
    return f"{value:.{digits}f}" if value is not None else "-"

def ratio(value, shape, inverse=False):
    if value is None or shape not in fastest:
        return "-"
    return f"{(fastest[shape][0] / value) if inverse else (value / fastest[shape][0]):.2f}"

print(f"{'run':<44} {'epoch s':>9} {'Raina s/M':>10} {'GEMM TFLOP/s':>13} {'epoch/pt':>9} {'Raina/pt':>9} {'cuBLAS/row':>11}")
for name, epoch, raina, gemm in table:
    print(f"{name:<44} {cell(epoch, 4):>9} {cell(raina, 2):>10} {cell(gemm, 1):>13} {ratio(epoch, 'mnist'):>9} {ratio(raina, 'raina'):>9} {ratio(gemm, 'sgemm', True):>11}")
print("ratios: ours (or the row) / the fastest fp32 PyTorch row, time for time (< 1: faster than PyTorch);"
      " GEMM: cuBLAS fp32 TFLOP/s / the row's (< 1: faster than cuBLAS)")
print("fastest fp32 PyTorch: " + "; ".join(f"{shape} {variant} {value:.4g}" for shape, (value, variant) in fastest.items()) if fastest else "no PyTorch rows")
failed = [f"{r['shape']} {r['variant']} {r['precision']}: {r['failed'][:120]}" for r in torch_rows if "failed" in r]
for f in failed:
    print(f"PyTorch failed: {f}")
print(f"targets: epoch <= {TARGET_EPOCH_S} s, Raina 4096x11008 <= {TARGET_RAINA} s per 1M examples, GEMM 8192^3 >= {TARGET_GEMM} TFLOP/s")
for name, epoch, raina, gemm in table:
    if not name.startswith("ours"):
        continue
    mark = lambda ok: "-" if ok is None else ("met" if ok else "MISSED")
    print(f"  {name}: epoch {mark(None if epoch is None else epoch <= TARGET_EPOCH_S)}, Raina {mark(None if raina is None else raina <= TARGET_RAINA)},"
          f" GEMM {mark(None if gemm is None else gemm >= TARGET_GEMM)}")
adapter = next((r.get("backend") for r in ours), "no ours rows")
device = next((r.get("device") for r in torch_rows), "no PyTorch rows")
print(f"ours on {adapter}; PyTorch on {device}")
PY

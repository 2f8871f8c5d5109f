#!/usr/bin/env bash
# GEMM kernel choices on the H100 device machine (issues 17 and 22): one command, about 6 min.
#   1. tests/gpu_gemm_ab.rs's A/B run (built here: cargo test --release --test gpu_gemm_ab
#      --no-run, the binary copied to .sweep/bin/gemm_ab) over the autoencoder's products at
#      8192 x 4096 on 10,000 cases and the 8192^3 square, every tuning checked against the
#      automatic choice on a ragged product first;
#   2. the v x v/2 autoencoder's cost and gradient (deepbelief bench --autoencoder --backend
#      gpu) under each tuned rule (DEEPBELIEF_GEMM_TUNING=rule=N, variant.rs::tuned_rule);
#   3. PyTorch's best loop on the same sizes, in the same run.
# Device run: bash bench/gemm_tuning_device.sh   (carry [".sweep", ".gl"])
# Knobs: SHAPES, TUNINGS, RULES, SIZES, ROUNDS, REPEATS.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gemm_tuning}
mkdir -p "$OUT"
# Vulkan for native wgpu (the loader from .gl/ where missing, the NVIDIA ICD).
. bench/device_vulkan.sh
export PYTHONUNBUFFERED=1
SHAPES=${SHAPES:-nn:8192x8192x8192 nnb:10000x8192x4096 ntb:10000x4096x8192 tn:8192x10000x4096 tn:4096x10000x8192}
TUNINGS=${TUNINGS:-base; un,ui; un,ui,va,vb,db; un,ui,va,vb,dk; g=8; g=8,un,ui; t=huge; t=huge,un,ui; va,vb,db}
RULES=${RULES:-0 1 2 3 4}
SIZES=${SIZES:-1024,2048,4096,8192}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== 1. GEMM A/B"
GEMM_AB_SHAPES="$SHAPES" GEMM_AB_TUNINGS="$TUNINGS" GEMM_AB_ROUNDS=${ROUNDS:-3} GEMM_AB_REPEATS=${REPEATS:-10} \
  timeout 240 .sweep/bin/gemm_ab --ignored --nocapture 2>&1 | tee "$OUT/gemm_ab.txt" | grep -v '^adapter'
echo "== 2. autoencoder cost+gradient per rule"
for r in $RULES; do
  DEEPBELIEF_GEMM_TUNING=rule=$r timeout 60 .sweep/bin/deepbelief bench --autoencoder --backend gpu --sizes "$SIZES" --cases 10000 \
    --repeats 10 --warmups 3 --json 2>>"$OUT/ae.log" | python3 -c "
import json,sys
for l in sys.stdin:
    try: r=json.loads(l)
    except Exception: continue
    if r.get('variant')=='resident': print('rule $r', r['size'], 'x', r['hidden'], 'median %.4f s' % r['seconds_median'], 'J %.6f' % r['J'])
" | tee -a "$OUT/rules.txt"
done
echo "== 3. PyTorch"
timeout 150 python3 bench/autoencoder_torch.py --sizes "$SIZES" --cases 10000 --repeats 10 --warmups 3 --compile-mode auto \
  --compile-budget-s 30 --compile-total-s 60 --time-budget-s 110 2>>"$OUT/torch.log" | tee "$OUT/torch.jsonl" | python3 -c "
import json,sys
for l in sys.stdin:
    try: r=json.loads(l)
    except Exception: continue
    if r.get('variant')=='best': print('torch', r['size'], 'x', r['hidden'], 'median %.4f s' % r['seconds_median'], r.get('best_of'), 'J %.6f' % r['J'])
"

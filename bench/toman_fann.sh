#!/bin/bash
# Toman's setting against FANN 2.2 in the same run (issue 21; docs/TOMAN.md): the same
# data (written in Toman's text format by deepbelief itself), the same starting weights,
# FANN's RPROP (iRprop−), Quickprop, batch and incremental rules against `deepbelief mlp`'s
# ports with --fann-derivative-clip, error (RMS/2) per epoch side by side and seconds per
# epoch. Then Toman's own rule (adaptive, exact gradient) for reference.
#
#   bench/toman_fann.sh [CASES] [EPOCHS]      (defaults: 10000 cases, 265 epochs)
#
# Needs Debian's libfann-dev and a release build (target/release/deepbelief). Timings mean
# something only on an idle machine.
set -euo pipefail
CASES=${1:-10000}
EPOCHS=${2:-265}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DEEPBELIEF:-$ROOT/target/release/deepbelief}
D=${MNIST:-$ROOT/../shared/data/mnist}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
gcc -O2 -o "$W/toman_fann" "$ROOT/bench/toman_fann.c" -ldoublefann -lm
"$BIN" mlp --layers 784,25,15,10 --images "$D/t10k-images-idx3-ubyte.gz" --labels "$D/t10k-labels-idx1-ubyte.gz" \
  --limit "$CASES" --epochs 0 --write-toman-data "$W/data.txt" --out "$W/init" > /dev/null
python3 "$ROOT/bench/toman_fann.py" "$W/init/mlp.json" "$W/weights.txt"
for pair in rprop:rprop-fann quickprop:quickprop batch:backprop incremental:incremental; do
  fann=${pair%%:*}; ours=${pair##*:}
  "$W/toman_fann" "$W/data.txt" "$W/weights.txt" "$fann" "$EPOCHS" > "$W/fann_$fann.txt"
  "$BIN" mlp --toman-data "$W/data.txt" --weights "$W/init/mlp.json" --optimizer "$ours" --momentum 0 \
    --fann-derivative-clip --epochs "$EPOCHS" --checkpoint-every 0 --out "$W/$ours" --json > "$W/$ours.json" 2> /dev/null
  python3 - "$W/fann_$fann.txt" "$W/$ours/errors.csv" "$W/$ours.json" "$fann" "$ours" <<'PY'
import json, sys
fann = [line.split() for line in open(sys.argv[1])]
ours = [line.strip().split(",") for line in open(sys.argv[2])][1:]
summary = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
fann_s = sum(float(r[2]) for r in fann) / len(fann)
ours_s = summary["seconds"] / max(summary["epochs"], 1)
print(f"== FANN {sys.argv[4]} vs deepbelief {sys.argv[5]}: {1000 * fann_s:.1f} vs {1000 * ours_s:.1f} ms per epoch")
# FANN's incremental MSE is summed while the weights move within the epoch; ours is the
# error at the epoch's start, so that row compares only loosely.
for e in sorted({1, 2, 5, 10, 50, 100, 265, 369, len(fann)}):
    if e <= min(len(fann), len(ours)):
        f, o = float(fann[e - 1][1]), float(ours[e - 1][1])
        print(f"  epoch {e:4d}  FANN {f:.6f}  ours {o:.6f}  relative {abs(o - f) / f:.1e}")
PY
done
"$BIN" mlp --layers 784,25,15,10 --images "$D/t10k-images-idx3-ubyte.gz" --labels "$D/t10k-labels-idx1-ubyte.gz" \
  --limit "$CASES" --weights "$W/init/mlp.json" --epochs "$EPOCHS" --checkpoint-every 0 --out "$W/adaptive" --json 2> /dev/null | tail -1 |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print("== deepbelief adaptive (Toman, exact gradient):", d["errors_at"], "%.1f ms per epoch" % (1000 * d["seconds"] / max(d["epochs"], 1)))'

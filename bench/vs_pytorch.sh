#!/bin/sh
# bench/vs_pytorch.sh PEER: trident's train_gpt next to a PyTorch peer script, side by side.
#
#   cmake --build build --target train_gpt
#   sh bench/vs_pytorch.sh ../shared/peers/torch_gpt.py        # REPS=3, STEPS=7 by default
#
# The bench model (V4096 T128 L4 C256 H8, global batch 8, float, one thread per rank) in six
# pairs: single process; DP2 against DDP-2; TP2 against the peer's TP-2; DP8 against DDP-8; DP8
# with ZeRO-1 (AdamW on an eighth of the parameters per rank, the same updates) against DDP-8;
# and TP2-PP2-DP2 with ZeRO-1 (1F1B, 4 microbatches) against DDP-8. Each pair runs REPS repetitions,
# trident and the peer alternately (the order swapping each repetition), and prints the medians
# of tokens/s and the median of the per-repetition ratios trident/peer.
#
# PEER: any script with the interface of torch_gpt.py (`single`, `dp N`, `tp N`; prints
# `tokens_per_s=`). Both sides run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset and
# OPENBLAS_NUM_THREADS=1, as the peer's README asks (trident's GEMM may be OpenBLAS too).
# trident's figure: train_gpt's --json report, tokens_per_s over the steps after the first.
set -eu
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo "usage: sh bench/vs_pytorch.sh PEER   (PEER: a script like ../shared/peers/torch_gpt.py)" >&2
  exit 2
fi
peer=$1
reps=${REPS:-3}
steps=${STEPS:-7}
build=${TRIDENT_BUILD_DIR:-build}
train=$build/examples/train_gpt
[ -x "$train" ] || { echo "build $train first (cmake --build $build --target train_gpt)" >&2; exit 2; }
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same_env="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"
model="--vocab 4096 --seq 128 --layers 4 --hidden 256 --heads 8 --batch 8"

# trident RANKS FLAGS...: tokens/s of one train_gpt run.
trident() {
  ranks=$1
  shift
  $same_env mpiexec -n "$ranks" "$train" $model --data synthetic --steps "$steps" \
    --log-every 1000 --threads 1 --json "$work/report.json" "$@" > "$work/trident.log"
  $python -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["tokens_per_s"]))' \
    "$work/report.json"
}
# torch ARGS...: tokens/s of one peer run.
torch() {
  $same_env $python "$peer" "$@" > "$work/peer.log"
  sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p' "$work/peer.log" | tail -n 1
}
median() {
  tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

load() { cut -d' ' -f1 /proc/loadavg; }
echo "# trident vs $(basename "$peer"): bench model, $reps repetitions alternating, load $(load)"
printf '%-34s %10s %10s %8s   %s\n' "configuration" "trident" "peer" "ratio" "(tokens/s, medians)"
# pair NAME RANKS "TRIDENT FLAGS" PEER ARGS...
pair() {
  name=$1 ranks=$2 flags=$3
  shift 3
  ours="" theirs="" ratios=""
  i=0
  while [ $i -lt "$reps" ]; do
    if [ $((i % 2)) -eq 0 ]; then
      a=$(trident "$ranks" $flags)
      b=$(torch "$@")
    else
      b=$(torch "$@")
      a=$(trident "$ranks" $flags)
    fi
    ours="$ours $a" theirs="$theirs $b"
    ratios="$ratios $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", a / b }')"
    i=$((i + 1))
  done
  printf '%-34s %10.0f %10.0f %7.2fx   trident%s | peer%s\n' "$name" \
    "$(echo "$ours" | median)" "$(echo "$theirs" | median)" "$(echo "$ratios" | median)" \
    "$ours" "$theirs"
}
pair "single process" 1 "" single
pair "DP2 vs DDP-2" 2 "--dp 2" dp 2
pair "TP2 vs TP-2" 2 "--tp 2" tp 2
pair "DP8 vs DDP-8" 8 "--dp 8" dp 8
pair "DP8 ZeRO-1 vs DDP-8" 8 "--dp 8 --zero 1" dp 8
pair "TP2-PP2-DP2 ZeRO-1 vs DDP-8" 8 "--tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b" dp 8
echo "# load $(load) at the end"

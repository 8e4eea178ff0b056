#!/usr/bin/env bash
# Scaling of a workload from 1 to N threads, as the median ratio of several paired
# runs. Each pair runs the 1-thread and the N-thread point back to back in one
# process (the ratio is measured in the same run), which damps this shared machine's
# drift better than comparing separate runs.
#
# usage: bench/scaling.sh [PAIRS] [SECS] [THREADS] [WORKLOAD] [extra kvmark flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-7}; secs=${2:-3}; threads=${3:-2}; workload=${4:-workloads/mixed.lua}
shift $(( $# < 4 ? $# : 4 )) || true
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
ratios=()
for i in $(seq "$pairs"); do
  row=$("$kvmark" --threads "1,$threads" --secs "$secs" "$@" "$workload" | awk '/=== summary ===/{s=1;next} s&&NR>0&&$3~/^[0-9]+$/{print $6}' | paste -sd' ')
  read -r one many <<<"$row"
  r=$(awk -v a="$one" -v b="$many" 'BEGIN{printf "%.3f", b/a}')
  ratios+=("$r")
  echo "pair $i: 1 thread $one wu/s, $threads threads $many wu/s, ratio $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median ratio over %d pairs: %.2f (min %.2f, max %.2f)\n", NR, m, v[1], v[NR]}'

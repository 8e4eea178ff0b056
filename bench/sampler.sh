#!/usr/bin/env bash
# The timeline sampler's cost to the workers: wu/s of the null workload with and
# without sampling, as the median ratio of several back-to-back pairs in one
# session (the order alternates so drift on a shared machine cancels out).
#
# Sampled runs write everything a sampler feeds: the timeline (every 0.1 s by
# default) and the histogram logs.
#
# usage: bench/sampler.sh [PAIRS] [SECS] [INTERVAL] [THREADS] [WORKLOAD]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-11}; secs=${2:-3}; interval=${3:-0.1}; threads=${4:-1}; workload=${5:-workloads/null.lua}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

run() { # prints wu/s
  "$kvmark" --secs "$secs" --threads "$threads" --probe none "$@" "$workload" \
    | awk '/^throughput:/{print $2; exit}'
}
plain() { run; }
sampled() { run --timeline "$interval" --report "console,timeline:$out/tl.tsv,hdr:$out/hdr"; }

ratios=()
for i in $(seq "$pairs"); do
  if (( i % 2 )); then a=$(plain); b=$(sampled); else b=$(sampled); a=$(plain); fi
  r=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.4f", b/a}')
  ratios+=("$r")
  echo "pair $i: without $a wu/s, with --timeline $interval $b wu/s, ratio $r"
done
samples=$(awk -F'\t' '$8=="wu_per_s"' "$out/tl.tsv" | wc -l)
echo "last sampled run: $samples timeline samples"
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median ratio (with/without) over %d pairs: %.4f (min %.4f, max %.4f): cost %.2f%%\n", NR, m, v[1], v[NR], (1-m)*100}'

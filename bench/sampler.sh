#!/usr/bin/env bash
# The timeline sampler's cost to the workers: the null workload with and without
# sampling, as the median ratio of several back-to-back pairs in one session (the
# order alternates so drift on a shared machine cancels out).
#
# Two ratios per pair:
#   wall  wu/s as reported (what a user sees; noisy when the machine is shared)
#   cpu   units per CPU-second of the whole process (user + system, the sampler
#         thread included), which other processes' load barely moves
#
# Sampled runs write everything the sampler feeds: the timeline (every 0.1 s by
# default) and the histogram logs.
#
# With PIN=CPUS (e.g. PIN=1) every run is confined to those CPUs with taskset, so
# the sampler thread competes with the worker for the same CPU: the worst case.
#
# usage: [PIN=CPUS] bench/sampler.sh [PAIRS] [SECS] [INTERVAL] [THREADS] [WORKLOAD]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-11}; secs=${2:-3}; interval=${3:-0.1}; threads=${4:-1}; workload=${5:-workloads/null.lua}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
pin=(); [ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")

# Runs kvmark with extra flags; prints "wu/s units-per-cpu-second".
run() {
  local TIMEFORMAT='%U %S'
  { time "${pin[@]}" "$kvmark" --secs "$secs" --threads "$threads" --probe none "$@" "$workload" \
      >"$out/run.txt" 2>/dev/null; } 2>"$out/time.txt"
  local wu units cpu
  wu=$(awk '/^throughput:/{print $2; exit}' "$out/run.txt")
  units=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="units") c=i; next} {print $c; exit}' "$out/p.tsv")
  cpu=$(awk '{print $1 + $2}' "$out/time.txt")
  echo "$wu $(awk -v u="$units" -v c="$cpu" 'BEGIN{printf "%.0f", u/c}')"
}
plain() { run --report "console:$out/run.txt,tsv:$out/p.tsv"; }
sampled() { run --timeline "$interval" --report "console:$out/run.txt,tsv:$out/p.tsv,timeline:$out/tl.tsv,hdr:$out/hdr"; }

wall=(); cpu=()
for i in $(seq "$pairs"); do
  if (( i % 2 )); then read -r aw ac <<<"$(plain)"; read -r bw bc <<<"$(sampled)"
  else read -r bw bc <<<"$(sampled)"; read -r aw ac <<<"$(plain)"; fi
  rw=$(awk -v a="$aw" -v b="$bw" 'BEGIN{printf "%.4f", b/a}')
  rc=$(awk -v a="$ac" -v b="$bc" 'BEGIN{printf "%.4f", b/a}')
  wall+=("$rw"); cpu+=("$rc")
  echo "pair $i: without $aw wu/s ($ac per cpu-s), with --timeline $interval $bw wu/s ($bc per cpu-s): wall ratio $rw, cpu ratio $rc"
done
samples=$(awk -F'\t' '$8=="wu_per_s"' "$out/tl.tsv" | wc -l)
echo "last sampled run: $samples timeline samples"
median() { sort -n | awk -v what="$1" '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%s: median ratio (with/without) over %d pairs %.4f (min %.4f, max %.4f): cost %.2f%%\n", what, NR, m, v[1], v[NR], (1-m)*100}'; }
printf '%s\n' "${wall[@]}" | median "wall wu/s"
printf '%s\n' "${cpu[@]}" | median "units per cpu-second"

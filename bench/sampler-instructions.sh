#!/usr/bin/env bash
# The sampler's cost in instructions, which a shared machine cannot blur: the null
# workload runs a fixed number of units under callgrind, without and with
# --timeline (timeline and histogram logs written), and the script prints the
# instructions executed inside the worker thread (everything under crew::worker)
# and inside the sampler thread.
#
# Under valgrind the program runs some 50 times slower while the sampler keeps its
# wall-clock period, so each unit sees ~50 times more samples than natively: the
# sampler's share printed here is an upper bound. Valgrind runs one thread at a
# time; --fair-sched=yes hands the sampler its turns (without it the worker can
# finish before the sampler ticks), and --threshold=100 lists every function, so
# a thread with a small share is still counted rather than cut from the listing.
#
# usage: bench/sampler-instructions.sh [UNITS] [INTERVAL] [WORKLOAD]
set -euo pipefail
cd "$(dirname "$0")/.."
units=${1:-500000}; interval=${2:-0.1}; workload=${3:-workloads/null.lua}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

profile() { # name, extra kvmark flags...
  local name=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" \
    --fair-sched=yes "$kvmark" --ops "$units" --probe none "$@" "$workload" >/dev/null 2>"$out/$name.log"
  callgrind_annotate --inclusive=yes --threshold=100 "$out/$name.cg" 2>/dev/null >"$out/$name.txt"
}
# Inclusive instructions of the first function matching $2 in profile $1.
ir() { awk -v pat="$2" '$0 ~ pat && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); print $1; exit}' "$out/$1.txt"; }
# Calls of the workload's chunk runner: the worker's chunk count.
chunks() { grep -m1 -E "=> .*Program>::run \(" "$out/$1.txt" | sed -E 's/.*\(([0-9,]+)x\).*/\1/; s/,//g'; }

profile plain --report "tsv:$out/plain.tsv"
profile sampled --timeline "$interval" --report "tsv:$out/sampled.tsv,timeline:$out/tl.tsv,hdr:$out/hdr"
samples=$(awk -F'\t' '$8=="wu_per_s"' "$out/tl.tsv" | wc -l)
wp=$(ir plain 'run::crew::worker'); ws=$(ir sampled 'run::crew::worker'); ss=$(ir sampled 'sampler::Sampler::run')
ho=$(ir sampled 'live::Live::hand_over'); ho=${ho:-0}
echo "chunks of units: $(chunks plain) without sampling, $(chunks sampled) with (the adaptive chunk size"
echo "follows wall time, which valgrind stretches unevenly; each chunk costs one Lua call)"
awk -v u="$units" -v wp="$wp" -v ws="$ws" -v ss="$ss" -v n="$samples" -v ho="$ho" 'BEGIN {
  printf "worker thread, %d units: %d instructions without sampling, %d with (%d samples): ratio %.4f\n", u, wp, ws, n, ws / wp
  printf "worker instructions per unit: %.1f without, %.1f with\n", wp / u, ws / u
  printf "hand-overs in the worker: %d instructions, %.0f per sample, %.4f%% of the worker'\''s\n", ho, ho / n, ho * 100 / ws
  printf "sampler thread: %d instructions, %.0f per sample, %.1f%% of the worker'\''s under valgrind\n", ss, ss / n, ss * 100 / ws
}'

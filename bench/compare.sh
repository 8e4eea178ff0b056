#!/usr/bin/env bash
# Closed-loop harness ceiling of two builds, measured in the same session: runs
# `kvmark --ops OPS workloads/null.lua` with OLD and NEW alternately, RUNS times each
# (alternating spreads this shared machine's drift over both), and prints each run
# and both medians.
#
# usage: bench/compare.sh OLD_BINARY NEW_BINARY [RUNS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/compare.sh OLD_BINARY NEW_BINARY [RUNS] [OPS]}
new=${2:?usage: bench/compare.sh OLD_BINARY NEW_BINARY [RUNS] [OPS]}
runs=${3:-11}; ops=${4:-20000000}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
tp() { "$1" --ops "$ops" workloads/null.lua | awk '/^throughput:/{print $2}'; }
a=(); b=()
for i in $(seq "$runs"); do
  x=$(tp "$old"); y=$(tp "$new")
  a+=("$x"); b+=("$y")
  echo "run $i: old $x units/s, new $y units/s"
done
echo "median: old $(printf '%s\n' "${a[@]}" | median) units/s, new $(printf '%s\n' "${b[@]}" | median) units/s"

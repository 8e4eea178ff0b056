#!/usr/bin/env bash
# kvmark against keybench side by side: the null unit (one get of a constant missing
# key on an empty skiplist per unit, workloads/null.lua; keybench runs the same script
# with its own `kv` verbs) on one thread, the two tools alternating in PAIRS back-to-back
# pairs. Prints each pair's units/s and kvmark/keybench ratio, then the median ratio:
# a ratio measured within a pair, which this shared machine's drift moves far less
# than separate runs.
#
# keybench is not installed by this project: build it (https://github.com/guycipher/keybench,
# `make`, skiplist backend) and give its binary as KEYBENCH.
#
# usage: KEYBENCH=/path/to/keybench bench/keybench.sh [PAIRS] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-7}; ops=${2:-10000000}
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
keybench=${KEYBENCH:?give keybench\'s binary as KEYBENCH (see the comment at the top)}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -x "$keybench" ] || { echo "KEYBENCH=$keybench is not an executable" >&2; exit 2; }
ratios=()
for i in $(seq "$pairs"); do
  ours=$("$kvmark" --ops "$ops" --probe none workloads/null.lua | awk '/^throughput:/{print $2}')
  # keybench prints "throughput: N /sec"; it runs from its own directory.
  theirs=$(cd "$(dirname "$keybench")" && "$keybench" --backend skiplist --threads 1 --ops "$ops" \
    --probe none "$OLDPWD/workloads/null.lua" | awk '/^throughput:/{print $2}')
  r=$(awk -v a="$ours" -v b="$theirs" 'BEGIN{printf "%.3f", a/b}')
  ratios+=("$r")
  echo "pair $i: kvmark $ours units/s, keybench $theirs units/s, ratio $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median kvmark/keybench over %d pairs: %.2f (min %.2f, max %.2f)\n", NR, m, v[1], v[NR]}'

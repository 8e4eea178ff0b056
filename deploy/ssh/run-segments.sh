#!/usr/bin/env bash
# kvmark scale-out over ssh: one segment per host of a host list, all starting at one
# time; the report directories are copied back and merged.
#   deploy/ssh/run-segments.sh hosts.txt results -- --backend redis \
#     --engine-opt redis.url=redis://10.0.0.5:6379 --threads 4 --secs 60 specs/ycsb-a.json
# Every host needs kvmark on its PATH and the workload at the same path; `localhost`
# lines run without ssh, so the recipe can be tried on one machine.
set -euo pipefail
hosts_file=${1:?give a file of host names, one per line}
out=${2:?give the local results directory}
shift 2
[ "${1:-}" = "--" ] && shift
mapfile -t hosts < <(grep -v '^\s*\(#\|$\)' "$hosts_file")
n=${#hosts[@]}
start=$(( $(date +%s) + ${START_DELAY:-20} ))
remote_dir=/tmp/kvmark-segments-$start
mkdir -p "$out"
pids=()
for i in "${!hosts[@]}"; do
  h=${hosts[$i]}
  cmd=(kvmark --segment "$i/$n" --start-at "$start" --report-dir "$remote_dir" "$@")
  if [ "$h" = localhost ]; then
    "${cmd[@]}" > "$out/segment-$i.log" 2>&1 &
  else
    ssh "$h" "$(printf '%q ' "${cmd[@]}")" > "$out/segment-$i.log" 2>&1 &
  fi
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
dirs=()
copied_local=no
for i in "${!hosts[@]}"; do
  h=${hosts[$i]}
  if [ "$h" = localhost ]; then
    # Local segments share one parent, each in its own fresh directory there.
    [ "$copied_local" = yes ] && continue
    copied_local=yes
    mkdir -p "$out/local"
    cp -r "$remote_dir"/. "$out/local/"
    dirs+=("$out"/local/*)
  else
    mkdir -p "$out/segment-$i"
    scp -qr "$h:$remote_dir/*" "$out/segment-$i/"
    dirs+=("$out/segment-$i"/*)
  fi
done
kvmark merge "${dirs[@]}" --out "$out/merged"
exit $status

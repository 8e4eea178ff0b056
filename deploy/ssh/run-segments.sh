#!/usr/bin/env bash
# kvmark scale-out over ssh: one segment per host of a host list, all starting at one
# time; each segment's report directory is copied back and the N are merged.
#   deploy/ssh/run-segments.sh hosts.txt results -- --backend redis \
#     --engine-opt redis.url=redis://10.0.0.5:6379 --threads 4 --secs 60 specs/ycsb-a.json
# Every host needs kvmark on its PATH and this directory (the workload, relative paths)
# at the same path; `localhost` lines run without ssh, so the recipe can be tried on
# one machine.
# Environment: START_DELAY seconds before the common start (20); SSH_OPTIONS extra
# options for ssh and scp, e.g. "-F cluster.conf" or "-o Port=2222"; REMOTE_DIR where
# the hosts write their reports (/tmp/kvmark-segments-START), one subdirectory per
# segment so hosts sharing a filesystem do not mix their segments.
set -euo pipefail
hosts_file=${1:?give a file of host names, one per line}
out=${2:?give the local results directory}
shift 2
[ "${1:-}" = "--" ] && shift
mapfile -t hosts < <(grep -v '^\s*\(#\|$\)' "$hosts_file")
n=${#hosts[@]}
start=$(( $(date +%s) + ${START_DELAY:-20} ))
remote_base=${REMOTE_DIR:-/tmp/kvmark-segments-$start}
read -r -a ssh_options <<< "${SSH_OPTIONS:-}"
mkdir -p "$out"
pids=()
for i in "${!hosts[@]}"; do
  h=${hosts[$i]}
  cmd=(kvmark --segment "$i/$n" --start-at "$start" --report-dir "$remote_base/segment-$i" "$@")
  if [ "$h" = localhost ]; then
    "${cmd[@]}" > "$out/segment-$i.log" 2>&1 &
  else
    ssh "${ssh_options[@]}" "$h" "cd $(printf '%q' "$PWD") && $(printf '%q ' "${cmd[@]}")" \
      > "$out/segment-$i.log" 2>&1 &
  fi
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "segment $i on ${hosts[$i]} failed: see $out/segment-$i.log" >&2; status=1; }
done
# A merge of fewer than N segments would be refused; say which failed instead.
[ "$status" -eq 0 ] || exit 1
dirs=()
for i in "${!hosts[@]}"; do
  h=${hosts[$i]}
  mkdir -p "$out/segment-$i"
  if [ "$h" = localhost ]; then
    cp -r "$remote_base/segment-$i"/. "$out/segment-$i/"
  else
    scp -qr "${ssh_options[@]}" "$h:$remote_base/segment-$i/*" "$out/segment-$i/"
  fi
  dirs+=("$out/segment-$i"/*)
done
kvmark merge "${dirs[@]}" --out "$out/merged"

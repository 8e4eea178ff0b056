#!/usr/bin/env bash
# Growing values (YCSB-IVS): a full epoch run of a spec on each engine, as markdown rows
# per epoch and mode (records, volume, value sizes, throughput, get latency), then the
# dump and restore of every `clean` epoch against the plain bulk load of the same
# bytes (the `average` build: the same keys, values made in memory, the same loader).
#
# usage: bench/ivs.sh DATA_DIR [ENGINES] [SPEC] [EXTRA FLAGS...]
#   DATA_DIR must be on the disk to benchmark (not tmpfs).
#   default: rocksdb,lmdb and specs/ivs-c.json at the paper's scale (20 epochs,
#   modes main, clean, average); e.g. add --scale 0.1 for a quick run.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/ivs.sh DATA_DIR [ENGINES] [SPEC] [EXTRA FLAGS...]}
engines=${2:-rocksdb,lmdb}
spec=${3:-specs/ivs-c.json}
shift $(( $# < 3 ? $# : 3 ))
kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
[ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
[ -d "$data" ] || { echo "$data: not a directory" >&2; exit 2; }

for e in ${engines//,/ }; do
  # Each engine runs on its own (for its own wall time): pass it only its own
  # --engine-opt settings, so the others' do not draw warnings.
  flags=()
  args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[i]}" = --engine-opt ] && [ $((i + 1)) -lt ${#args[@]} ]; then
      [ "${args[i + 1]%%.*}" = "$e" ] && flags+=(--engine-opt "${args[i + 1]}")
      i=$((i + 1))
    else
      flags+=("${args[i]}")
    fi
  done
  tsv=$(mktemp)
  start=$(date +%s)
  "$kvmark" --backend "$e" --data-dir "$data" --probe none --report "tsv:$tsv" "${flags[@]}" "$spec" >/dev/null
  echo "engine $e: $(( $(date +%s) - start )) s for the whole run"
  echo
  echo "| engine | epoch | mode | records | volume MB | value mean / max B | wu/s | get mean / p99 us |"
  echo "|---|---|---|---|---|---|---|---|"
  awk -F'\t' -v e="$e" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["phase"] == "all" { next }
    ($col["op"] == "get" || ($col["ivs_mode"] == "extend" && $col["op"] == "append")) {
      lat = ($col["op"] == "get") ? sprintf("%.1f / %.1f", $col["mean_ns"] / 1e3, $col["p99_ns"] / 1e3) : "-"
      printf "| %s | %s | %s | %s | %.1f | %.0f / %s | %.0f | %s |\n", e, $col["epoch"], $col["ivs_mode"], $col["records"],
        $col["volume_bytes"] / 1e6, $col["value_mean_bytes"], $col["value_max_bytes"], $col["wu_per_s"], lat
    }' "$tsv"
  echo
  echo "| engine | epoch | dump MB/s | restore MB/s | dump + restore MB/s | bulk load (average build) MB/s | ratio |"
  echo "|---|---|---|---|---|---|---|"
  awk -F'\t' -v e="$e" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["op"] != "get" { next }
    $col["ivs_mode"] == "clean" { vol[$col["epoch"]] = $col["volume_bytes"]; d[$col["epoch"]] = $col["dump_s"]; r[$col["epoch"]] = $col["seed_s"] }
    $col["ivs_mode"] == "average" { avol[$col["epoch"]] = $col["volume_bytes"]; b[$col["epoch"]] = $col["seed_s"] }
    END {
      for (ep = 1; ep in vol; ep++) {
        both = vol[ep] / (d[ep] + r[ep]) / 1e6
        bulk = (ep in b) ? avol[ep] / b[ep] / 1e6 : 0
        printf "| %s | %d | %.0f | %.0f | %.0f | %s | %s |\n", e, ep, vol[ep] / d[ep] / 1e6, vol[ep] / r[ep] / 1e6, both,
          bulk ? sprintf("%.0f", bulk) : "-", bulk ? sprintf("%.2f", both / bulk) : "-"
      }
    }' "$tsv"
  echo
  rm -f "$tsv"
done

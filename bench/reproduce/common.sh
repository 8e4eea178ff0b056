# Sourced by the reproductions in bench/reproduce/: `reproduction NAME MAX_SCALE
# [SCALE] [OUT]` checks SCALE (default 1, above 0 and at most MAX_SCALE), and sets
# `scale`, `out` (OUT, or a new temporary directory, created), `kvmark` (the binary
# to run: KVMARK, or the release build) and `data` (a fresh directory on this machine's
# disk, /var/tmp, removed when the script exits), from the repository's root.
reproduction() {
  local name=$1 max=$2
  scale=${3:-1}
  python3 -c "import sys; s = float(sys.argv[1]); sys.exit(0 if 0 < s <= float(sys.argv[2]) else 1)" \
    "$scale" "$max" 2>/dev/null \
    || { echo "bench/reproduce/$name.sh: SCALE must be a number above 0 and at most $max, not '$scale'" >&2; exit 2; }
  out=${4:-$(mktemp -d "${TMPDIR:-/tmp}/kvmark-$name.XXXXXX")}
  kvmark=${KVMARK:-${CARGO_TARGET_DIR:-target}/release/kvmark}
  [ -x "$kvmark" ] || { echo "build first: cargo build --release (or set KVMARK)" >&2; exit 2; }
  mkdir -p "$out"
  data=$(mktemp -d "/var/tmp/kvmark-$name-data.XXXXXX")
  trap 'rm -rf "$data"' EXIT
}

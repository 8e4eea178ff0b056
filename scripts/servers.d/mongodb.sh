# FerretDB for the mongodb engine: a server that speaks MongoDB's wire protocol, on its
# SQLite backend. MongoDB's own server has no package on the registries these machines
# reach, so the tests run against FerretDB (see docs/engines.md). Sourced by scripts/servers
# (see redis.sh for what it provides).
#
# The binary is built once from the Go module and cached outside the clone, keyed by
# version, so later starts take about a second. `go install MODULE@VERSION` alone builds
# a binary that panics at start: the module ships without build/version/version.txt,
# which FerretDB's release process generates, so the build copies the module's source
# and writes that file first.

ferretdb_version=v1.24.2

# Prints the path of the cached FerretDB binary, building it when missing.
ferretdb_binary() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/kvmark-tools/ferretdb-$ferretdb_version"
  local bin="$cache/ferretdb"
  if [ ! -x "$bin" ]; then
    command -v go >/dev/null || die "mongodb: building FerretDB needs Go (the go command is not on PATH)"
    echo "scripts/servers: building FerretDB $ferretdb_version into $cache (once; a few minutes)" >&2
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/kvmark-ferretdb-build.XXXXXX")
    # A module and build cache of the build's own, removed afterwards: only the binary
    # is kept. GOFLAGS=-modcacherw lets rm remove the module cache.
    (
      set -e
      export GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS=-modcacherw GOTOOLCHAIN=local
      cd "$work"
      src=$(go mod download -json "github.com/FerretDB/FerretDB@$ferretdb_version" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
      cp -r "$src" "$work/src"
      chmod -R u+w "$work/src"
      echo "$ferretdb_version" >"$work/src/build/version/version.txt"
      cd "$work/src"
      # Only the SQLite backend is used; leaving PostgreSQL out shortens the build.
      go build -trimpath -tags ferretdb_no_postgresql -o "$work/ferretdb" ./cmd/ferretdb
    ) >"$work/log" 2>&1 || {
      tail -20 "$work/log" >&2
      rm -rf "$work"
      die "mongodb: building FerretDB $ferretdb_version failed (log above)"
    }
    mkdir -p "$cache"
    mv "$work/ferretdb" "$bin.tmp" && mv "$bin.tmp" "$bin"
    rm -rf "$work"
  fi
  echo "$bin"
}

start_mongodb() {
  local dir="$state/mongodb" port
  # Built (once) here, so a restart never waits for it.
  ferretdb_binary >/dev/null
  port=$(free_port)
  mkdir -p "$dir/data"
  run_mongodb "$port"
  echo "mongodb://127.0.0.1:$port" >"$dir/url"
}

# Starts FerretDB on PORT over the SQLite databases in $state/mongodb/data (again, after
# `scripts/servers down mongodb`, with its collections).
run_mongodb() { # PORT
  local dir="$state/mongodb" port=$1
  # Loopback only, no debug HTTP listener (its fixed default port would clash between
  # instances), no telemetry (the machine reaches nothing beyond loopback).
  "$(ferretdb_binary)" --handler=sqlite --sqlite-url="file:$dir/data/" --state-dir="$dir" \
    --listen-addr="127.0.0.1:$port" --debug-addr=- --telemetry=disable \
    --log-level=warn >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  # FerretDB's own `ping` needs a setup database; a TCP connect is enough here, as it
  # listens only once its backend is ready.
  wait_until "FerretDB on port $port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}

restart_mongodb() {
  local url
  url=$(cat "$state/mongodb/url")
  run_mongodb "${url##*:}"
}

# FerretDB's SIGTERM stops accepting connections but keeps serving the open ones until
# their clients leave, so a "stopped" server would go on answering a running benchmark.
# Its data is a scratch SQLite directory, removed at stop: end it at once, as a crash
# would for its clients.
stop_signal_mongodb=KILL

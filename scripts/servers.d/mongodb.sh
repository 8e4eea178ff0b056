# FerretDB for the mongodb engine: a server that speaks MongoDB's wire protocol, on its
# PostgreSQL backend. MongoDB's own server has no package on the registries these
# machines reach, so the tests run against FerretDB (see docs/engines.md). Sourced by
# scripts/servers (see redis.sh for what it provides); uses postgres.sh's pg_* helpers.
#
# The backend is a PostgreSQL cluster of FerretDB's own in $state/mongodb/backend (made
# with postgres.sh's helpers), not the postgres engine's instance: the fault tests stop
# and restart each server alone, and a postgres fault must not become a mongodb one.
# `scripts/servers down mongodb` stops FerretDB only (the MongoDB-protocol server
# crashes; its storage survives); `stop` ends both. FerretDB's SQLite backend, used
# before, serialised every write on SQLite's one lock (puts failed on SQLITE_BUSY at 64
# connections) and did not recover from a restart on a loaded machine.
#
# The binary is built once from the Go module and cached outside the clone, keyed by
# version, so later starts take about a second. `go install MODULE@VERSION` alone builds
# a binary that panics at start: the module ships without build/version/version.txt,
# which FerretDB's release process generates, so the build copies the module's source
# and writes that file first.

ferretdb_version=v1.24.2
# The cache key names the backend the binary was built with.
ferretdb_build=$ferretdb_version-postgresql

# Prints the path of the cached FerretDB binary, building it when missing.
ferretdb_binary() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/kvmark-tools/ferretdb-$ferretdb_build"
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
      go build -trimpath -o "$work/ferretdb" ./cmd/ferretdb
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
  local dir="$state/mongodb" port backend_port tls_port
  # Built (once) here, so a restart never waits for it.
  ferretdb_binary >/dev/null
  # The third port for TLS, when asked for.
  read -r port backend_port tls_port <<<"$(free_ports 3)"
  [ "$want_tls" = 1 ] || tls_port=""
  mkdir -p "$dir"
  pg_init "$dir/backend"
  pg_run "$dir/backend" "$backend_port" "$dir/backend/pid"
  pg_createdb "$dir/backend" "$backend_port" ferretdb
  index_ids "$backend_port"
  echo "postgres://kvmark@127.0.0.1:$backend_port/ferretdb" >"$dir/backend/url"
  run_mongodb "$port" "$tls_port"
  echo "mongodb://127.0.0.1:$port" >"$dir/url"
  [ -z "$tls_port" ] || echo "mongodb://127.0.0.1:$tls_port/?tls=true" >"$dir/tls_url"
}

# FerretDB 1.24 stores a collection as a table of one jsonb column with a unique b-tree
# index on _jsonb->'_id', but filters an `_id` equality with the containment operator
# (`_jsonb->'_id' @> '"..."'`), which that index cannot serve: every get, put and del
# was a sequential scan (the 100k-record YCSB-A load slowed to a few puts a second past
# 80k records). An event trigger in the backend gives each table FerretDB creates a GIN
# index on the same expression, which serves `@>` (0.04 ms for one of 100k documents in
# EXPLAIN ANALYZE, where the scan read the whole 161 MB table). FerretDB itself is
# unchanged; a real MongoDB needs none of this.
index_ids() { # BACKEND_PORT
  "$(postgres_bin)/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U kvmark ferretdb >/dev/null <<'SQL' ||
CREATE FUNCTION kvmark_index_ids() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT objid::regclass AS t FROM pg_event_trigger_ddl_commands()
           WHERE object_type = 'table' LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = r.t AND attname = '_jsonb') THEN
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> ''_id'') jsonb_path_ops)', r.t);
    END IF;
  END LOOP;
END $$;
CREATE EVENT TRIGGER kvmark_index_ids ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION kvmark_index_ids();
-- FerretDB 1.24 does not cancel a query whose client has gone: a range that timed out
-- in kvmark left its backend blocked on a full socket (ClientWrite) for good, holding
-- the table's lock, so the run's closing drop and every later createCollection hung.
-- No statement of FerretDB's takes a minute here except such an orphan.
ALTER DATABASE ferretdb SET statement_timeout = '60s';
SQL
    die "mongodb: the backend's _id index trigger could not be made (see $state/mongodb/backend/log)"
}

# Starts FerretDB on PORT over its PostgreSQL backend, and on TLS_PORT over TLS when
# given (again, after `scripts/servers down mongodb`, with its collections).
run_mongodb() { # PORT [TLS_PORT]
  local dir="$state/mongodb" port=$1 tls_port=${2:-} tls=()
  # A listener of its own for TLS, beside the plain one. No --listen-tls-ca-file: with
  # it FerretDB 1.24 requires a client certificate of every TLS client. The backend
  # stays plain (FerretDB reaches it on loopback).
  [ -z "$tls_port" ] || tls=(--listen-tls="127.0.0.1:$tls_port"
    --listen-tls-cert-file="$state/tls/server.pem" --listen-tls-key-file="$state/tls/server.key")
  # Loopback only, no debug HTTP listener (its fixed default port would clash between
  # instances), no telemetry (the machine reaches nothing beyond loopback).
  "$(ferretdb_binary)" --handler=postgresql --postgresql-url="$(cat "$dir/backend/url")" \
    --state-dir="$dir" --listen-addr="127.0.0.1:$port" "${tls[@]}" --debug-addr=- --telemetry=disable \
    --log-level=warn >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  # FerretDB's own `ping` needs a setup database; a TCP connect is enough here, as it
  # listens only once its backend is ready.
  wait_until "FerretDB on port $port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
  # Over TLS: a handshake that checks the certificate (Debian has no MongoDB client).
  [ -z "$tls_port" ] || wait_until "FerretDB over TLS on port $tls_port" tls_handshake "$tls_port"
}

restart_mongodb() {
  local url tls_port=""
  url=$(cat "$state/mongodb/url")
  if has_tls mongodb; then
    tls_port=$(cat "$state/mongodb/tls_url")
    tls_port=${tls_port%/*}
    tls_port=${tls_port##*:}
  fi
  run_mongodb "${url##*:}" "$tls_port"
}

# FerretDB's SIGTERM stops accepting connections but keeps serving the open ones until
# their clients leave, so a "stopped" server would go on answering a running benchmark.
# Its state is in the backend, which outlives it: end it at once, as a crash would for
# its clients.
stop_signal_mongodb=KILL

# At `scripts/servers stop mongodb`, after FerretDB: its backend.
stop_backend_mongodb() {
  pg_stop "$state/mongodb/backend"
}

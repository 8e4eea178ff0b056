# PostgreSQL for the postgres engine: a fresh cluster made by initdb.
# Sourced by scripts/servers (see redis.sh for what it provides).

start_postgres() {
  need_packages postgresql
  local bin dir="$state/postgres" port
  bin=$(postgres_bin)
  port=$(free_port)
  mkdir -p "$dir"
  # PostgreSQL refuses to run as root: as root, the instance runs as Debian's
  # 'postgres' user (created by the package); otherwise as the caller.
  local as=()
  : >"$dir/log"
  if [ "$(id -u)" -eq 0 ]; then
    # It must reach its directory through the state directory, which a caller may
    # have made private (mktemp -d).
    chmod a+x "$state"
    chown postgres: "$dir" "$dir/log"
    as=(runuser -u postgres --)
  fi
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U kvmark --auth=trust -E UTF8 --no-sync >>"$dir/log" 2>&1 ||
    die "postgres: initdb failed (see $dir/log)"
  run_postgres "$port"
  "${as[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U kvmark kvmark || die "postgres: createdb failed"
  echo "postgres://kvmark@127.0.0.1:$port/kvmark" >"$dir/url"
}

# The newest installed PostgreSQL's programs.
postgres_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$bin/initdb" ] || die "postgres: no initdb under /usr/lib/postgresql/*/bin"
  echo "$bin"
}

# Starts the cluster in $state/postgres/data on PORT (again, after `scripts/servers
# down postgres`, with its data).
run_postgres() { # PORT
  local bin dir="$state/postgres" port=$1 as=()
  bin=$(postgres_bin)
  [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  # Loopback only, the socket in the instance's own directory, fsync as configured
  # by default (the engine's knobs decide what a benchmark trades away).
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=300" \
    start >/dev/null || die "postgres: pg_ctl start failed (see $dir/log)"
  head -1 "$dir/data/postmaster.pid" >"$dir/pid"
  wait_until "postgres on port $port" "$bin/pg_isready" -h 127.0.0.1 -p "$port"
}

restart_postgres() {
  local url
  url=$(cat "$state/postgres/url")
  url=${url%/*}
  run_postgres "${url##*:}"
}

# PostgreSQL's SIGTERM is a smart shutdown, which waits for every client to leave;
# SIGINT is its fast shutdown, which ends their sessions (as a crash would for them).
stop_signal_postgres=INT

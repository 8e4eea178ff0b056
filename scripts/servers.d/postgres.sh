# PostgreSQL for the postgres engine: a fresh cluster made by initdb.
# Sourced by scripts/servers (see redis.sh for what it provides). The pg_* helpers
# take the instance's directory, so mongodb.sh runs a cluster of its own with them.

start_postgres() {
  local dir="$state/postgres" port
  port=$(free_port)
  pg_init "$dir"
  run_postgres "$port"
  pg_createdb "$dir" "$port" kvmark
  echo "postgres://kvmark@127.0.0.1:$port/kvmark" >"$dir/url"
}

# The newest installed PostgreSQL's programs.
postgres_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$bin/initdb" ] || die "postgres: no initdb under /usr/lib/postgresql/*/bin"
  echo "$bin"
}

# PostgreSQL refuses to run as root: as root, an instance runs as Debian's 'postgres'
# user (created by the package); otherwise as the caller. Sets the array pg_as.
pg_user() {
  pg_as=()
  [ "$(id -u)" -eq 0 ] && pg_as=(runuser -u postgres --)
  return 0
}

# Makes a cluster in DIR/data owned by its user, with superuser kvmark and trust auth.
pg_init() { # DIR
  need_packages postgresql
  local dir=$1 bin
  bin=$(postgres_bin)
  pg_user
  mkdir -p "$dir"
  : >"$dir/log"
  if [ "$(id -u)" -eq 0 ]; then
    # It must reach its directory through the state directory, which a caller may
    # have made private (mktemp -d).
    chmod a+x "$state"
    chown postgres: "$dir" "$dir/log"
  fi
  "${pg_as[@]}" "$bin/initdb" -D "$dir/data" -U kvmark --auth=trust -E UTF8 --no-sync >>"$dir/log" 2>&1 ||
    die "postgres: initdb failed (see $dir/log)"
}

# Starts the cluster in DIR/data on PORT and writes its postmaster's pid to PIDFILE.
pg_run() { # DIR PORT PIDFILE
  local bin dir=$1 port=$2 pidfile=$3
  bin=$(postgres_bin)
  pg_user
  # Loopback only, the socket in the instance's own directory, fsync as configured
  # by default (the engine's knobs decide what a benchmark trades away).
  "${pg_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=300" \
    start >/dev/null || die "postgres: pg_ctl start failed (see $dir/log)"
  head -1 "$dir/data/postmaster.pid" >"$pidfile"
  wait_until "postgres on port $port" "$bin/pg_isready" -h 127.0.0.1 -p "$port"
}

pg_createdb() { # DIR PORT NAME
  local bin
  bin=$(postgres_bin)
  pg_user
  "${pg_as[@]}" "$bin/createdb" -h 127.0.0.1 -p "$2" -U kvmark "$3" || die "postgres: createdb $3 failed"
}

# Stops the cluster in DIR/data at once (a fast shutdown: sessions are ended).
pg_stop() { # DIR
  local bin dir=$1
  [ -f "$dir/data/postmaster.pid" ] || return 0
  bin=$(postgres_bin)
  pg_user
  "${pg_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
}

# Starts the cluster in $state/postgres/data on PORT (again, after `scripts/servers
# down postgres`, with its data).
run_postgres() { # PORT
  pg_run "$state/postgres" "$1" "$state/postgres/pid"
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

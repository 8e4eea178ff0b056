# PostgreSQL for the postgres engine: a fresh cluster made by initdb.
# Sourced by scripts/servers (see redis.sh for what it provides). The pg_* helpers
# take the instance's directory, so mongodb.sh runs a cluster of its own with them.
#
# With --tls the same port takes TLS too (a client asks for it at connect; pg_hba's
# `host` lines, trust from 127.0.0.1, match plain and TLS connections alike).

start_postgres() {
  local dir="$state/postgres" port tls=""
  port=$(free_port)
  pg_init "$dir"
  [ "$want_tls" = 1 ] && tls=tls && pg_tls "$dir"
  run_postgres "$port" $tls
  pg_createdb "$dir" "$port" kvmark
  echo "postgres://kvmark@127.0.0.1:$port/kvmark" >"$dir/url"
  [ -z "$tls" ] || echo "postgres://kvmark@127.0.0.1:$port/kvmark?sslmode=verify-full" >"$dir/tls_url"
}

# Turns TLS on in the cluster in DIR/data, in its postgresql.conf, so a restart keeps
# it. The server's key must be its own user's and private (or it refuses to start), so
# the instance gets copies of the certificate files in DIR/tls, owned by that user.
# With the CA, a client certificate is checked when a client gives one.
pg_tls() { # DIR
  local dir=$1
  mkdir -p "$dir/tls"
  cp "$state/tls/server.pem" "$state/tls/server.key" "$state/tls/ca.pem" "$dir/tls/"
  chmod 600 "$dir/tls/server.key"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir/tls"
  cat >>"$dir/data/postgresql.conf" <<CONF

# scripts/servers start --tls
ssl = on
ssl_cert_file = '$dir/tls/server.pem'
ssl_key_file = '$dir/tls/server.key'
ssl_ca_file = '$dir/tls/ca.pem'
CONF
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
# down postgres`, with its data), and checks its TLS when told `tls` (its
# postgresql.conf has it on since start --tls).
run_postgres() { # PORT [tls]
  pg_run "$state/postgres" "$1" "$state/postgres/pid"
  # verify-full: over TLS, the certificate checked against the CA and the address.
  [ "${2:-}" != tls ] || wait_until "postgres over TLS on port $1" "$(postgres_bin)/psql" -X -A -t \
    "postgres://kvmark@127.0.0.1:$1/postgres?sslmode=verify-full&sslrootcert=$state/tls/ca.pem" -c "SELECT 1"
}

restart_postgres() {
  local url tls=""
  url=$(cat "$state/postgres/url")
  url=${url%/*}
  has_tls postgres && tls=tls
  run_postgres "${url##*:}" $tls
}

# PostgreSQL's SIGTERM is a smart shutdown, which waits for every client to leave;
# SIGINT is its fast shutdown, which ends their sessions (as a crash would for them).
stop_signal_postgres=INT

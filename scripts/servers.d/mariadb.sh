# MariaDB for the mariadb (InnoDB) and myrocks (MyRocks) engines: one private server
# with the RocksDB storage engine loaded, so both engines use the same instance.
# Sourced by scripts/servers (see redis.sh for what it provides).
#
# It never touches a system instance: --no-defaults (no /etc/mysql/*.cnf, no
# ~/.my.cnf), its own data directory, socket and pid file in $state/mariadb, TCP on
# 127.0.0.1 only. With --tls the same port takes TLS too (a client asks for it at
# connect), for both engines. KVMARK_MARIADB_ARGS adds server options at start (and
# keeps them for a restart), e.g. a study's cache sizes:
#   KVMARK_MARIADB_ARGS="--rocksdb-block-cache-size=64M --innodb-buffer-pool-size=1G"

start_mariadb() {
  need_packages mariadb-server mariadb-plugin-rocksdb
  local dir="$state/mariadb" port user tls=""
  port=$(free_port)
  mkdir -p "$dir"
  # mariadbd refuses to run as root unless told to; the files stay the caller's.
  user=$(id -un)
  : >"$dir/log"
  mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
    >>"$dir/log" 2>&1 || die "mariadb: mariadb-install-db failed (see $dir/log)"
  # The benchmark's user and database, made at start-up (kvmark creates its tables
  # in this database; a user's own server needs the same two lines).
  cat >"$dir/init.sql" <<'SQL'
CREATE DATABASE IF NOT EXISTS kvmark;
CREATE USER IF NOT EXISTS 'kvmark'@'127.0.0.1';
GRANT ALL ON kvmark.* TO 'kvmark'@'127.0.0.1';
SQL
  [ "$want_tls" = 1 ] && tls=tls
  echo "${KVMARK_MARIADB_ARGS:-}" >"$dir/args"
  run_mariadb "$port" $tls
  echo "mariadb://kvmark@127.0.0.1:$port/kvmark" >"$dir/url"
  [ -z "$tls" ] || echo "mariadb://kvmark@127.0.0.1:$port/kvmark?ssl-mode=VERIFY_IDENTITY" >"$dir/tls_url"
}

# Starts the server on $state/mariadb/data at PORT, with TLS when told `tls` (again,
# after `scripts/servers down mariadb`, with its databases and tables).
run_mariadb() { # PORT [tls]
  local dir="$state/mariadb" port=$1 user ssl=() extra=()
  user=$(id -un)
  [ ! -s "$dir/args" ] || read -r -a extra <"$dir/args"
  # It runs as the caller, who owns the key. With the CA, a client certificate is
  # checked when a client gives one, not required.
  [ "${2:-}" = tls ] && ssl=(--ssl-cert="$state/tls/server.pem" --ssl-key="$state/tls/server.key"
    --ssl-ca="$state/tls/ca.pem")
  # Durability as the server ships it (a commit flushes its log); 1 GiB packets so
  # values up to the engines' limit fit; MyRocks' 3072-byte keys are not needed (the
  # myrocks engine keeps to the 767 bytes any MyRocks server takes).
  /usr/sbin/mariadbd --no-defaults --user="$user" --datadir="$dir/data" \
    --socket="$dir/sock" --pid-file="$dir/pid" --log-error="$dir/log" \
    --bind-address=127.0.0.1 --port="$port" --skip-name-resolve \
    --plugin-load-add=ha_rocksdb.so --init-file="$dir/init.sql" "${ssl[@]}" \
    --max-connections=300 --max-allowed-packet=1G "${extra[@]}" >>"$dir/log" 2>&1 &
  wait_until "mariadb on port $port" mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$port" \
    -u kvmark kvmark -e "SELECT 1 FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB' AND SUPPORT = 'YES'" --batch --skip-column-names
  # The query above succeeds as soon as the server answers; MyRocks must be there too.
  mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$port" -u kvmark kvmark --batch --skip-column-names \
    -e "SELECT ENGINE FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB' AND SUPPORT = 'YES'" | grep -q ROCKSDB ||
    die "mariadb: the RocksDB storage engine did not load (see $dir/log)"
  # Over TLS, the server's certificate checked against the CA and the address.
  [ ${#ssl[@]} -eq 0 ] || mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$port" -u kvmark kvmark \
    --ssl --ssl-verify-server-cert --ssl-ca="$state/tls/ca.pem" --batch --skip-column-names \
    -e "SHOW STATUS LIKE 'Ssl_cipher'" | grep -q . ||
    die "mariadb: no TLS connection to port $port (see $dir/log)"
}

restart_mariadb() {
  local url tls=""
  url=$(cat "$state/mariadb/url")
  url=${url%/*}
  has_tls mariadb && tls=tls
  run_mariadb "${url##*:}" $tls
}

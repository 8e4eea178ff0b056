# Redis for the redis engine: one instance, no persistence.
# Sourced by scripts/servers, which provides need_packages, free_port(s), wait_until,
# die, has_tls, tls_handshake, $state and $want_tls (1 for start --tls, whose
# certificates are then in $state/tls); start_NAME leaves pid and url files in
# $state/NAME, and a tls_url file when it serves TLS too (restart_NAME looks for it).

start_redis() {
  need_packages redis-server redis-tools
  local dir="$state/redis" port tls_port
  # The second port for TLS, when asked for.
  read -r port tls_port <<<"$(free_ports 2)"
  [ "$want_tls" = 1 ] || tls_port=""
  mkdir -p "$dir"
  run_redis "$port" "$tls_port"
  echo "redis://127.0.0.1:$port" >"$dir/url"
  [ -z "$tls_port" ] || echo "rediss://127.0.0.1:$tls_port" >"$dir/tls_url"
}

# After `scripts/servers down redis`: the same port(s), starting empty (no persistence).
restart_redis() {
  local url tls_port=""
  url=$(cat "$state/redis/url")
  has_tls redis && tls_port=$(sed 's/.*://' "$state/redis/tls_url")
  run_redis "${url##*:}" "$tls_port"
}

run_redis() { # PORT [TLS_PORT]
  local dir="$state/redis" port=$1 tls_port=${2:-} tls=()
  # TLS beside the plain port, on the same instance; a client certificate is checked
  # when one is given, not required.
  [ -z "$tls_port" ] || tls=(--tls-port "$tls_port" --tls-cert-file "$state/tls/server.pem"
    --tls-key-file "$state/tls/server.key" --tls-ca-cert-file "$state/tls/ca.pem" --tls-auth-clients optional)
  # No persistence: a benchmark instance starts empty and is thrown away.
  redis-server --bind 127.0.0.1 --port "$port" "${tls[@]}" --dir "$dir" --daemonize yes \
    --pidfile "$dir/pid" --logfile "$dir/log" --save "" --appendonly no \
    --protected-mode yes >/dev/null
  wait_until "redis on port $port" redis-cli -h 127.0.0.1 -p "$port" ping
  [ -z "$tls_port" ] || wait_until "redis over TLS on port $tls_port" \
    redis-cli --tls --cacert "$state/tls/ca.pem" -h 127.0.0.1 -p "$tls_port" ping
}

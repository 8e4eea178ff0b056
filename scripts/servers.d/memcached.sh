# memcached for the memcached engine: one instance with 1 GiB for items, so the
# tests' data is never evicted. Sourced by scripts/servers (see redis.sh for what it
# provides).
#
# With --tls the same instance also takes TLS clients on a port of its own
# (memcached's -Z makes every listener TLS but those marked notls:, the plain one).

start_memcached() {
  need_packages memcached
  local dir="$state/memcached" port tls_port
  read -r port tls_port <<<"$(free_ports 2)"
  [ "$want_tls" = 1 ] || tls_port=""
  mkdir -p "$dir"
  echo "memcached://127.0.0.1:$port" >"$dir/url"
  [ -z "$tls_port" ] || echo "memcacheds://127.0.0.1:$tls_port" >"$dir/tls_url"
  run_memcached
}

# After `scripts/servers down memcached`: the same port(s), starting empty (memcached
# keeps nothing on disk).
restart_memcached() { run_memcached; }

run_memcached() {
  local dir="$state/memcached" port tls_port="" listen tls=()
  port=$(sed 's/.*://' "$dir/url")
  has_tls memcached && tls_port=$(sed 's/.*://' "$dir/tls_url")
  listen="127.0.0.1:$port"
  if [ -n "$tls_port" ]; then
    listen="notls:127.0.0.1:$port,127.0.0.1:$tls_port"
    # No ssl_verify_mode: with it (client certificates checked) memcached 1.6.18 answers
    # a resumed TLS session with an internal-error alert (no session id context is set),
    # which every reconnection of a client that keeps its sessions (rustls) would hit.
    tls=(-Z -o "ssl_chain_cert=$state/tls/server.pem,ssl_key=$state/tls/server.key")
  fi
  # In the foreground of a background job, so its pid and output are ours; -u: it will
  # not run as root without one.
  memcached -u "$(id -un)" -l "$listen" -m 1024 -c 4096 "${tls[@]}" </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  wait_until "memcached on port $port" python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"mn\r\n")
sys.exit(0 if s.recv(16) == b"MN\r\n" else 1)' "$port"
  [ -z "$tls_port" ] || wait_until "memcached over TLS on port $tls_port" tls_handshake "$tls_port"
}

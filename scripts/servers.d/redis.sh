# Redis for the redis engine: one instance, no persistence.
# Sourced by scripts/servers, which provides need_packages, free_port, wait_until, die
# and $state; start_NAME leaves pid and url files in $state/NAME.

start_redis() {
  need_packages redis-server redis-tools
  local dir="$state/redis" port
  port=$(free_port)
  mkdir -p "$dir"
  run_redis "$port"
  echo "redis://127.0.0.1:$port" >"$dir/url"
}

# After `scripts/servers down redis`: the same port, starting empty (no persistence).
restart_redis() {
  local url
  url=$(cat "$state/redis/url")
  run_redis "${url##*:}"
}

run_redis() { # PORT
  local dir="$state/redis" port=$1
  # No persistence: a benchmark instance starts empty and is thrown away.
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --daemonize yes \
    --pidfile "$dir/pid" --logfile "$dir/log" --save "" --appendonly no \
    --protected-mode yes >/dev/null
  wait_until "redis on port $port" redis-cli -h 127.0.0.1 -p "$port" ping
}

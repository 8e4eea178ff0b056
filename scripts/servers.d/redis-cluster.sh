# Redis Cluster for the redis-cluster engine: 3 primaries on loopback (no replicas, no
# persistence), joined by redis-cli --cluster create. Sourced by scripts/servers (see
# redis.sh for what it provides).

start_redis-cluster() {
  need_packages redis-server redis-tools
  local dir="$state/redis-cluster" ports nodes=() urls="" i port bus
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports 6)"
  : >"$dir/pid"
  for i in 0 1 2; do
    port=${ports[$((i * 2))]}
    # The cluster bus port is chosen too (by default it is port + 10000, which may
    # be taken or past 65535).
    bus=${ports[$((i * 2 + 1))]}
    mkdir -p "$dir/$port"
    redis-server --bind 127.0.0.1 --port "$port" --cluster-port "$bus" --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
      --daemonize yes --pidfile "$dir/$port/pid" --logfile "$dir/$port/log" \
      --save "" --appendonly no --protected-mode yes >/dev/null
    nodes+=("127.0.0.1:$port")
    urls+="${urls:+,}redis://127.0.0.1:$port"
  done
  for i in 0 1 2; do
    port=${ports[$((i * 2))]}
    wait_until "redis on port $port" redis-cli -h 127.0.0.1 -p "$port" ping
    cat "$dir/$port/pid" >>"$dir/pid"
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
    die "redis-cluster: redis-cli --cluster create failed (see $dir/create.log)"
  for i in 0 1 2; do
    port=${ports[$((i * 2))]}
    wait_until "redis cluster state ok on port $port" sh -c \
      "redis-cli -h 127.0.0.1 -p $port cluster info | grep -q cluster_state:ok"
  done
  echo "$urls" >"$dir/url"
}

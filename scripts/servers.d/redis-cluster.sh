# Redis Cluster for the redis-cluster engine: 3 primaries on loopback (no replicas, no
# persistence), joined by redis-cli --cluster create. Sourced by scripts/servers (see
# redis.sh for what it provides).

start_redis-cluster() {
  need_packages redis-server redis-tools
  local dir="$state/redis-cluster" ports nodes=() urls="" i port
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports 6)"
  # Each node's port and its cluster bus port (by default port + 10000, which may be
  # taken or past 65535), kept for restart_redis-cluster.
  : >"$dir/nodes"
  for i in 0 1 2; do
    port=${ports[$((i * 2))]}
    echo "$port ${ports[$((i * 2 + 1))]}" >>"$dir/nodes"
    nodes+=("127.0.0.1:$port")
    urls+="${urls:+,}redis://127.0.0.1:$port"
  done
  run_redis_cluster
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
    die "redis-cluster: redis-cli --cluster create failed (see $dir/create.log)"
  wait_redis_cluster
  echo "$urls" >"$dir/url"
}

# Starts the nodes on their ports; each keeps its cluster membership and slots in its
# nodes.conf, so after `scripts/servers down redis-cluster` they form the same cluster
# again (empty: no persistence).
run_redis_cluster() {
  local dir="$state/redis-cluster" port bus
  while read -r port bus; do
    mkdir -p "$dir/$port"
    redis-server --bind 127.0.0.1 --port "$port" --cluster-port "$bus" --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
      --daemonize yes --pidfile "$dir/$port/pid" --logfile "$dir/$port/log" \
      --save "" --appendonly no --protected-mode yes >/dev/null
  done <"$dir/nodes"
  : >"$dir/pid"
  while read -r port bus; do
    wait_until "redis on port $port" redis-cli -h 127.0.0.1 -p "$port" ping
    cat "$dir/$port/pid" >>"$dir/pid"
  done <"$dir/nodes"
}

# Waits until every node sees the cluster whole.
wait_redis_cluster() {
  local dir="$state/redis-cluster" port bus
  while read -r port bus; do
    wait_until "redis cluster state ok on port $port" sh -c \
      "redis-cli -h 127.0.0.1 -p $port cluster info | grep -q cluster_state:ok"
  done <"$dir/nodes"
}

restart_redis-cluster() {
  run_redis_cluster
  wait_redis_cluster
}

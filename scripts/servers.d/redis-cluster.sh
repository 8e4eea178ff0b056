# Redis Cluster for the redis-cluster engine: 3 primaries on loopback (no replicas, no
# persistence), joined by redis-cli --cluster create. Sourced by scripts/servers (see
# redis.sh for what it provides).
#
# With --tls each node serves TLS on a port of its own beside its plain one, and the
# cluster bus runs over TLS (tls-cluster): then a node knows the other nodes' TLS and
# plain ports, and CLUSTER SLOTS and MOVED give a client the ports of its own kind
# (TLS ports over TLS, plain ones over plain), so both kinds of client find the slots.

start_redis-cluster() {
  need_packages redis-server redis-tools
  local dir="$state/redis-cluster" ports nodes=() urls="" tls_urls="" i port tls_port
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports 9)"
  # Each node's port, its cluster bus port (by default port + 10000, which may be taken
  # or past 65535) and, with --tls, its TLS port, kept for restart_redis-cluster.
  : >"$dir/nodes"
  for i in 0 1 2; do
    port=${ports[$((i * 3))]}
    tls_port=""
    [ "$want_tls" = 1 ] && tls_port=${ports[$((i * 3 + 2))]}
    echo "$port ${ports[$((i * 3 + 1))]}${tls_port:+ $tls_port}" >>"$dir/nodes"
    nodes+=("127.0.0.1:$port")
    urls+="${urls:+,}redis://127.0.0.1:$port"
    tls_urls+="${tls_urls:+,}rediss://127.0.0.1:$tls_port"
  done
  run_redis_cluster
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
    die "redis-cluster: redis-cli --cluster create failed (see $dir/create.log)"
  wait_redis_cluster
  echo "$urls" >"$dir/url"
  [ "$want_tls" = 1 ] && echo "$tls_urls" >"$dir/tls_url"
  return 0
}

# Starts the nodes on their ports; each keeps its cluster membership and slots in its
# nodes.conf, so after `scripts/servers down redis-cluster` they form the same cluster
# again (empty: no persistence).
run_redis_cluster() {
  local dir="$state/redis-cluster" port bus tls_port tls
  while read -r port bus tls_port; do
    mkdir -p "$dir/$port"
    tls=()
    # A client certificate is checked when a client gives one; the bus always asks
    # for one, and a node shows the client certificate (the server's is for servers).
    [ -z "$tls_port" ] || tls=(--tls-port "$tls_port" --tls-cluster yes
      --tls-cert-file "$state/tls/server.pem" --tls-key-file "$state/tls/server.key"
      --tls-client-cert-file "$state/tls/client.pem" --tls-client-key-file "$state/tls/client.key"
      --tls-ca-cert-file "$state/tls/ca.pem" --tls-auth-clients optional)
    redis-server --bind 127.0.0.1 --port "$port" "${tls[@]}" --cluster-port "$bus" --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
      --daemonize yes --pidfile "$dir/$port/pid" --logfile "$dir/$port/log" \
      --save "" --appendonly no --protected-mode yes >/dev/null
  done <"$dir/nodes"
  : >"$dir/pid"
  while read -r port bus tls_port; do
    wait_until "redis on port $port" redis-cli -h 127.0.0.1 -p "$port" ping
    [ -z "$tls_port" ] || wait_until "redis over TLS on port $tls_port" \
      redis-cli --tls --cacert "$state/tls/ca.pem" -h 127.0.0.1 -p "$tls_port" ping
    cat "$dir/$port/pid" >>"$dir/pid"
  done <"$dir/nodes"
}

# Waits until every node sees the cluster whole.
wait_redis_cluster() {
  local dir="$state/redis-cluster" port bus tls_port
  while read -r port bus tls_port; do
    wait_until "redis cluster state ok on port $port" sh -c \
      "redis-cli -h 127.0.0.1 -p $port cluster info | grep -q cluster_state:ok"
  done <"$dir/nodes"
}

restart_redis-cluster() {
  run_redis_cluster
  wait_redis_cluster
}

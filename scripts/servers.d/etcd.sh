# etcd for the etcd engine: a 3-member cluster on loopback, each member with its own
# data directory, so a test can stop one member and watch the run go on against the
# remaining quorum. Sourced by scripts/servers (see redis.sh for what it provides).

start_etcd() {
  need_packages etcd-server etcd-client
  local dir="$state/etcd" ports cluster="" endpoints="" i client peer token="kvmark-$$-$RANDOM"
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports 6)"
  for i in 0 1 2; do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${ports[$((i * 2 + 1))]}"
    endpoints+="${endpoints:+,}http://127.0.0.1:${ports[$((i * 2))]}"
  done
  : >"$dir/pid"
  for i in 0 1 2; do
    client=${ports[$((i * 2))]}
    peer=${ports[$((i * 2 + 1))]}
    # Loopback only; a token of this instance's own, so members of another private
    # cluster never join this one; batches of up to 1024 keys in one transaction (the
    # default is 128). Its output goes to a log, so the caller's pipes close.
    etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "$cluster" --initial-cluster-token "$token" --initial-cluster-state new --max-txn-ops 1024 \
      --logger zap --log-outputs "$dir/m$i.log" </dev/null >>"$dir/m$i.log" 2>&1 &
    echo $! >>"$dir/pid"
  done
  wait_until "etcd (3 members at $endpoints)" etcdctl --endpoints="$endpoints" --dial-timeout=1s --command-timeout=1s endpoint health
  echo "$endpoints" >"$dir/url"
}

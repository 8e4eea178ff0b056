# etcd for the etcd engine: a 3-member cluster on loopback, each member with its own
# data directory, so a test can stop one member and watch the run go on against the
# remaining quorum. Sourced by scripts/servers (see redis.sh for what it provides).

start_etcd() {
  need_packages etcd-server etcd-client
  local dir="$state/etcd" ports cluster="" endpoints="" i
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports 6)"
  for i in 0 1 2; do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${ports[$((i * 2 + 1))]}"
    endpoints+="${endpoints:+,}http://127.0.0.1:${ports[$((i * 2))]}"
  done
  # A token of this instance's own, so members of another private cluster never join
  # this one. The member list and token are kept for restart_etcd.
  echo "$cluster" >"$dir/cluster"
  echo "kvmark-$$-$RANDOM" >"$dir/token"
  echo "$endpoints" >"$dir/url"
  run_etcd
}

# Starts the three members on their ports and data directories (again, after
# `scripts/servers down etcd`, with their data: a member with a data directory rejoins
# its cluster and ignores the initial-cluster flags).
run_etcd() {
  local dir="$state/etcd" clients peers i cluster token endpoints
  cluster=$(cat "$dir/cluster")
  token=$(cat "$dir/token")
  endpoints=$(cat "$dir/url")
  IFS=, read -r -a clients <<<"$endpoints"
  IFS=, read -r -a peers <<<"$cluster"
  : >"$dir/pid"
  for i in 0 1 2; do
    # Loopback only; batches of up to 1024 keys in one transaction (the default is
    # 128). Its output goes to a log, so the caller's pipes close.
    etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "${clients[$i]}" --advertise-client-urls "${clients[$i]}" \
      --listen-peer-urls "${peers[$i]#*=}" --initial-advertise-peer-urls "${peers[$i]#*=}" \
      --initial-cluster "$cluster" --initial-cluster-token "$token" --initial-cluster-state new --max-txn-ops 1024 \
      --logger zap --log-outputs "$dir/m$i.log" </dev/null >>"$dir/m$i.log" 2>&1 &
    echo $! >>"$dir/pid"
  done
  wait_until "etcd (3 members at $endpoints)" etcdctl --endpoints="$endpoints" --dial-timeout=1s --command-timeout=1s endpoint health
}

restart_etcd() { run_etcd; }

# etcd's SIGTERM moves leadership away first and takes seconds per member; a member's
# data is safe in its write-ahead log at every commit, so `scripts/servers down etcd`
# ends the members at once, as a crash would for their clients.
stop_signal_etcd=KILL

# etcd for the etcd engine: a 3-member cluster on loopback, each member with its own
# data directory, so a test can stop one member and watch the run go on against the
# remaining quorum. Sourced by scripts/servers (see redis.sh for what it provides).
#
# With --tls each member also takes https clients on a port of its own beside its http
# one (a member listens on and advertises both); the peers talk plain http, as before.

start_etcd() {
  need_packages etcd-server etcd-client
  local dir="$state/etcd" ports cluster="" endpoints="" tls_endpoints="" i
  mkdir -p "$dir"
  # Each member's client, peer and (with --tls) https client port.
  read -r -a ports <<<"$(free_ports 9)"
  for i in 0 1 2; do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${ports[$((i * 3 + 1))]}"
    endpoints+="${endpoints:+,}http://127.0.0.1:${ports[$((i * 3))]}"
    tls_endpoints+="${tls_endpoints:+,}https://127.0.0.1:${ports[$((i * 3 + 2))]}"
  done
  # A token of this instance's own, so members of another private cluster never join
  # this one. The member list and token are kept for restart_etcd, and so are the
  # endpoints (tls_url with --tls).
  echo "$cluster" >"$dir/cluster"
  echo "kvmark-$$-$RANDOM" >"$dir/token"
  echo "$endpoints" >"$dir/url"
  [ "$want_tls" = 1 ] && echo "$tls_endpoints" >"$dir/tls_url"
  run_etcd
}

# Starts the three members on their ports and data directories (again, after
# `scripts/servers down etcd`, with their data: a member with a data directory rejoins
# its cluster and ignores the initial-cluster flags).
run_etcd() {
  local dir="$state/etcd" clients peers i cluster token endpoints tls_endpoints="" tls_clients=() urls tls
  cluster=$(cat "$dir/cluster")
  token=$(cat "$dir/token")
  endpoints=$(cat "$dir/url")
  has_tls etcd && tls_endpoints=$(cat "$dir/tls_url")
  IFS=, read -r -a clients <<<"$endpoints"
  IFS=, read -r -a tls_clients <<<"$tls_endpoints"
  IFS=, read -r -a peers <<<"$cluster"
  tls=()
  # The certificate for the https URLs. No --trusted-ca-file: with it etcd 3.4 requires
  # a client certificate of every https client, --client-cert-auth or not.
  [ -z "$tls_endpoints" ] || tls=(--cert-file "$state/tls/server.pem" --key-file "$state/tls/server.key")
  : >"$dir/pid"
  for i in 0 1 2; do
    urls=${clients[$i]}${tls_endpoints:+,${tls_clients[$i]}}
    # Loopback only; batches of up to 1024 keys in one transaction (the default is
    # 128). Its output goes to a log, so the caller's pipes close.
    etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "$urls" --advertise-client-urls "$urls" "${tls[@]}" \
      --listen-peer-urls "${peers[$i]#*=}" --initial-advertise-peer-urls "${peers[$i]#*=}" \
      --initial-cluster "$cluster" --initial-cluster-token "$token" --initial-cluster-state new --max-txn-ops 1024 \
      --logger zap --log-outputs "$dir/m$i.log" </dev/null >>"$dir/m$i.log" 2>&1 &
    echo $! >>"$dir/pid"
  done
  wait_until "etcd (3 members at $endpoints)" etcdctl --endpoints="$endpoints" --dial-timeout=1s --command-timeout=1s endpoint health
  [ -z "$tls_endpoints" ] || wait_until "etcd over TLS (3 members at $tls_endpoints)" etcdctl \
    --endpoints="$tls_endpoints" --cacert="$state/tls/ca.pem" --dial-timeout=1s --command-timeout=1s endpoint health
}

restart_etcd() { run_etcd; }

# etcd's SIGTERM moves leadership away first and takes seconds per member; a member's
# data is safe in its write-ahead log at every commit, so `scripts/servers down etcd`
# ends the members at once, as a crash would for their clients.
stop_signal_etcd=KILL

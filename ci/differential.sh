#!/usr/bin/env bash
# The differential judge (issue #28, docs/differential.md): the corpus of harness/differential
# against the sim and a real Kubernetes 1.35 control plane, compared after normalisation.
#
#   bash ci/differential.sh [extra judge args...]
#
# 1. builds `faultline` and `faultline-differential`;
# 2. starts two `faultline sim up --api-only` and runs the judge sim vs sim: it must be 100 %
#    identical (the normalisation hides no stable difference and the corpus is deterministic);
# 3. the real side: $FAULTLINE_DIFF_REAL_KUBECONFIG if set; else a control plane started here
#    from the binaries of ci/upstream.sh (or $FAULTLINE_UPSTREAM_BIN): etcd, kube-apiserver and
#    kube-controller-manager on loopback (start_real below);
# 4. runs the judge sim vs real, prints the table per API group and verb, and fails when fewer
#    exchanges are identical than docs/fidelity.md records
#    ("Differential judge: N of M exchanges identical").
# Without a real control plane (no Go toolchain, no binaries) step 4 is skipped with a notice,
# unless FAULTLINE_DIFF_REQUIRE_REAL=1, which makes that a failure.
# Reports go to $FAULTLINE_DIFF_OUT (default target/differential): sim-vs-sim.json,
# sim-vs-real.json and diffs/ (both canonical answers of each differing exchange).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${FAULTLINE_DIFF_OUT:-$root/target/differential}"
mkdir -p "$out"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
cargo build --locked -q -p faultline --bin faultline
cargo build --locked -q -p faultline-differential --bin faultline-differential
faultline="$target_dir/debug/faultline"
judge="$target_dir/debug/faultline-differential"

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts a sim, waits for its kubeconfig.
start_sim() {
  local name="$1"
  "$faultline" sim up --api-only --nodes 0 --kubeconfig "$work/$name.kubeconfig" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q "press Ctrl-C" "$work/$name.log" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$work/$name.log" >&2
  echo "differential: the sim $name did not start" >&2
  return 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# HOOK (lead): once harness/upstream (faultline-upstream) is merged, start the control plane
# with it instead and write its kubeconfig to "$work/real.kubeconfig". This minimal start is
# etcd + kube-apiserver + kube-controller-manager on loopback with certificates made by openssl.
start_real() {
  local bin=""
  if [ -n "${FAULTLINE_UPSTREAM_BIN:-}" ]; then
    bin="$FAULTLINE_UPSTREAM_BIN"
  elif [ -f ci/upstream.sh ]; then
    bin="$(bash ci/upstream.sh etcd kube-apiserver kube-controller-manager | tail -1)" || return 1
  else
    return 1
  fi
  for b in etcd kube-apiserver kube-controller-manager; do [ -x "$bin/$b" ] || return 1; done
  local d="$work/real"
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=differential-ca" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >san.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out apiserver.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=admin/O=system:masters" -keyout admin.key -out admin.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  local etcd_client etcd_peer api
  etcd_client="$(free_port)"
  etcd_peer="$(free_port)"
  api="$(free_port)"
  "$bin/etcd" --data-dir "$d/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "default=http://127.0.0.1:$etcd_peer" \
    >"$d/etcd.log" 2>&1 &
  pids+=($!)
  "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_client" --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 --secure-port "$api" --tls-cert-file "$d/apiserver.crt" \
    --tls-private-key-file "$d/apiserver.key" --client-ca-file "$d/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$d/sa.pub" --service-account-signing-key-file "$d/sa.key" \
    --service-cluster-ip-range 10.96.0.0/12 --authorization-mode Node,RBAC \
    --cert-dir "$d/certs" >"$d/apiserver.log" 2>&1 &
  pids+=($!)
  local data_ca data_crt data_key
  data_ca="$(base64 -w0 <"$d/ca.crt")"
  data_crt="$(base64 -w0 <"$d/admin.crt")"
  data_key="$(base64 -w0 <"$d/admin.key")"
  cat >"$work/real.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: real
  cluster:
    server: https://127.0.0.1:$api
    certificate-authority-data: $data_ca
contexts:
- name: real
  context: {cluster: real, user: admin}
current-context: real
users:
- name: admin
  user:
    client-certificate-data: $data_crt
    client-key-data: $data_key
EOF
  for _ in $(seq 1 120); do
    if curl -sk --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "https://127.0.0.1:$api/readyz" 2>/dev/null | grep -qx ok; then
      break
    fi
    sleep 0.5
  done
  "$bin/kube-controller-manager" --kubeconfig "$work/real.kubeconfig" --bind-address 127.0.0.1 --secure-port 0 \
    --leader-elect=false --root-ca-file "$d/ca.crt" --service-account-private-key-file "$d/sa.key" \
    --use-service-account-credentials=false >"$d/kcm.log" 2>&1 &
  pids+=($!)
  # the bootstrap objects (default ServiceAccounts, priority classes, RBAC) settle
  for _ in $(seq 1 60); do
    if curl -sk --cert "$d/admin.crt" --key "$d/admin.key" "https://127.0.0.1:$api/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null | grep -q '"name": "default"'; then
      return 0
    fi
    sleep 0.5
  done
  tail -20 "$d/apiserver.log" "$d/kcm.log" >&2
  return 1
}

start_sim sim-a
start_sim sim-b
echo "== sim vs sim"
"$judge" --left "$work/sim-a.kubeconfig" --right "$work/sim-b.kubeconfig" --left-name sim-a --right-name sim-b \
  --json "$out/sim-vs-sim.json" --show 10 "$@" | tee "$out/sim-vs-sim.txt" | tail -4
line="$(grep '^Differential judge:' "$out/sim-vs-sim.txt")"
read -r same total < <(echo "$line" | sed -E 's/^Differential judge: ([0-9]+) of ([0-9]+).*/\1 \2/')
if [ "$same" != "$total" ]; then
  grep -A12 '^DIFF' "$out/sim-vs-sim.txt" | head -60 >&2
  echo "differential: sim vs sim is not 100 % identical ($same of $total): nondeterminism or a normalisation gap" >&2
  exit 1
fi

real_kc="${FAULTLINE_DIFF_REAL_KUBECONFIG:-}"
if [ -z "$real_kc" ]; then
  if start_real; then
    real_kc="$work/real.kubeconfig"
  else
    if [ "${FAULTLINE_DIFF_REQUIRE_REAL:-0}" = 1 ]; then
      echo "differential: no real control plane (ci/upstream.sh or FAULTLINE_UPSTREAM_BIN)" >&2
      exit 1
    fi
    echo "differential: SKIPPED sim vs real: no real control plane here (set FAULTLINE_DIFF_REAL_KUBECONFIG or FAULTLINE_UPSTREAM_BIN)"
    exit 0
  fi
fi
echo "== sim vs real"
rm -rf "$out/diffs"
"$judge" --left "$work/sim-a.kubeconfig" --right "$real_kc" --left-name sim --right-name real \
  --json "$out/sim-vs-real.json" --report-diffs "$out/diffs" --show "${FAULTLINE_DIFF_SHOW:-20}" "$@" | tee "$out/sim-vs-real.txt"
line="$(grep '^Differential judge:' "$out/sim-vs-real.txt")"
same="$(echo "$line" | sed -E 's/^Differential judge: ([0-9]+) of.*/\1/')"
recorded="$(sed -nE 's/^Differential judge: ([0-9]+) of ([0-9]+) exchanges identical.*/\1/p' docs/fidelity.md | head -1)"
if [ -z "$recorded" ]; then
  echo "differential: docs/fidelity.md records no 'Differential judge: N of M exchanges identical' line" >&2
  exit 1
fi
if [ "$same" -lt "$recorded" ]; then
  echo "differential: $same identical exchanges, fewer than the $recorded docs/fidelity.md records" >&2
  exit 1
fi
echo "differential: $same identical (docs/fidelity.md records $recorded)"

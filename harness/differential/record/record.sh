#!/usr/bin/env bash
# Records real clients into corpus/recorded/ (docs/differential.md, "Recording"):
#
#   bash harness/differential/record/record.sh UPSTREAM_KUBECONFIG
#
# For each client, a recording proxy (`faultline-differential record`) in front of the upstream
# apiserver (the sim, in practice: `faultline sim up --api-only --nodes 0`), the client doing
# everyday things in a namespace of its own, then the proxy stopped: the script it wrote is the
# client's corpus file. Clients: kubectl 1.37 (.venv, ci/requirements.txt), kubectl 1.20 (Debian's
# kubernetes-client unpacked as .ci/run does, or $KUBECTL_120), the Python client (.venv) and
# kube-rs (`faultline-differential drive-kube-rs`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
upstream="$1"
judge="${CARGO_TARGET_DIR:-$root/target}/debug/faultline-differential"
out="$here/../corpus/recorded"
mkdir -p "$out"
kubectl137="$root/.venv/bin/kubectl"
kubectl120="${KUBECTL_120:-$root/.venv/kubectl-1.20/usr/bin/kubectl}"
python="$root/.venv/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# record NAME NAMESPACE: starts the proxy, sets $kc; stop_recording stops it.
record() {
  local name="$1" ns="$2"
  "$kubectl137" --kubeconfig "$upstream" create namespace "$ns" >/dev/null
  "$kubectl137" --kubeconfig "$upstream" -n "$ns" wait --for=create serviceaccount/default --timeout=10s >/dev/null
  "$judge" record --upstream "$upstream" --out "$out/$name.yaml" --name "recorded/$name" \
    --client "$name" --namespace "$ns" --kubeconfig "$work/$name.kubeconfig" >"$work/$name.log" 2>&1 &
  proxy=$!
  for _ in $(seq 1 50); do [ -s "$work/$name.kubeconfig" ] && break; sleep 0.1; done
  kc="$work/$name.kubeconfig"
}
stop_recording() {
  kill -TERM "$proxy"
  wait "$proxy" || true
  tail -1 "$work/$1.log"
}

manifest() {
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web}
data:
  mode: fast
YAML
}

# Everyday kubectl: the same session for both versions (what 1.20 lacks fails, and is recorded).
kubectl_session() {
  local k="$1"
  local c=(--kubeconfig "$kc" --cache-dir "$work/cache-$2")
  manifest >"$work/manifest.yaml"
  "$k" "${c[@]}" apply -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" apply -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" get deploy,svc,cm || true
  "$k" "${c[@]}" get deploy web -o yaml >/dev/null || true
  "$k" "${c[@]}" get pods -l app=web -o wide || true
  "$k" "${c[@]}" get cm settings -o json >/dev/null || true
  "$k" "${c[@]}" get all || true
  "$k" "${c[@]}" describe deploy web >/dev/null || true
  "$k" "${c[@]}" label cm settings tier=backend || true
  "$k" "${c[@]}" label cm settings tier=frontend --overwrite || true
  "$k" "${c[@]}" annotate cm settings note=hello || true
  "$k" "${c[@]}" patch cm settings -p '{"data":{"extra":"1"}}' || true
  "$k" "${c[@]}" patch cm settings --type merge -p '{"data":{"extra":"2"}}' || true
  "$k" "${c[@]}" patch cm settings --type json -p '[{"op":"remove","path":"/data/extra"}]' || true
  "$k" "${c[@]}" scale deploy web --replicas 3 || true
  "$k" "${c[@]}" rollout status deploy web --timeout 2s || true
  "$k" "${c[@]}" rollout history deploy web || true
  "$k" "${c[@]}" set image deploy/web web=nginx:1.28 || true
  "$k" "${c[@]}" create configmap literal --from-literal a=b || true
  "$k" "${c[@]}" create secret generic creds --from-literal password=hunter2 || true
  "$k" "${c[@]}" create serviceaccount bot || true
  "$k" "${c[@]}" create role reader --verb get,list --resource pods || true
  "$k" "${c[@]}" create rolebinding reader --role reader --serviceaccount "$ns:bot" || true
  "$k" "${c[@]}" auth can-i list pods --as "system:serviceaccount:$ns:bot" || true
  "$k" "${c[@]}" auth can-i delete nodes || true
  "$k" "${c[@]}" create job once --image busybox -- true || true
  "$k" "${c[@]}" get jobs,events || true
  "$k" "${c[@]}" get cm -l app=web --show-labels || true
  "$k" "${c[@]}" get cm --field-selector metadata.name=settings || true
  "$k" "${c[@]}" get cm nope || true
  "$k" "${c[@]}" apply --server-side --field-manager diff-kubectl -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" apply --dry-run=server -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" diff -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" replace -f "$work/manifest.yaml" || true
  "$k" "${c[@]}" delete cm literal || true
  "$k" "${c[@]}" delete -f "$work/manifest.yaml" --wait=false || true
  "$k" "${c[@]}" delete job once --cascade=foreground --wait=false || true
  "$k" "${c[@]}" delete secret,sa,role,rolebinding --all || true
}

# CLIENTS: which to record (default: all four); namespaces get a random suffix so a re-run
# against the same upstream does not collide.
clients="${CLIENTS:-kubectl-1.37 kubectl-1.20 python kube-rs}"
suffix="$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
want() { case " $clients " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

if want kubectl-1.37; then
ns="rec-kubectl-137-$suffix"
record kubectl-1.37 "$ns"
kubectl_session "$kubectl137" 137
"$kubectl137" --kubeconfig "$kc" --cache-dir "$work/cache-137" api-resources >/dev/null || true
"$kubectl137" --kubeconfig "$kc" --cache-dir "$work/cache-137" explain deployment.spec.strategy >/dev/null || true
stop_recording kubectl-1.37
fi

if want kubectl-1.20 && [ -x "$kubectl120" ]; then
  ns="rec-kubectl-120-$suffix"
  record kubectl-1.20 "$ns"
  kubectl_session "$kubectl120" 120
  "$kubectl120" --kubeconfig "$kc" --cache-dir "$work/cache-120" explain deployment.spec.strategy >/dev/null || true
  stop_recording kubectl-1.20
fi

if want python; then
  ns="rec-python-$suffix"
  record python "$ns"
  "$python" "$here/python_client.py" "$kc" "$ns" || { stop_recording python; exit 1; }
  stop_recording python
fi

if want kube-rs; then
  ns="rec-kube-rs-$suffix"
  record kube-rs "$ns"
  "$judge" drive-kube-rs --kubeconfig "$kc" --namespace "$ns" || { stop_recording kube-rs; exit 1; }
  stop_recording kube-rs
fi

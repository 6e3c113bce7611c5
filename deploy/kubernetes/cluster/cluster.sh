#!/usr/bin/env bash
# A one-node Kubernetes cluster in a scratch directory, for trying the chart
# for real: etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager,
# kube-scheduler and the kubelet (built by build.sh), Debian's containerd and
# runc, the CNI bridge/host-local/loopback plugins. Run as root.
#
#   cluster.sh up   DIR   certificates, configs, start everything, wait for the node Ready
#   cluster.sh down DIR   stop everything started from DIR, remove the pods' mounts,
#                         cgroups, network namespaces and the bridge
#   cluster.sh env  DIR   print KUBECONFIG=... for a shell
#   cluster.sh certs DIR  only the certificates, kubeconfigs and configs
#   cluster.sh stop|start DIR COMPONENT   one component (etcd, kubelet, ...): fault injection
#
# Settings this machine needs, and why:
#   - cgroup v1 (separate hierarchies under /sys/fs/cgroup): Kubernetes 1.34 is
#     the last release whose kubelet defaults failCgroupV1 to false; the config
#     says so explicitly, with cgroupDriver cgroupfs (no systemd as PID 1).
#   - no iptables: no kube-proxy and no masquerade (ipMasq false). Pods reach
#     the host at the bridge's address ($GATEWAY); Services are reached
#     through the API server's service proxy, which dials the endpoints.
#   - every listener binds 127.0.0.1 but the kubelet's API, on the bridge's
#     address (the kubelet refuses a loopback node IP, and the API server
#     dials the node's address for logs and exec).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.4}
CACHE=${FLEETD_K8S_CACHE:-$HOME/.cache/fleetd/k8s/$K8S_VERSION}
BIN=$CACHE/bin
BRIDGE=${FLEETD_K8S_BRIDGE:-fk8s0}
SUBNET=10.244.0.0/24
GATEWAY=10.244.0.1
SERVICE_CIDR=10.96.0.0/16
NODE=fleetd-node
ETCD_PORT=23791 ETCD_PEER_PORT=23801 API_PORT=16443
KCM_PORT=10357 SCHED_PORT=10359 KUBELET_PORT=10350 KUBELET_HEALTHZ=10348
PAUSE_IMAGE=${FLEETD_PAUSE_IMAGE:-localhost/fleetd/pause:1}

die() { echo "cluster: $*" >&2; exit 1; }
log() { printf '%s cluster: %s\n' "$(date -u +%T)" "$*" >&2; }

# wait_for DESC SECONDS CMD...: polls CMD until it succeeds or the deadline passes.
wait_for() {
  local desc=$1 secs=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || die "$desc: not ready after ${secs}s (logs in $D/logs)"
    sleep 0.5
  done
}

# cert NAME CN O [SAN]: a key and a certificate signed by the cluster CA.
cert() {
  local name=$1 cn=$2 o=$3 san=${4:-}
  [[ -f $P/$name.crt ]] && return
  openssl genrsa -out "$P/$name.key" 2048 2>/dev/null
  local subj="/CN=$cn"; [[ -n $o ]] && subj="/O=$o$subj"
  openssl req -new -key "$P/$name.key" -subj "$subj" -out "$P/$name.csr" 2>/dev/null
  local ext=$P/$name.ext
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' \
    "$([[ -n $san ]] && echo serverAuth,clientAuth || echo clientAuth)" > "$ext"
  [[ -n $san ]] && echo "subjectAltName=$san" >> "$ext"
  openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$ext" -out "$P/$name.crt" 2>/dev/null
  rm -f "$P/$name.csr" "$ext"
}

kubeconfig() { # NAME USER-CERT
  cat > "$D/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: fleetd, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$P/ca.crt"}}]
users: [{name: $1, user: {client-certificate: "$P/$2.crt", client-key: "$P/$2.key"}}]
contexts: [{name: fleetd, context: {cluster: fleetd, user: $1}}]
current-context: fleetd
EOF
}

certs() {
  mkdir -p "$P"; chmod 700 "$P"
  if [[ ! -f $P/ca.crt ]]; then
    openssl genrsa -out "$P/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$P/ca.key" -subj "/CN=fleetd-k8s-ca" -days 30 -sha256 -out "$P/ca.crt" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  fi
  cert apiserver kube-apiserver "" "IP:127.0.0.1,IP:10.96.0.1,IP:$GATEWAY,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin kubernetes-admin system:masters
  cert controller-manager system:kube-controller-manager ""
  cert scheduler system:kube-scheduler ""
  cert kubelet-client "system:node:$NODE" system:nodes
  cert kubelet "$NODE" "" "IP:127.0.0.1,IP:$GATEWAY,DNS:$NODE"
  [[ -f $P/sa.key ]] || { openssl genrsa -out "$P/sa.key" 2048 2>/dev/null; openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null; }
  kubeconfig admin admin
  kubeconfig controller-manager controller-manager
  kubeconfig scheduler scheduler
  kubeconfig kubelet kubelet-client
}

configs() {
  mkdir -p "$D/cni" "$D/logs" "$D/pids" "$D/kubelet" "$D/containerd"
  cat > "$D/containerd/config.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$D/containerd.sock"
[ttrpc]
  address = "$D/containerd.sock.ttrpc"
[debug]
  address = "$D/containerd-debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  # This sandbox refuses to lower oom_score_adj (runc: "failed to update
  # /proc/self/oom_score_adj: Permission denied" for the kubelet's -998 on
  # the pod sandbox): clamp scores to containerd's own, as rootless setups do.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$BIN/cni"
    conf_dir = "$D/cni"
    max_conf_num = 1
EOF
  cat > "$D/cni/10-fleetd.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "fleetd-k8s", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/cni-ipam", "ranges": [[{"subnet": "$SUBNET", "gateway": "$GATEWAY"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
]}
EOF
  cat > "$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $GATEWAY
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$P/kubelet.crt"
tlsPrivateKeyFile: "$P/kubelet.key"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$D/containerd.sock"
resolvConf: /etc/resolv.conf
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
serializeImagePulls: false
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
evictionHard: {memory.available: 200Mi, nodefs.available: 3%, imagefs.available: 3%}
maxPods: 60
podLogsDir: "$D/pod-logs"
EOF
}

start() { # NAME CMD...: runs CMD in the background, its pid in pids/NAME.pid
  local name=$1; shift
  setsid "$@" >>"$D/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$D/pids/$name.pid"
}

running() { local f=$D/pids/$1.pid; [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null; }

stop_one() { # NAME: SIGTERM, wait up to 20 s, then SIGKILL; by pid only
  local f=$D/pids/$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

kc() { "$BIN/kubectl" --kubeconfig "$D/admin.kubeconfig" "$@"; }
healthz() { curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "https://127.0.0.1:$API_PORT/readyz" | grep -q ok; }

start_component() {
  case $1 in
  etcd)
    start etcd etcd --name fleetd-k8s --data-dir "$D/etcd" \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster "fleetd-k8s=http://127.0.0.1:$ETCD_PEER_PORT" --quota-backend-bytes 2147483648
    wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health" ;;
  containerd)
    start containerd containerd --config "$D/containerd/config.toml"
    wait_for containerd 30 ctr --address "$D/containerd.sock" version ;;
  kube-apiserver)
    start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
      --bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address "$GATEWAY" --endpoint-reconciler-type none \
      --service-cluster-ip-range "$SERVICE_CIDR" --client-ca-file "$P/ca.crt" \
      --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
      --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
      --kubelet-preferred-address-types InternalIP \
      --service-account-issuer https://kubernetes.default.svc.cluster.local --service-account-key-file "$P/sa.pub" \
      --service-account-signing-key-file "$P/sa.key" --authorization-mode Node,RBAC \
      --enable-admission-plugins NodeRestriction --allow-privileged=false --profiling=false
    wait_for kube-apiserver 120 healthz ;;
  kube-controller-manager)
    start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$D/controller-manager.kubeconfig" \
      --authentication-kubeconfig "$D/controller-manager.kubeconfig" --authorization-kubeconfig "$D/controller-manager.kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
      --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" --use-service-account-credentials \
      --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" \
      --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs=false --profiling=false ;;
  kube-scheduler)
    start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$D/scheduler.kubeconfig" \
      --authentication-kubeconfig "$D/scheduler.kubeconfig" --authorization-kubeconfig "$D/scheduler.kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --profiling=false ;;
  kubelet)
    # The kubelet makes its pod-resources socket under a temporary name and
    # renames it; that rename sporadically fails with EXDEV on a plain
    # directory ("failed to move temporary file to addr …/kubelet.sock:
    # invalid cross-device link", seen here once in four starts; the same
    # flake as k3s-io/k3s#4042), and the kubelet exits. A small tmpfs there,
    # as kindcontainer does for it, keeps the rename on one filesystem of
    # its own; down unmounts it with DIR's other mounts.
    mkdir -p "$D/kubelet/pod-resources"
    mountpoint -q "$D/kubelet/pod-resources" || mount -t tmpfs -o size=1m,mode=0750 tmpfs "$D/kubelet/pod-resources"
    start kubelet "$BIN/kubelet" --kubeconfig "$D/kubelet.kubeconfig" --config "$D/kubelet.yaml" \
      --root-dir "$D/kubelet" --cert-dir "$D/kubelet/pki" --hostname-override "$NODE" --node-ip "$GATEWAY" -v 1
    wait_for kubelet 60 curl -sf "http://127.0.0.1:$KUBELET_HEALTHZ/healthz" ;;
  *) die "unknown component $1" ;;
  esac
}

node_ready() { kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -q True; }

up() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl cni/bridge cni/host-local cni/loopback; do
    [[ -x $BIN/$b ]] || die "$BIN/$b missing: run build.sh first"
  done
  for c in etcd containerd runc openssl curl; do command -v $c >/dev/null || die "$c not on PATH (apt-get install etcd-server containerd runc)"; done
  [[ $(id -u) == 0 ]] || die "run as root (containerd, the kubelet and the CNI plugins need it)"
  mkdir -p "$D"; D=$(cd "$D" && pwd); P=$D/pki
  certs; configs
  [[ -f $D/up.stamp ]] || touch "$D/up.stamp"
  # The bridge up front, so the host has $GATEWAY before the first pod.
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr replace "$GATEWAY/24" dev "$BRIDGE"; ip link set "$BRIDGE" up
  echo 1 > /proc/sys/net/ipv4/ip_forward
  for c in etcd containerd kube-apiserver kube-controller-manager kube-scheduler; do
    running $c || { log "starting $c"; start_component $c; }
  done
  if [[ -n ${FLEETD_K8S_IMAGES:-} ]]; then
    for tar in $FLEETD_K8S_IMAGES; do ctr --address "$D/containerd.sock" -n k8s.io images import "$tar" >/dev/null; done
  fi
  running kubelet || { log "starting kubelet"; start_component kubelet; }
  wait_for "node $NODE Ready" 120 node_ready
  log "up: export KUBECONFIG=$D/admin.kubeconfig"
}

down() {
  [[ -d $D ]] || return 0
  D=$(cd "$D" && pwd)
  stop_one kubelet
  # Pods' containers: stop them through containerd while it runs.
  if running containerd; then
    local ctr=(ctr --address "$D/containerd.sock" -n k8s.io)
    for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  for c in kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do stop_one $c; done
  # Shims outlive containerd; ours are those given our socket.
  local pid
  for pid in $(pgrep -f -- "-address $D/containerd.sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  # Mounts under DIR, deepest first; the pods' network namespaces; cgroups; the bridge.
  # Passes until none is left: the kubelet bind-mounts its root dir onto
  # itself (rshared), so a mount made under it before (pod-resources) is
  # listed once and revealed again when the bind above it goes.
  local pass ms
  for pass in 1 2 3 4 5; do
    ms=$(grep -o " $D/[^ ]*" /proc/self/mounts | sort -r || true)
    [[ -n $ms ]] || break
    for m in $ms; do umount -l "$m" 2>/dev/null || true; done
  done
  # containerd names the pods' network namespaces cni-<uuid>: ours are those made since up.
  if [[ -f $D/up.stamp && -d /var/run/netns ]]; then
    for ns in $(find /var/run/netns -maxdepth 1 -name 'cni-*' -newer "$D/up.stamp" -printf '%f\n'); do ip netns del "$ns" 2>/dev/null || true; done
  fi
  for h in /sys/fs/cgroup/*/kubepods; do
    [[ -d $h ]] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  log "down: $D"
}

cmd=${1:-}; D=${2:-}
[[ -n $cmd && -n $D ]] || die "usage: cluster.sh up|down|env DIR | stop|start DIR COMPONENT"
P=$D/pki
case $cmd in
  up) up ;;
  down) down ;;
  env) echo "KUBECONFIG=$(cd "$D" && pwd)/admin.kubeconfig" ;;
  certs) mkdir -p "$D"; D=$(cd "$D" && pwd); P=$D/pki; certs; configs ;;
  stop) D=$(cd "$D" && pwd); stop_one "${3:?component}" ;;
  start) D=$(cd "$D" && pwd); P=$D/pki; start_component "${3:?component}" ;;
  *) die "unknown command $cmd" ;;
esac

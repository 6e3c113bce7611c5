#!/usr/bin/env bash
# Builds and caches the one-node cluster's binaries from released sources:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl
# from k8s.io/kubernetes at $K8S_VERSION; the CNI plugins bridge, host-local
# and loopback from github.com/containernetworking/plugins; crane from
# github.com/google/go-containerregistry. Output: $CACHE/bin. A second run
# with everything present does nothing. Times go to $CACHE/build-times.txt.
#
# k8s.io/kubernetes's go.mod points its k8s.io/* staging modules at
# ./staging, which the module zip leaves out (each is its own module); the
# script swaps those replace directives for the published modules of the
# same release (v0.X.Y for vX.Y.Z), in a writable copy of the source.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.4}
CNI_VERSION=${CNI_VERSION:-v1.10.0}
GGCR_VERSION=${GGCR_VERSION:-v0.22.1}
CACHE=${FLEETD_K8S_CACHE:-$HOME/.cache/fleetd/k8s/$K8S_VERSION}
BIN=$CACHE/bin
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

log() { printf '%s build: %s\n' "$(date -u +%T)" "$*" >&2; }
mkdir -p "$BIN"

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
missing=()
for b in "${k8s_bins[@]}"; do [[ -x $BIN/$b ]] || missing+=("$b"); done

if ((${#missing[@]})); then
  start=$(date +%s)
  src=$CACHE/src
  if [[ ! -f $src/.ready ]]; then
    dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    [[ -d $dir ]] || { echo "build: go mod download k8s.io/kubernetes@$K8S_VERSION gave no Dir" >&2; exit 1; }
    rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"; rm -f "$src/go.work" "$src/go.work.sum"
    staging=v0.${K8S_VERSION#v1.}
    # k8s.io/X => ./staging/src/k8s.io/X  becomes  k8s.io/X => k8s.io/X v0.Y.Z
    sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1\2 => \2 $staging#" "$src/go.mod"
    if grep -q '=> ./staging' "$src/go.mod"; then echo "build: staging replace left in $src/go.mod" >&2; exit 1; fi
    touch "$src/.ready"
  fi
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  log "k8s $K8S_VERSION: building ${missing[*]} (cold cache: tens of minutes on 2 cores)"
  pkgs=(); for b in "${missing[@]}"; do pkgs+=("./cmd/$b"); done
  (cd "$src" && nice go build -trimpath -ldflags="$ldflags" -o "$BIN/" "${pkgs[@]}")
  echo "k8s $K8S_VERSION ${missing[*]}: $(( $(date +%s) - start ))s $(date -u +%FT%TZ)" >> "$CACHE/build-times.txt"
fi

if [[ ! -x $BIN/cni/bridge || ! -x $BIN/cni/host-local || ! -x $BIN/cni/loopback ]]; then
  start=$(date +%s); mkdir -p "$BIN/cni"
  for p in main/bridge ipam/host-local main/loopback; do
    GOBIN=$BIN/cni nice go install -trimpath -ldflags="-s -w" "github.com/containernetworking/plugins/plugins/$p@$CNI_VERSION"
  done
  echo "cni $CNI_VERSION: $(( $(date +%s) - start ))s $(date -u +%FT%TZ)" >> "$CACHE/build-times.txt"
fi

if [[ ! -x $BIN/crane ]]; then
  start=$(date +%s)
  GOBIN=$BIN nice go install -trimpath -ldflags="-s -w" "github.com/google/go-containerregistry/cmd/crane@$GGCR_VERSION"
  echo "crane $GGCR_VERSION: $(( $(date +%s) - start ))s $(date -u +%FT%TZ)" >> "$CACHE/build-times.txt"
fi
log "binaries in $BIN"

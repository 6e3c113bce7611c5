#!/usr/bin/env bash
# Builds the cluster's two images from static binaries, from scratch (no base
# image, no registry): localhost/fleetd/pause:1 (the pod sandbox, ./pause) and
# localhost/fleetd/fleetd:dev (./cmd/fleetd, built as the Dockerfile builds it),
# as `docker save` tarballs in OUTDIR for `ctr images import`.
#   images.sh OUTDIR
set -euo pipefail
out=${1:?usage: images.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
mkdir -p "$out"; out=$(cd "$out" && pwd)
export CGO_ENABLED=0 GOFLAGS=-trimpath
(cd "$here/.." && nice go build -ldflags="-s -w" -o "$out/" ./cluster/pause ./cluster/mkimage)
(cd "$repo" && nice go build -buildvcs=false -ldflags="-s -w -buildid=" -o "$out/fleetd" ./cmd/fleetd)
"$out/mkimage" -t localhost/fleetd/pause:1 -o "$out/pause.tar" -entrypoint /pause -dirs "" "$out/pause=/pause"
"$out/mkimage" -t localhost/fleetd/fleetd:dev -o "$out/fleetd.tar" -entrypoint /usr/local/bin/fleetd "$out/fleetd=/usr/local/bin/fleetd"

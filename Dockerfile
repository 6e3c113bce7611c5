# syntax=docker/dockerfile:1
# fleetd's container image: one static binary on distroless, non-root.
#
# Reproducible: CGO off, -trimpath, no VCS stamp, no build id and a fixed
# SOURCE_DATE_EPOCH give the same binary from the same source wherever it is
# checked out. Pin the base images by digest when you publish:
#   docker build --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) -t fleetd .
#
# A target whose compiler must run in the pod: add a stage that builds it and
# copy it next to fleetd, then set target.compiler: ["/usr/local/bin/tlc", "{src}"].
# The sample platform's compiler is fleetd itself: ["/usr/local/bin/fleetd", "testbed", "compile", "{src}"].
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG SOURCE_DATE_EPOCH=0
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
RUN go build -buildvcs=false -ldflags="-s -w -buildid=" -o /out/fleetd ./cmd/fleetd

FROM ${BASE_IMAGE}
COPY --from=build /out/fleetd /usr/local/bin/fleetd
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fleetd"]

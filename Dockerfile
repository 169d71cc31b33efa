# The brainwire server as a container image: a static binary on a distroless
# base (CA certificates and time zones, no shell, no package manager), run as
# a non-root user.
#
#   docker build -t brainwire .
#   docker run -p 8000:8000 -e BRAINWIRE_API_KEYS=<key>:<user> brainwire
#
# Configuration is the environment, as for `brainwire serve` (README.md).

FROM golang:1.26-trixie AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A static binary: no cgo (SQLite is pure Go), so it needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/brainwire ./cmd/brainwire \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/brainwire /usr/local/bin/brainwire
# The data directory (SQLite file, local audio) belongs to the user the
# server runs as: nonroot, uid 65532 in distroless images.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# GODEBUG: new goroutines start on small stacks instead of the running
# average. Every capture holds three (its handler, the phone connection's
# reader, the upstream stream), two of them shallow; at 1,000 captures in
# flight this is about 10 KiB less memory per capture, at no CPU cost
# measured (bench/RESULTS.md).
ENV BRAINWIRE_ADDR=0.0.0.0:8000 \
    BRAINWIRE_DATA_DIR=/data \
    BRAINWIRE_LOG_FORMAT=json \
    GODEBUG=adaptivestackstart=0
EXPOSE 8000
VOLUME ["/data"]
# The base has no shell or curl: the binary probes its own /health (exec
# form, no shell), which answers 503 when the agent or the store is down.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/brainwire", "health"]
ENTRYPOINT ["/usr/local/bin/brainwire"]
CMD ["serve"]

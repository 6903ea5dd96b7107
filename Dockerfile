# fleetwave's image: a static Go binary on Debian slim with git (the previews and rollouts run the git CLI:
# internal/edge/gitcache, internal/edge/source), as a non-root user, read-only root filesystem friendly (writes go to
# /tmp and the data volume). Build: docker build --build-arg VERSION=$(git describe --tags --always) -t fleetwave .
# The Helm chart (deploy/helm/fleetwave) runs it as user 65532 with a read-only root filesystem.

FROM golang:1.27-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# modernc.org/sqlite and pgx are pure Go: the binary is static.
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/fleetwave/fleetwave/internal/cli.version=${VERSION}" \
      -o /out/fleetwave ./cmd/bot

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 fleetwave \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin fleetwave
COPY --from=build /out/fleetwave /usr/local/bin/fleetwave
USER 65532:65532
EXPOSE 8080
ENV FLEETWAVE_ADDR=:8080 TMPDIR=/tmp
ENTRYPOINT ["/usr/local/bin/fleetwave"]
CMD ["serve"]

# syntax=docker/dockerfile:1
# Build a static changesetd and run it as a non-root user.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" -t changesetd .
#   docker run --rm -p 127.0.0.1:7878:7878 -v "$PWD":/workspace -v changesetd-state:/state changesetd
#
# The token is generated into the state volume on first start; the connect
# URL is printed on stdout. docs/deployment.md has bind mounts, detached
# runs, a compose file, the dev container and an agent image.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the build context (.dockerignore), so Go cannot stamp the
# commit itself: both come from the build arguments. Without them the
# version is the checkout's default.
ARG VERSION=
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/changesetd ./cmd/changesetd
# The state directory, owned by the runtime user: Docker fills a new named
# volume from the image's content at its mount point, ownership included,
# so the first start can write its token there. distroless has no shell to
# create it in the final stage, so it is made here inside a root-to-be
# (copied as an entry, so --chown and the mode surely apply to it, not only
# to its contents).
RUN install -d -o 65532 -g 65532 -m 0700 /out/rootfs/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/changesetd /usr/local/bin/changesetd
COPY --from=build --chown=65532:65532 /out/rootfs/ /
# Inside the container the daemon must listen on all interfaces for the
# published port to reach it; publish it on the host's loopback only (see
# the run line above). The token still guards every connection. Both are
# variables, so "docker run -e" or a compose file can change them without
# a new command; a flag in the command would win over them.
ENV CHANGESETD_LISTEN=0.0.0.0:7878 \
    CHANGESETD_STATE_DIR=/state
VOLUME ["/state"]
EXPOSE 7878
# 65532 is distroless's "nonroot"; numeric, so that a runtime that insists
# on a non-root user can check it without a passwd file.
USER 65532:65532
# "health" reads the daemon's address from $CHANGESETD_STATE_DIR/daemon.json
# and asks /healthz; no shell or curl is needed.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/changesetd", "health"]
ENTRYPOINT ["/usr/local/bin/changesetd"]
CMD ["serve", "/workspace"]

# syntax=docker/dockerfile:1
# Build a static changesetd and run it as a non-root user.
#
#   docker build -t changesetd .
#   docker run --rm -p 127.0.0.1:7878:7878 -v "$PWD":/workspace -v changesetd-state:/state changesetd
#
# The token is generated into the state volume on first start; the connect
# URL is printed on stdout.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/changesetd ./cmd/changesetd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/changesetd /usr/local/bin/changesetd
VOLUME ["/state"]
EXPOSE 7878
USER nonroot:nonroot
# Inside the container the daemon must listen on all interfaces for the
# published port to reach it; publish it on the host's loopback only (see
# the run line above). The token still guards every connection.
ENTRYPOINT ["/usr/local/bin/changesetd"]
CMD ["serve", "--listen", "0.0.0.0:7878", "--state-dir", "/state", "/workspace"]

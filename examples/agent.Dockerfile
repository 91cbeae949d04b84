# syntax=docker/dockerfile:1
# An agent's image with the changesetd CLI on its PATH, copied from the
# changesetd image: the one "docker build -t changesetd ." at the
# repository's top tags, or the compose file's changesetd service (its
# additional_contexts). The CLI marks turns and reads comments on the
# daemon in the other container.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=changesetd /usr/local/bin/changesetd /usr/local/bin/changesetd

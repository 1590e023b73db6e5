# A single static binary on distroless, running as non-root.
#   docker build -t zklockviz .
#   docker run --rm -p 127.0.0.1:8080:8080 zklockviz serve --zk zk1:2181 --watch-under /locks --insecure
# (--insecure because the container must listen on 0.0.0.0; publish the port
# on loopback as above, or set ZKLOCKVIZ_TOKEN instead.)

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the build context, so the build records no VCS facts:
# stamp them, as the Makefile does, e.g.
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) --build-arg REVTIME=$(git log -1 --format=%cI) .
ARG VERSION=dev
ARG REVISION=
ARG REVTIME=
# The *_templ.go files are committed, so no templ step is needed here.
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION} -X main.revisionTime=${REVTIME}" \
    -o /out/zklockviz ./cmd/zklockviz

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/zklockviz /usr/local/bin/zklockviz
USER nonroot:nonroot
ENV ZKLOCKVIZ_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/zklockviz"]
CMD ["help"]

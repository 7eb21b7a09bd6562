# syntax=docker/dockerfile:1
# flowgate: the ./sidecar binary, built static, run as a non-root user.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces hibiken/asynq with the patched copy here (third_party/asynq/PATCH.md).
COPY third_party/ third_party/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -o /flowgate ./sidecar

# Alpine rather than distroless: busybox wget serves the compose healthcheck
# on /readyz. ca-certificates for the Cloud9 API, tzdata for cron schedules.
FROM alpine:3.22
RUN apk add --no-cache ca-certificates tzdata \
    && addgroup -S -g 10001 flowgate \
    && adduser -S -D -H -u 10001 -G flowgate flowgate
COPY --from=build /flowgate /flowgate
USER 10001:10001
ENV FLOWGATE_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["/flowgate"]

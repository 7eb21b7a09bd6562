package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"

	fiberlog "github.com/gofiber/fiber/v2/log"
	"github.com/redis/go-redis/v9"
)

// routeLibraryLogs sends what libraries print on their own through l, so
// that LOG_FORMAT=json gives one JSON object per line: go-redis' internal
// logger (pool dial failures…), the standard log package (Asynqmon) and
// Fiber's own logger. Asynq's servers already log through l
// (asynqrt's slogAdapter). The loggers are process-wide: run calls it
// once, before anything starts.
func routeLibraryLogs(l *slog.Logger) {
	redis.SetLogger(redisLogger{l.With("component", "go-redis")})
	slog.SetDefault(l) // the log package now writes through l's handler
	log.SetFlags(0)    // slog stamps the time itself
	fiberlog.SetOutput(lineWriter{l.With("component", "fiber")})
}

// redisLogger adapts slog to go-redis' internal.Logging.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	r.l.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// lineWriter logs each line written to it as one warning.
type lineWriter struct{ l *slog.Logger }

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			w.l.Warn(string(line))
		}
	}
	return len(p), nil
}

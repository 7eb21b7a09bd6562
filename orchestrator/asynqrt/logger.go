package asynqrt

import (
	"context"
	"fmt"
	"log/slog"
)

// slogAdapter lets asynq log through slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(level slog.Level, args ...any) {
	a.l.Log(context.Background(), level, fmt.Sprint(args...))
}

func (a slogAdapter) Debug(args ...any) { a.log(slog.LevelDebug, args...) }
func (a slogAdapter) Info(args ...any)  { a.log(slog.LevelInfo, args...) }
func (a slogAdapter) Warn(args ...any)  { a.log(slog.LevelWarn, args...) }
func (a slogAdapter) Error(args ...any) { a.log(slog.LevelError, args...) }

// Fatal is logged as an error: flowgate decides itself when to exit.
func (a slogAdapter) Fatal(args ...any) { a.log(slog.LevelError, args...) }

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskimport"
)

// runImportQueue is `flowgate import-queue`: the old queue API's tasks into
// the ledger of the Redis this environment configures (LoadConfig, as the
// server reads it). An embedded Redis is refused: it would vanish with the
// command.
func runImportQueue(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return taskimport.Main(ctx, args, getenv, stdout, stderr, func(ctx context.Context) (*tasks.Ledger, func(), error) {
		cfg, err := LoadConfig(getenv)
		if err != nil {
			return nil, nil, &taskimport.ConfigError{Err: fmt.Errorf("invalid configuration: %w", err)}
		}
		if cfg.Embedded() {
			return nil, nil, &taskimport.ConfigError{Err: errors.New("no Redis configured: set REDIS_URL (or REDIS_CLUSTER_ADDRS / REDIS_SENTINEL_ADDRS) to flowgate's Redis; an embedded one would be gone when the import ends")}
		}
		b, err := openRedis(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return nil, nil, importConfigError(err)
		}
		// The tasks go under the keys of REDIS_SHARDS: refused, as a start
		// is, where the Redis holds data of another count (the servers
		// would never see them), and recorded where nothing is recorded.
		if err := checkShardLayout(ctx, b.Client, cfg.RedisShards); err != nil {
			_ = b.close()
			return nil, nil, importConfigError(err)
		}
		l, err := tasks.New(b.Client, tasks.Config{MaxAttempts: cfg.MaxRetryAttempts, MaxRecoveries: cfg.MaxRecoveries, MaxProcessing: cfg.TaskMaxProcessing,
			Shards: cfg.RedisShards, PlainRedis: cfg.RedisClientMode == RedisClientPlain})
		if err != nil {
			_ = b.close()
			return nil, nil, fmt.Errorf("task ledger: %w", err)
		}
		return l, func() { _ = b.close() }, nil
	})
}

// importConfigError is err as the import answers it: a configuration
// error of flowgate's (*ConfigError) is the import's (exit 2), any other
// stays as it is.
func importConfigError(err error) error {
	if ce := (*ConfigError)(nil); errors.As(err, &ce) {
		return &taskimport.ConfigError{Err: fmt.Errorf("invalid configuration: %w", err)}
	}
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// backend is the Redis flowgate runs on: one go-redis client for its own
// keys and the asynq client/inspector, and the connection option asynq
// servers and Asynqmon build their pools from. Both come from the same
// RedisConnOpt, so they always point at the same server.
type backend struct {
	Client  redis.UniversalClient
	ConnOpt asynq.RedisConnOpt
	Mode    string // embedded, url, cluster, sentinel
	mini    *miniredis.Miniredis
}

func openRedis(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	b := &backend{}
	switch {
	case cfg.RedisURL != "":
		opt, err := asynq.ParseRedisURI(cfg.RedisURL)
		if err != nil {
			return nil, &ConfigError{Var: "REDIS_URL", Err: err}
		}
		switch o := opt.(type) {
		case asynq.RedisClientOpt:
			o.PoolSize = cfg.RedisPoolSize
			opt = o
		case asynq.RedisFailoverClientOpt:
			o.PoolSize = cfg.RedisPoolSize
			opt = o
		}
		b.ConnOpt, b.Mode = opt, "url"
	case len(cfg.RedisClusterAddrs) > 0:
		b.ConnOpt = asynq.RedisClusterClientOpt{Addrs: cfg.RedisClusterAddrs, Password: cfg.RedisPassword}
		b.Mode = "cluster"
	case len(cfg.RedisSentinelAddrs) > 0:
		b.ConnOpt = asynq.RedisFailoverClientOpt{MasterName: cfg.RedisSentinelMaster,
			SentinelAddrs: cfg.RedisSentinelAddrs, Password: cfg.RedisPassword, PoolSize: cfg.RedisPoolSize}
		b.Mode = "sentinel"
	default:
		mini := miniredis.NewMiniRedis()
		if err := mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		b.mini, b.Mode = mini, "embedded"
		b.ConnOpt = asynq.RedisClientOpt{Addr: mini.Addr(), PoolSize: cfg.RedisPoolSize}
		log.Warn("EMBEDDED REDIS: nothing is durable — every queued booking, task, hold and dead letter is lost when this process exits. Set REDIS_URL (or REDIS_CLUSTER_ADDRS / REDIS_SENTINEL_ADDRS) for anything but a trial.",
			"addr", mini.Addr())
	}
	client, ok := b.ConnOpt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		b.close()
		return nil, fmt.Errorf("unsupported redis connection option %T", b.ConnOpt)
	}
	b.Client = client
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		b.close()
		return nil, fmt.Errorf("redis (%s) not reachable: %w", b.Mode, err)
	}
	return b, nil
}

func (b *backend) ping(ctx context.Context) error { return b.Client.Ping(ctx).Err() }

func (b *backend) close() error {
	var errs []error
	if b.Client != nil {
		errs = append(errs, b.Client.Close())
	}
	if b.mini != nil {
		b.mini.Close()
	}
	return errors.Join(errs...)
}

package signature

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultReplayPrefix prefixes the Redis keys of RedisReplayGuard.
const DefaultReplayPrefix = "flowgate:webhook:replay:"

// ReplayGuard remembers signatures. Seen records sig for ttl and reports
// whether it was already recorded. It must be atomic across every instance
// that shares it: of two concurrent calls with the same sig, exactly one
// reports false. An error makes the Verifier refuse the request.
type ReplayGuard interface {
	Seen(ctx context.Context, sig string, ttl time.Duration) (bool, error)
}

// ReplayGuardFunc adapts a function to ReplayGuard.
type ReplayGuardFunc func(ctx context.Context, sig string, ttl time.Duration) (bool, error)

// Seen calls f.
func (f ReplayGuardFunc) Seen(ctx context.Context, sig string, ttl time.Duration) (bool, error) {
	return f(ctx, sig, ttl)
}

// RedisReplayGuard is a ReplayGuard on Redis: one key per signature,
// written with SET NX and a TTL, so it works on a single server and on
// Redis Cluster alike.
type RedisReplayGuard struct {
	client redis.UniversalClient
	prefix string
}

// NewRedisReplayGuard stores keys as prefix + signature (lowercase hex). An
// empty prefix means DefaultReplayPrefix.
func NewRedisReplayGuard(client redis.UniversalClient, prefix string) *RedisReplayGuard {
	if prefix == "" {
		prefix = DefaultReplayPrefix
	}
	return &RedisReplayGuard{client: client, prefix: prefix}
}

// Key is the Redis key holding sig.
func (g *RedisReplayGuard) Key(sig string) string { return g.prefix + sig }

// Seen implements ReplayGuard.
func (g *RedisReplayGuard) Seen(ctx context.Context, sig string, ttl time.Duration) (bool, error) {
	created, err := g.client.SetNX(ctx, g.Key(sig), 1, ttl).Result()
	if err != nil {
		return false, err
	}
	return !created, nil
}

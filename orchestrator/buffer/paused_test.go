package buffer_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// With Redis paused (SIGSTOP: connections open, nothing answers) an
// enqueue fails with PERSISTENCE_FAILURE when its context ends (plus the
// bounded task check), without a key (on the place credit: straight to
// Asynq's enqueue) and with one (the coalesced admission), on the
// auto-pipelined client (whose batches wait for Redis whatever the
// caller's context) as on the plain one.
func TestPausedRedisEnqueueAnswersByItsDeadline(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipelined", true: "plain"}[plain], func(t *testing.T) {
			t.Parallel()
			srv := rediscluster.StartServer(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = rdb.Close() })
			x := setup(t, func(c *buffer.Config) {
				c.Redis, c.ConnOpt, c.PlainEnqueue = rdb, asynq.RedisClientOpt{Addr: srv.Addr()}, plain
				c.DepthRefresh = time.Minute // the place credit stays: the unkeyed enqueue skips the admission
			})
			x.start(t, fn("paused.work", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
			enq(t, x.buf, "paused.work", `{}`) // Redis answers

			resume := srv.Pause()
			for _, key := range []string{"", "paused-key"} {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				start := time.Now()
				_, err := x.buf.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "paused.work", Payload: []byte(`{}`), IdempotencyKey: key})
				cancel()
				t.Logf("key %q: %v after %s", key, err, time.Since(start))
				require.Error(t, err, "key %q", key)
				require.Equal(t, contracts.CodePersistenceFailure, contracts.ErrorCode(err), "key %q: %v", key, err)
				require.Less(t, time.Since(start), 2*time.Second, "key %q: answered by its deadline, not Redis' return", key)
			}
			resume()
		})
	}
}

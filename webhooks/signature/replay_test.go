package signature_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const testPrefix = "flowgate:test:replay:"

// redisPair is two Verifiers, as on two flowgate instances, each with its
// own client to one Redis database.
type redisPair struct {
	db     *redistest.DB
	v1, v2 *signature.Verifier
}

func setupRedisPair(t *testing.T) redisPair {
	t.Helper()
	db := redistest.New(t)
	opt, err := redis.ParseURL(db.URL())
	require.NoError(t, err)
	other := redis.NewClient(opt)
	t.Cleanup(func() { _ = other.Close() })
	return redisPair{
		db: db,
		v1: newHMAC(t, signature.NewRedisReplayGuard(db.Client, testPrefix)),
		v2: newHMAC(t, signature.NewRedisReplayGuard(other, testPrefix)),
	}
}

// downClient is a client to a port nobody listens on.
func downClient(t testing.TB) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisReplayAcrossInstances(t *testing.T) {
	t.Parallel()
	p := setupRedisPair(t)
	ctx := context.Background()
	h := signed(testSecret, testNow, ackBody)

	require.NoError(t, p.v1.Verify(ctx, h.Get, ackBody))
	requireRefused(t, p.v2.Verify(ctx, h.Get, ackBody), contracts.CodeUnauthorized, signature.ReasonReplayed)
	requireRefused(t, p.v1.Verify(ctx, h.Get, ackBody), contracts.CodeUnauthorized, signature.ReasonReplayed)

	// The same signature spelled differently is the same replay.
	alt := headers("X-Timestamp", h.Get("X-Timestamp"), "X-Signature", "sha256="+h.Get("X-Signature"))
	requireRefused(t, p.v2.Verify(ctx, alt.Get, ackBody), contracts.CodeUnauthorized, signature.ReasonReplayed)

	// One key, named after the signature, living for twice the tolerance.
	keys, err := p.db.Client.Keys(ctx, testPrefix+"*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{testPrefix + h.Get("X-Signature")}, keys)
	ttl, err := p.db.Client.TTL(ctx, keys[0]).Result()
	require.NoError(t, err)
	require.InDelta(t, (600 * time.Second).Seconds(), ttl.Seconds(), 5)

	// Another body at the same second is a different request.
	other := []byte(`{"queue_id":"q2"}`)
	require.NoError(t, p.v2.Verify(ctx, signed(testSecret, testNow, other).Get, other))
}

func TestRedisReplayForgeriesWriteNothing(t *testing.T) {
	t.Parallel()
	p := setupRedisPair(t)
	ctx := context.Background()
	forged := headers("X-Timestamp", "1700000000", "X-Signature", "0000000000000000000000000000000000000000000000000000000000000000")
	for range 10 {
		requireRefused(t, p.v1.Verify(ctx, forged.Get, ackBody), contracts.CodeUnauthorized, signature.ReasonBadSignature)
	}
	n, err := p.db.Client.Keys(ctx, testPrefix+"*").Result()
	require.NoError(t, err)
	require.Empty(t, n)
}

func TestRedisReplayConcurrent(t *testing.T) {
	t.Parallel()
	p := setupRedisPair(t)
	h := signed(testSecret, testNow, ackBody)

	var accepted, replayed atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		v := p.v1
		if i%2 == 1 {
			v = p.v2
		}
		wg.Go(func() {
			err := v.Verify(context.Background(), h.Get, ackBody)
			if err == nil {
				accepted.Add(1)
				return
			}
			if contracts.ErrorCode(err) == contracts.CodeUnauthorized {
				replayed.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, accepted.Load())
	require.EqualValues(t, 31, replayed.Load())
}

func TestRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	v := newHMAC(t, signature.NewRedisReplayGuard(downClient(t), ""))
	h := signed(testSecret, testNow, ackBody)
	for range 2 { // and stays closed: a retry is not let through either
		err := v.Verify(context.Background(), h.Get, ackBody)
		e := refusal(t, err, contracts.CodeUnavailable, signature.ReasonReplayUnavailable)
		require.Error(t, e.Err, "cause kept for the log")
		require.Equal(t, 503, e.Code.HTTPStatus())
		require.NotContains(t, e.Message, "127.0.0.1")
	}
}

func TestRedisReplayGuardDefaultPrefix(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	g := signature.NewRedisReplayGuard(db.Client, "")
	require.Equal(t, "flowgate:webhook:replay:abc", g.Key("abc"))

	ctx := context.Background()
	seen, err := g.Seen(ctx, "abc", time.Minute)
	require.NoError(t, err)
	require.False(t, seen)
	seen, err = g.Seen(ctx, "abc", time.Minute)
	require.NoError(t, err)
	require.True(t, seen)
	require.EqualValues(t, 1, db.Client.Exists(ctx, "flowgate:webhook:replay:abc").Val())
}

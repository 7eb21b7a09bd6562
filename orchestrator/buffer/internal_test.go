package buffer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// Defect 4: on Redis Cluster a subscriber may sit on any node; PUBSUB
// NUMSUB sent to one node missed the others (the publisher then dropped
// events a dashboard was waiting for). numSub asks every node.
func TestNumSubCountsEveryClusterNode(t *testing.T) {
	c := rediscluster.Start(t)
	ctx := context.Background()
	const ch = "flowgate:buffer:events"
	for _, addr := range c.Addrs() {
		node := redis.NewClient(&redis.Options{Addr: addr})
		ps := node.Subscribe(ctx, ch)
		_, err := ps.Receive(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ps.Close(); _ = node.Close() })
	}
	n, err := numSub(ctx, c.Client(), ch)
	require.NoError(t, err)
	require.EqualValues(t, len(c.Addrs()), n, "one subscriber per node")
}

// blockPipelines holds the first depth read (16 commands) until release
// is closed.
type blockPipelines struct {
	release, entered chan struct{}
	once             *sync.Once
}

func (h blockPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h blockPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h blockPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 16 {
			h.once.Do(func() {
				h.entered <- struct{}{}
				<-h.release
			})
		}
		return next(ctx, cmds)
	}
}

// Defect 3: the depth figure's lock was held across the Redis read, so a
// slow Redis stalled every enqueue of the instance behind it. Now a resync
// blocked in Redis leaves the figure free.
func TestDepthResyncHoldsNoLockAcrossRedis(t *testing.T) {
	db := redistest.New(t)
	h := blockPipelines{release: make(chan struct{}), entered: make(chan struct{}, 1), once: &sync.Once{}}
	db.Client.AddHook(h)
	g := &depthGauge{rdb: db.Client, key: depthKey("flowgate"), creditKey: creditKey("flowgate"), flush: time.Hour, reconcile: time.Hour,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), th: Thresholds{Normal: 1, Warning: 2, Alert: 3, Max: 4}}
	done := make(chan error, 1)
	go func() { done <- g.resync(context.Background()) }()
	<-h.entered // the read is in Redis now
	free := make(chan int64, 1)
	go func() { g.set(2); free <- g.Value() }()
	select {
	case v := <-free:
		require.EqualValues(t, 2, v)
	case <-time.After(2 * time.Second):
		t.Fatal("the figure is locked while Redis answers")
	}
	close(h.release)
	require.NoError(t, <-done)
	require.Zero(t, g.Value(), "the resync set the true depth")
}

// Defect 7: a purge skips a dead letter that vanished meanwhile (replayed,
// deleted, purged by another instance) instead of stopping at its 404.
func TestPurgeSkipsVanishedDeadLetters(t *testing.T) {
	db := redistest.New(t)
	b, err := New(Config{ConnOpt: db.AsynqOpt(), Redis: db.Client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	require.NoError(t, b.Register(Func{Base: Base{Name: "x", TimeoutAfter: time.Second}, Fn: func(context.Context, *Message) (any, error) {
		return nil, &StatusError{StatusCode: 400}
	}}))
	require.NoError(t, b.Start())
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		_, err := b.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "x", MessageID: id, Payload: []byte(`{}`)})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { n, _ := b.DLQCount(ctx); return n == 2 }, 10*time.Second, 10*time.Millisecond)
	n, err := b.purgeIDs(ctx, []string{"a", "vanished", "b"})
	require.NoError(t, err)
	require.Equal(t, 2, n, "both real dead letters purged past the vanished one")
	left, err := b.DLQCount(ctx)
	require.NoError(t, err)
	require.Zero(t, left)
}

// Defect 11: gobreaker reads time.Now and has no clock hook. The breaker's
// transitions are tested inside a testing/synctest bubble, whose clock is
// virtual: time.Sleep(Timeout) moves it exactly, so OPEN → HALF_OPEN →
// CLOSED is asserted without waiting or racing the wall clock.
func TestCircuitTransitionsOnAVirtualClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		c := newCircuits(CircuitConfig{Threshold: 2, Timeout: 30 * time.Second}, func(_ string, from, to gobreaker.State) {
			seen = append(seen, stateName(from)+">"+stateName(to))
		})
		c.add("hook")
		cb := c.get("hook")
		down := errors.New("downstream 503")
		for range 2 {
			_, err := cb.Execute(func() (any, error) { return nil, &StatusError{StatusCode: 503, Body: down.Error()} })
			require.Error(t, err)
		}
		require.Equal(t, gobreaker.StateOpen, cb.State())
		_, err := cb.Execute(func() (any, error) { t.Fatal("an open breaker runs nothing"); return nil, nil })
		require.True(t, isBreakerRefusal(err))

		time.Sleep(30 * time.Second)
		require.Equal(t, gobreaker.StateOpen, cb.State(), "still open at the timeout itself")
		time.Sleep(time.Nanosecond)
		require.Equal(t, gobreaker.StateHalfOpen, cb.State())
		_, err = cb.Execute(func() (any, error) { return "ok", nil })
		require.NoError(t, err)
		require.Equal(t, gobreaker.StateClosed, cb.State())
		require.Equal(t, "CLOSED>OPEN,OPEN>HALF_OPEN,HALF_OPEN>CLOSED", strings.Join(seen, ","))
	})
}

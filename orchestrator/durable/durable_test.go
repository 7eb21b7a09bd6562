package durable_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/durable"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// pair is a master with one replica linked to it.
type pair struct {
	master, replica *rediscluster.Server
	mc, rc          *redis.Client
}

func startPair(t *testing.T) pair {
	t.Helper()
	m := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0"))
	r := rediscluster.StartServer(t, rediscluster.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(m.Port())))
	p := pair{master: m, replica: r,
		mc: redis.NewClient(&redis.Options{Addr: m.Addr()}),
		rc: redis.NewClient(&redis.Options{Addr: r.Addr()})}
	t.Cleanup(func() { _ = p.mc.Close(); _ = p.rc.Close() })
	require.Eventually(t, func() bool {
		info, err := p.rc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 15*time.Second, 20*time.Millisecond, "replica never linked")
	return p
}

// A write made on another connection (as Asynq's are) is on the replica
// once Sync returns: the marker's WAIT covers every earlier write of the
// master, whoever made it.
func TestSyncCoversWritesOfOtherConnections(t *testing.T) {
	p := startPair(t)
	ctx := context.Background()
	b, err := durable.New(p.mc, durable.Config{Replicas: 1, Timeout: 2 * time.Second})
	require.NoError(t, err)

	other := redis.NewClient(&redis.Options{Addr: p.master.Addr()})
	defer other.Close()
	for i := range 50 {
		key := fmt.Sprintf("k%d", i)
		require.NoError(t, other.Set(ctx, key, i, 0).Err())
		require.NoError(t, b.Sync(ctx))
		got, err := p.rc.Get(ctx, key).Int()
		require.NoError(t, err, "%s missing on the replica right after Sync", key)
		require.Equal(t, i, got)
	}
}

// More replicas than exist, or a replica that stopped answering: Sync fails
// with ErrNotReplicated after the timeout, and succeeds again once the
// replica is back.
func TestSyncFailsWithoutEnoughReplicas(t *testing.T) {
	p := startPair(t)
	ctx := context.Background()

	two, err := durable.New(p.mc, durable.Config{Replicas: 2, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	began := time.Now()
	err = two.Sync(ctx)
	require.ErrorIs(t, err, durable.ErrNotReplicated)
	require.Contains(t, err.Error(), " of 2 on ") // 1 of 2 once the replica acknowledges; 0 if it was slow
	require.Less(t, time.Since(began), time.Second)

	one, err := durable.New(p.mc, durable.Config{Replicas: 1, Timeout: 150 * time.Millisecond})
	require.NoError(t, err)
	resume := p.replica.Pause()
	err = one.Sync(ctx)
	resume()
	require.ErrorIs(t, err, durable.ErrNotReplicated)
	require.Eventually(t, func() bool { return one.Sync(ctx) == nil }, 5*time.Second, 20*time.Millisecond)
}

// Callers share rounds: 400 concurrent Syncs take far fewer INCR+WAIT
// rounds than callers, and each returns only after a round that began after
// it called.
func TestSyncGroupsConcurrentCallers(t *testing.T) {
	p := startPair(t)
	ctx := context.Background()
	b, err := durable.New(p.mc, durable.Config{Replicas: 1, KeyPrefix: "g:"})
	require.NoError(t, err)

	const callers = 400
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "w" + strconv.Itoa(i)
			if err := p.mc.Set(ctx, key, i, 0).Err(); err != nil {
				errs <- err
				return
			}
			if err := b.Sync(ctx); err != nil {
				errs <- err
				return
			}
			if v, err := p.rc.Get(ctx, key).Int(); err != nil || v != i {
				errs <- fmt.Errorf("%s on the replica after Sync: %d, %w", key, v, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rounds, err := p.mc.Get(ctx, "g:{0}").Int()
	require.NoError(t, err)
	t.Logf("%d callers, %d rounds", callers, rounds)
	require.Less(t, rounds, callers/2, "callers did not share rounds")
}

// A caller's context ends its wait (the round goes on for the others).
func TestSyncHonoursContext(t *testing.T) {
	p := startPair(t)
	b, err := durable.New(p.mc, durable.Config{Replicas: 2, Timeout: 2 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	err = b.Sync(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(began), time.Second)
}

func TestConfigValidation(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	_, err := durable.New(c, durable.Config{})
	require.Error(t, err)
	_, err = durable.New(c, durable.Config{Replicas: 1, Timeout: time.Microsecond})
	require.Error(t, err)
	_, err = durable.New(c, durable.Config{Replicas: 1})
	require.NoError(t, err)
}

// On a Cluster every master's replicas are waited for, each with a marker
// key on that master.
func TestSyncOnClusterWithReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster")
	}
	cl := rediscluster.StartWithReplicas(t, 1)
	ctx := context.Background()
	b, err := durable.New(cl.Client(), durable.Config{Replicas: 1, Timeout: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, b.Sync(ctx))

	var masters atomic.Int32
	require.NoError(t, cl.Client().ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "flowgate:durable:*").Result()
		if err != nil {
			return err
		}
		if len(keys) != 1 {
			return fmt.Errorf("master %s holds marker keys %v, want one", m.Options().Addr, keys)
		}
		masters.Add(1)
		return nil
	}))
	require.Equal(t, int32(3), masters.Load())

	two, err := durable.New(cl.Client(), durable.Config{Replicas: 2, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	err = two.Sync(ctx)
	require.True(t, errors.Is(err, durable.ErrNotReplicated), "err = %v", err)
}

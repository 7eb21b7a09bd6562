package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/test/rediscluster"
)

const testShards = 6

// shardedRedis is one Redis (a 3-master cluster or a plain server) that the
// sharded tests share one after the other, flushed between them: Asynq's
// queue keys have no prefix, so two buffers at once would share them.
type shardedRedis struct {
	rdb     redis.UniversalClient
	opt     asynq.RedisConnOpt
	cluster *rediscluster.Cluster // nil: plain
}

func (r *shardedRedis) flush(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if c, ok := r.rdb.(*redis.ClusterClient); ok {
		require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FlushAll(ctx).Err() }))
		return
	}
	require.NoError(t, r.rdb.FlushAll(ctx).Err())
}

// buffer builds a stopped buffer of testShards shards on r; mod adjusts
// the config.
func (r *shardedRedis) buffer(t *testing.T, mod func(*buffer.Config)) (*buffer.Buffer, buffer.Config) {
	t.Helper()
	cfg := buffer.Config{
		ConnOpt: r.opt, Redis: r.rdb, Shards: testShards, Servers: 1, Concurrency: 5, ShutdownTimeout: 2 * time.Second,
		DelayedCheck: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond, DepthRefresh: time.Millisecond,
		Backoff: buffer.Backoff{Base: 50 * time.Millisecond, Multiplier: 2, Max: 200 * time.Millisecond},
		Logger:  quiet(), Registerer: prometheus.NewRegistry(),
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := buffer.New(cfg)
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	return b, cfg
}

// started is buffer, with handlers hs registered and started.
func (r *shardedRedis) started(t *testing.T, mod func(*buffer.Config), hs ...buffer.Handler) *buffer.Buffer {
	t.Helper()
	b, _ := r.buffer(t, mod)
	for _, h := range hs {
		require.NoError(t, b.Register(h))
	}
	require.NoError(t, b.Start())
	return b
}

func (r *shardedRedis) pause(t *testing.T, q string) {
	t.Helper()
	require.NoError(t, asynq.NewInspectorFromRedisClient(r.rdb).PauseQueue(q))
}

// counters reads every shard's depth counter and its limit.
func (r *shardedRedis) counters(t *testing.T, b *buffer.Buffer) (vals, limits []int64) {
	t.Helper()
	for i := range testShards {
		k, lim := b.ShardDepth(i)
		v, err := r.rdb.Get(context.Background(), k).Int64()
		if errors.Is(err, redis.Nil) {
			v, err = 0, nil
		}
		require.NoError(t, err)
		vals, limits = append(vals, v), append(limits, lim)
	}
	return vals, limits
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// keyIn finds a key with prefix that falls in shard i.
func keyIn(b *buffer.Buffer, prefix string, i int) string {
	for n := 0; ; n++ {
		if k := prefix + strconv.Itoa(n); b.ShardOf(k) == i {
			return k
		}
	}
}

// keyNotIn finds a key with prefix that does not fall in shard i.
func keyNotIn(b *buffer.Buffer, prefix string, i int) string {
	for n := 0; ; n++ {
		if k := prefix + strconv.Itoa(n); b.ShardOf(k) != i {
			return k
		}
	}
}

func idle() buffer.Func {
	return fn("email", func(context.Context, *buffer.Message) (any, error) { return "done", nil })
}

// The buffer with 6 shards, on a 3-master Redis Cluster (each shard's
// scripts on the master owning its tag) and on one plain Redis.
func TestShardedBuffer(t *testing.T) {
	backends := map[string]func(t *testing.T) *shardedRedis{
		"cluster": func(t *testing.T) *shardedRedis {
			c := rediscluster.Start(t)
			return &shardedRedis{rdb: c.Client(), opt: c.AsynqOpt(), cluster: c}
		},
		"plain": func(t *testing.T) *shardedRedis {
			s := rediscluster.StartServer(t)
			rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			return &shardedRedis{rdb: rdb, opt: asynq.RedisClientOpt{Addr: s.Addr()}}
		},
	}
	for _, name := range []string{"cluster", "plain"} {
		t.Run(name, func(t *testing.T) {
			r := backends[name](t)
			for _, c := range shardedCases {
				r.flush(t)
				t.Run(c.name, func(t *testing.T) { c.run(t, r) })
			}
		})
	}
}

var shardedCases = []struct {
	name string
	run  func(t *testing.T, r *shardedRedis)
}{
	{"EnqueueProcessComplete", shardedComplete},
	{"IdempotencyExact", shardedIdempotency},
	{"MessageIDUniqueAcrossShards", shardedMessageID},
	{"SplitClaimUndoneAndResumed", shardedSplitClaim},
	{"DepthLimitNeverExceeded", shardedDepthLimit},
	{"BatchSpreadsItsPlaces", shardedBatch},
	{"DepthReconcilePerShard", shardedReconcile},
	{"DeadLettersAndListing", shardedDLQ},
	{"StateOnEveryMaster", shardedMasters},
}

// Messages without a key, with a key, with an own id, and with both in
// different shards are processed and completed; every shard's counter
// ends at 0 once they left and the credit is given back.
func shardedComplete(t *testing.T, r *shardedRedis) {
	b := r.started(t, nil, idle())
	var ids []string
	for i := range 12 {
		ids = append(ids, enq(t, b, "email", `{}`).MessageID)
		ids = append(ids, enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) { q.IdempotencyKey = "k-" + strconv.Itoa(i) }).MessageID)
		ids = append(ids, enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) { q.MessageID = "own-" + strconv.Itoa(i) }).MessageID)
	}
	key := keyIn(b, "both-", 1)
	both := enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) {
		q.IdempotencyKey, q.MessageID = key, keyNotIn(b, "both-id-", 1)
	})
	ids = append(ids, both.MessageID)
	for _, id := range ids {
		m := waitState(t, b, id, contracts.BufferCompleted)
		require.JSONEq(t, `"done"`, string(m.Result))
	}
	b.Stop() // gives back the credit
	require.Eventually(t, func() bool { v, _ := r.counters(t, b); return sum(v) == 0 }, 5*time.Second, 20*time.Millisecond)
	v, _ := r.counters(t, b)
	require.Equal(t, make([]int64, testShards), v, "every shard's finished messages left its own counter")
}

// Concurrent enqueues of one key on two instances are one message, with
// or without client-chosen messageIds (each id in its own shard).
func shardedIdempotency(t *testing.T, r *shardedRedis) {
	a := r.started(t, nil, idle())
	c := r.started(t, nil, idle())
	r.pause(t, "buffer.default")
	for _, withIDs := range []bool{false, true} {
		key := fmt.Sprintf("idem-%v", withIDs)
		var ok atomic.Int32
		var first sync.Map
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: key}
				if withIDs {
					req.MessageID = key + "-id-" + strconv.Itoa(i)
				}
				e, err := []*buffer.Buffer{a, c}[i%2].Enqueue(context.Background(), req)
				if err == nil {
					ok.Add(1)
					first.Store("id", e.MessageID)
					return
				}
				if code(err) != contracts.CodeDuplicateMessage {
					t.Errorf("enqueue %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, ok.Load(), "one enqueue of key %s accepted", key)
		id, _ := first.Load("id")
		_, err := a.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: key})
		require.Equal(t, contracts.CodeDuplicateMessage, code(err))
		require.Equal(t, id, details(t, err)["messageId"], "the 409 names the one message")
	}
	n, err := r.rdb.LLen(context.Background(), "asynq:{buffer.default}:pending").Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "one task per key")
}

// One messageId enqueued at once with different keys (each key in
// another shard than the id) and priorities is one message.
func shardedMessageID(t *testing.T, r *shardedRedis) {
	block := make(chan struct{})
	defer close(block)
	b := r.started(t, nil, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	const id = "the-one"
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := contracts.BufferPriority(i % 4)
			req := contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), MessageID: id, Priority: &p}
			if i%3 != 0 { // some with a key in another shard than the id, some without
				req.IdempotencyKey = keyNotIn(b, "mid-"+strconv.Itoa(i)+"-", b.ShardOf(id))
			}
			_, err := b.Enqueue(context.Background(), req)
			if err == nil {
				ok.Add(1)
			} else if code(err) != contracts.CodeDuplicateMessage {
				t.Errorf("enqueue %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, ok.Load(), "one enqueue of the messageId accepted")
	n := 0
	for _, q := range buffer.Queues() {
		if _, err := b.Runtime().Inspector.GetTaskInfo(q, id); err == nil {
			n++
		}
	}
	require.Equal(t, 1, n, "one task across the queues")
}

// A message whose key and id fall in different shards: when its key is
// refused the id claim taken first is dropped again; a leftover id claim
// (a crash between the two steps) is resumed by the retry.
func shardedSplitClaim(t *testing.T, r *shardedRedis) {
	b := r.started(t, nil, idle())
	r.pause(t, "buffer.default")
	ctx := context.Background()
	key := keyIn(b, "split-", 2)
	orig := enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) { q.IdempotencyKey = key })
	id := keyNotIn(b, "split-id-", 2)
	_, err := b.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: key, MessageID: id})
	require.Equal(t, contracts.CodeDuplicateMessage, code(err))
	require.Equal(t, orig.MessageID, details(t, err)["messageId"])
	idClaim := "flowgate:buffer:" + b.ShardTag(b.ShardOf(id)) + ":id:" + id
	require.Zero(t, r.rdb.Exists(ctx, idClaim).Val(), "the id claim of the refused enqueue is dropped")

	// The crash window: an id claim naming a message whose task is missing.
	left := keyNotIn(b, "left-id-", 3)
	leftClaim := "flowgate:buffer:" + b.ShardTag(b.ShardOf(left)) + ":id:" + left
	require.NoError(t, r.rdb.Set(ctx, leftClaim, left+" buffer.default "+strconv.FormatInt(time.Now().UnixMilli(), 10), time.Hour).Err())
	e, err := b.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), IdempotencyKey: keyIn(b, "left-", 3), MessageID: left})
	require.NoError(t, err, "the retry resumes its own leftover id claim")
	require.Equal(t, left, e.MessageID)
}

// The maximum holds over the shards: keyed enqueues are refused with
// QUEUE_FULL at their shard's share, never above; enqueues without a key
// then fill every shard exactly to the maximum, from two instances.
func shardedDepthLimit(t *testing.T, r *shardedRedis) {
	const max = 24
	slow := func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh, c.DepthReconcile = max, time.Hour, time.Hour }
	a := r.started(t, slow, idle())
	c := r.started(t, slow, idle())
	r.pause(t, "buffer.default")
	var ok, full atomic.Int32
	run := func(n int, keyed bool) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)}
				if keyed {
					req.IdempotencyKey = "lim-" + strconv.Itoa(i)
				}
				_, err := []*buffer.Buffer{a, c}[i%2].Enqueue(context.Background(), req)
				switch {
				case err == nil:
					ok.Add(1)
				case code(err) == contracts.CodeBufferQueueFull:
					full.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	run(60, true)
	require.LessOrEqual(t, ok.Load(), int32(max))
	require.Positive(t, full.Load(), "60 keys over 6 shards of 4 places each: some shard is full")
	vals, limits := r.counters(t, a)
	for i := range vals {
		require.LessOrEqual(t, vals[i], limits[i], "shard %d", i)
	}
	require.EqualValues(t, max, sum(limits))
	run(100, false)
	require.EqualValues(t, max, ok.Load(), "exactly the maximum admitted")
	n, err := r.rdb.LLen(context.Background(), "asynq:{buffer.default}:pending").Result()
	require.NoError(t, err)
	require.EqualValues(t, max, n)
	_, err = a.Enqueue(context.Background(), contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)})
	require.Equal(t, contracts.CodeBufferQueueFull, code(err), "429 as with one shard")
	require.EqualValues(t, 1, details(t, err)["retryAfterSeconds"])
}

// A batch's messages without a key take places in every shard, and a
// batch above the free places is refused as a whole.
func shardedBatch(t *testing.T, r *shardedRedis) {
	b := r.started(t, func(c *buffer.Config) { c.MaxQueueSize, c.DepthRefresh, c.DepthReconcile = 60, time.Hour, time.Hour }, idle())
	r.pause(t, "buffer.default")
	reqs := make([]contracts.BufferEnqueueRequest, 50)
	for i := range reqs {
		reqs[i] = contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`)}
	}
	_, errs, err := b.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
	vals, _ := r.counters(t, b)
	for i, v := range vals {
		require.GreaterOrEqual(t, v, int64(8), "shard %d holds its part of the batch", i)
	}
	_, _, err = b.EnqueueBatch(context.Background(), reqs[:20])
	require.Equal(t, contracts.CodeBufferQueueFull, code(err))
	after, _ := r.counters(t, b)
	require.Equal(t, vals, after, "the refused batch gave back what it took")
}

// The reconcile re-sets every shard's counter from Asynq's queues: the
// figure split over the shards, plus the credit; the sum is the queues'.
func shardedReconcile(t *testing.T, r *shardedRedis) {
	b := r.started(t, func(c *buffer.Config) { c.DepthRefresh, c.DepthReconcile = time.Hour, time.Hour }, idle())
	r.pause(t, "buffer.default")
	ctx := context.Background()
	for i := range 30 {
		enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) { q.IdempotencyKey = "rc-" + strconv.Itoa(i) })
	}
	for i := range testShards { // drift: a crash's leaks and losses
		k, _ := b.ShardDepth(i)
		require.NoError(t, r.rdb.Set(ctx, k, 100*(i%2), 0).Err())
	}
	require.NoError(t, b.ResyncDepth(ctx))
	vals, limits := r.counters(t, b)
	require.EqualValues(t, 30, sum(vals), "the queues' figure, no credit held")
	for i, v := range vals {
		require.EqualValues(t, 5, v, "shard %d: its share of the figure", i)
		require.LessOrEqual(t, v, limits[i])
	}
	st, err := b.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 30, st.Depth)
}

// Dead letters: counted in shard 0's alert counter, listed, replayed
// back into their shard's counter; pending messages are listed across
// the shards.
func shardedDLQ(t *testing.T, r *shardedRedis) {
	var alerts atomic.Int32
	b := r.started(t, func(c *buffer.Config) {
		c.DLQAlertThreshold = 2
		c.Alerter = buffer.AlerterFunc(func(context.Context, int64, int64) error { alerts.Add(1); return nil })
	}, fn("bad", func(context.Context, *buffer.Message) (any, error) { return nil, &buffer.StatusError{StatusCode: 400} }), idle())
	ctx := context.Background()
	var dead []string
	for i := range 3 {
		dead = append(dead, enq(t, b, "bad", `{}`, func(q *contracts.BufferEnqueueRequest) { q.IdempotencyKey = "dead-" + strconv.Itoa(i) }).MessageID)
	}
	for _, id := range dead {
		waitState(t, b, id, contracts.BufferDLQ)
	}
	require.Eventually(t, func() bool { return alerts.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "one alert per crossing")
	cnt, err := r.rdb.Get(ctx, "flowgate:buffer:"+b.ShardTag(0)+":dlqcount").Int64()
	require.NoError(t, err)
	require.EqualValues(t, 3, cnt)
	list, err := b.DLQList(ctx, 10, "")
	require.NoError(t, err)
	require.Len(t, list.Items, 3)

	r.pause(t, "buffer.high")
	r.pause(t, "buffer.default") // the replayed message stays pending
	sh := b.ShardOf("dead-0")
	k, _ := b.ShardDepth(sh)
	require.NoError(t, b.FlushDepth(ctx))
	before, _ := r.rdb.Get(ctx, k).Int64()
	require.NoError(t, b.Replay(ctx, dead[0]))
	after, _ := r.rdb.Get(ctx, k).Int64()
	require.Equal(t, before+1, after, "the replay takes a place in the message's own shard")

	high := contracts.BufferPriorityHigh
	for i := range 7 {
		enq(t, b, "email", `{}`, pri(high), func(q *contracts.BufferEnqueueRequest) { q.MessageID = "listed-" + strconv.Itoa(i) })
	}
	page, err := b.List(ctx, buffer.ListQuery{State: buffer.ListPending, Priority: &high, Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Items, 5)
	rest, err := b.List(ctx, buffer.ListQuery{State: buffer.ListPending, Priority: &high, Limit: 5, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, rest.Items, 2)
	all, err := b.List(ctx, buffer.ListQuery{State: buffer.ListPending, Limit: 50})
	require.NoError(t, err)
	require.Len(t, all.Items, 8, "the 7 listed plus the replayed dead letter")
}

// Every master holds buffer state of at least one shard (cluster only):
// the admission scripts run on all three.
func shardedMasters(t *testing.T, r *shardedRedis) {
	if r.cluster == nil {
		t.Skip("plain Redis: one server")
	}
	b := r.started(t, nil, idle()) // Start's reconcile writes every shard's counter
	for i := range testShards {
		enq(t, b, "email", `{}`, func(q *contracts.BufferEnqueueRequest) { q.IdempotencyKey = keyIn(b, "m-", i) })
	}
	ctx := context.Background()
	holds := map[string][]int{}
	for i := range testShards {
		per, err := r.cluster.KeysOnMaster(ctx, "flowgate:buffer:"+b.ShardTag(i)+":*")
		require.NoError(t, err)
		for addr, n := range per {
			if n > 0 {
				holds[addr] = append(holds[addr], i)
			}
		}
	}
	t.Logf("shards per master: %v", holds)
	require.Len(t, holds, 3, "every master holds state of some shard")
	for addr, shards := range holds {
		require.Len(t, shards, 2, "6 shards on 3 masters: two each (%s)", addr)
	}
}

// Shards is 1..shard.MaxShards (0: 1), and each shard needs a place.
func TestShardsConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, c := range []struct {
		shards int
		max    int64
		ok     bool
	}{{0, 0, true}, {1, 1, true}, {6, 6, true}, {256, 1000, true}, {257, 1000, false}, {-1, 0, false}, {6, 5, false}} {
		b, err := buffer.New(buffer.Config{ConnOpt: asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, Redis: rdb, Shards: c.shards,
			MaxQueueSize: c.max, Logger: quiet()})
		if c.ok {
			require.NoError(t, err, "%+v", c)
			b.Stop()
		} else {
			require.Error(t, err, "%+v", c)
		}
	}
}

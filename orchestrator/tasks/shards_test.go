package tasks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// testShards is the shard count of the sharded tests: two per master of
// a three-master cluster.
const testShards = 6

// shardedCases are the tests a sharded ledger must pass, on a plain Redis
// and on Redis Cluster alike.
var shardedCases = []struct {
	name string
	run  func(t *testing.T, b *bundle)
}{
	{"Lifecycle", shardedLifecycle},
	{"OneOpenPerEncounter", shardedOneOpen},
	{"ClaimPriorityAcrossShards", shardedClaimPriority},
	{"ClaimFillsFromSeveralShards", shardedClaimFills},
	{"CancelClaimEveryShard", shardedCancelClaim},
	{"Locator", shardedLocator},
	{"LocatorStale", shardedLocatorStale},
	{"BatchAcrossShards", shardedBatch},
	{"SweepsEveryShard", shardedSweeps},
	{"ListAndStats", shardedListStats},
	{"Import", shardedImport},
}

// TestShardedOnPlainRedis runs the sharded cases with Shards=6 on one
// plain Redis: sharding must work there too.
func TestShardedOnPlainRedis(t *testing.T) {
	t.Parallel()
	for _, c := range shardedCases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, setupOn(t, redistest.New(t).Client, sharded("test")))
		})
	}
}

// TestShardedOnRedisCluster runs the sharded cases with Shards=6 on a
// three-master cluster, each under its own prefix, and checks that every
// master holds ledger keys.
func TestShardedOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	for i, tc := range shardedCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, setupOn(t, c.Client(), sharded(fmt.Sprintf("c%d", i))))
		})
	}
	t.Run("EveryMasterHoldsShards", func(t *testing.T) {
		b := setupOn(t, c.Client(), sharded("flowgate"))
		for sh := range testShards {
			b.create(t, encIn(t, b, sh, "m"), contracts.PriorityNormal)
		}
		per, err := c.KeysOnMaster(b.ctx, "flowgate:{tasks:*")
		require.NoError(t, err)
		require.Len(t, per, 3)
		for addr, n := range per {
			require.Positive(t, n, "master %s holds no ledger key: %v", addr, per)
		}
	})
}

func sharded(prefix string) func(*tasks.Config) {
	return func(c *tasks.Config) { c.Shards, c.KeyPrefix = testShards, prefix }
}

// encIn is an encounter id whose home is shard sh.
func encIn(t testing.TB, b *bundle, sh int, tag string) string {
	t.Helper()
	for i := 0; ; i++ {
		if e := fmt.Sprintf("enc-%s-%d", tag, i); b.l.ShardOf(e) == sh {
			return e
		}
	}
}

// idNotIn is a queue_id whose own shard is not sh.
func idNotIn(b *bundle, sh int) string {
	for {
		if id := uuid.NewString(); b.l.ShardOf(id) != sh {
			return id
		}
	}
}

func shardedLifecycle(t *testing.T, b *bundle) {
	for sh := range testShards {
		enc := encIn(t, b, sh, "life")
		res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: enc, MaxAttempts: 2, Payload: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		id := res.Task.QueueID
		require.Equal(t, sh, b.l.ShardOf(id), "a generated id is drawn into its home shard")
		got := b.claimOne(t, "w1")
		require.Equal(t, id, got.QueueID)
		f, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, EncounterID: enc, WorkerID: "w1", ErrorMessage: "boom"})
		require.NoError(t, err)
		require.True(t, f.Retry)
		_, err = b.l.Requeue(b.ctx, id, contracts.RequeueRequest{})
		require.NoError(t, err)
		got = b.claimOne(t, "w2")
		require.Equal(t, contracts.PriorityHigh, got.Priority)
		f, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: id, WorkerID: "w2", ErrorMessage: "boom again"})
		require.NoError(t, err)
		require.True(t, f.DLQ)
		dlq, err := b.l.List(b.ctx, contracts.ListQuery{DLQ: true})
		require.NoError(t, err)
		require.Len(t, dlq.Tasks, 1)
		_, err = b.l.Replay(b.ctx, id, contracts.RequeueRequest{})
		require.NoError(t, err)
		b.claimOne(t, "w3")
		ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, EncounterID: enc, WorkerID: "w3"})
		require.NoError(t, err)
		require.Equal(t, contracts.StatusDone, ack.Task.Status)
		require.Len(t, b.get(t, id).History, 9)
	}
}

func shardedOneOpen(t *testing.T, b *bundle) {
	const n = 24
	enc := "enc-race"
	var wg sync.WaitGroup
	results := make([]contracts.CreateResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := contracts.CreateTaskRequest{EncounterID: enc, Payload: json.RawMessage(`{}`)}
			if i%2 == 1 { // half with a client-given id, often in another shard than the encounter's
				req.QueueID = uuid.NewString()
			}
			results[i], errs[i] = b.l.Create(b.ctx, req)
		}()
	}
	wg.Wait()
	fresh, open := 0, ""
	for i := range n {
		require.NoError(t, errs[i])
		if !results[i].Duplicate {
			fresh++
			open = results[i].Task.QueueID
		}
	}
	require.Equal(t, 1, fresh)
	for i := range n {
		require.Equal(t, open, results[i].Task.QueueID)
	}
	page, err := b.l.List(b.ctx, contracts.ListQuery{EncounterID: enc})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1)
}

func shardedClaimPriority(t *testing.T, b *bundle) {
	normal := b.create(t, encIn(t, b, 1, "prio"), contracts.PriorityNormal)
	b.clock.Advance(time.Second)
	low := b.create(t, encIn(t, b, 2, "prio"), contracts.PriorityLow)
	b.clock.Advance(time.Second)
	high := b.create(t, encIn(t, b, 4, "prio"), contracts.PriorityHigh)
	require.Equal(t, high.QueueID, b.claimOne(t, "w").QueueID)
	require.Equal(t, normal.QueueID, b.claimOne(t, "w").QueueID)
	require.Equal(t, low.QueueID, b.claimOne(t, "w").QueueID)
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w"})
	require.NoError(t, err)
	require.Empty(t, got)
}

func shardedClaimFills(t *testing.T, b *bundle) {
	// Shard 0 holds one HIGH and two NORMAL; shard 3 two HIGH: a claim of
	// four takes the three HIGH first, then one NORMAL.
	want := map[contracts.Priority]int{}
	b.create(t, encIn(t, b, 0, "fa"), contracts.PriorityHigh)
	for i := range 2 {
		b.create(t, encIn(t, b, 0, fmt.Sprint("fb", i)), contracts.PriorityNormal)
		b.create(t, encIn(t, b, 3, fmt.Sprint("fc", i)), contracts.PriorityHigh)
	}
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 4})
	require.NoError(t, err)
	require.Len(t, got, 4)
	for _, task := range got {
		want[task.Priority]++
	}
	require.Equal(t, map[contracts.Priority]int{contracts.PriorityHigh: 3, contracts.PriorityNormal: 1}, want)
	require.Equal(t, contracts.PriorityNormal, got[3].Priority, "HIGH tasks come first")
	rest, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rest, 1)
}

func shardedCancelClaim(t *testing.T, b *bundle) {
	for sh := range 3 {
		b.create(t, encIn(t, b, sh*2, "cc"), contracts.PriorityNormal)
	}
	token := uuid.NewString()
	got, err := b.l.ClaimWithToken(b.ctx, "w", 5, token)
	require.NoError(t, err)
	require.Len(t, got, 3)
	res, err := b.l.CancelClaim(b.ctx, token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{Released: 3}, res)
	late, err := b.l.ClaimWithToken(b.ctx, "w", 5, token)
	require.NoError(t, err)
	require.Empty(t, late, "a cancelled token claims nothing in any shard")
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 3, st.ByStatus[contracts.StatusPending])
}

func shardedLocator(t *testing.T, b *bundle) {
	enc := encIn(t, b, 2, "loc")
	id := idNotIn(b, 2)
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: enc, Payload: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	locKey := b.l.ShardBase(b.l.ShardOf(id)) + "loc:" + id
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, locKey).Val(), "the locator is in the shard of the id")
	require.EqualValues(t, 1, b.rdb.Exists(b.ctx, b.l.ShardBase(2)+"t:"+id).Val(), "the task is in its encounter's shard")

	require.Equal(t, enc, b.get(t, id).EncounterID)
	again, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: enc, Payload: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	require.True(t, again.Duplicate)

	// The same queue_id for an encounter of another shard (and of the id's
	// own shard) is a reused queue_id.
	for _, other := range []string{encIn(t, b, (2+1)%testShards, "loc2"), encIn(t, b, b.l.ShardOf(id), "loc3")} {
		_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: other, Payload: json.RawMessage(`{"x":1}`)})
		e := conflictError(t, err, id, contracts.StatusPending)
		require.Equal(t, "queue_id_reused", e.Details["reason"])
	}

	b.claimOne(t, "w")
	_, err = b.l.Heartbeat(b.ctx, id, contracts.HeartbeatRequest{WorkerID: "w"})
	require.NoError(t, err)
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, EncounterID: "enc-wrong", WorkerID: "w"})
	e := codeError(t, err, contracts.CodeInvalid)
	require.Equal(t, "encounter_id", e.Details["field"], "a mismatched encounter is still a mismatch, not not-found")
	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id, WorkerID: "w"})
	require.NoError(t, err, "an ACK without encounter_id finds the task by its locator")
	require.Equal(t, contracts.StatusDone, ack.Task.Status)
	page, err := b.l.List(b.ctx, contracts.ListQuery{QueueID: id})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1)

	b.clock.Advance(time.Hour)
	purged, err := b.l.PurgeDone(b.ctx, b.clock.Now(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{id}, purged.Purged)
	require.EqualValues(t, 0, b.rdb.Exists(b.ctx, locKey).Val(), "the purge deletes the locator")
	_, err = b.l.Get(b.ctx, id)
	requireCode(t, err, contracts.CodeNotFound)
	// Now free for another encounter.
	_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: encIn(t, b, 5, "loc4"), Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
}

// A locator left by a create that died before its task was written reads
// as not found; it holds the id for a while against a create for another
// home, then gives way.
func shardedLocatorStale(t *testing.T, b *bundle) {
	id := idNotIn(b, 1)
	own := b.l.ShardOf(id)
	locKey := b.l.ShardBase(own) + "loc:" + id
	require.NoError(t, b.rdb.Set(b.ctx, locKey, fmt.Sprintf("1:%d", b.clock.Now().UnixMilli()), 0).Err())
	_, err := b.l.Get(b.ctx, id)
	requireCode(t, err, contracts.CodeNotFound)
	_, err = b.l.Ack(b.ctx, contracts.AckRequest{QueueID: id})
	requireCode(t, err, contracts.CodeNotFound)

	other := encIn(t, b, (1+1)%testShards, "stale")
	if b.l.ShardOf(id) == (1+1)%testShards {
		other = encIn(t, b, (1+2)%testShards, "stale")
	}
	_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: other, Payload: json.RawMessage(`{}`)})
	requireCode(t, err, contracts.CodeConflict)
	// With no encounter the id's own shard is the home: refused too.
	_, err = b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, Payload: json.RawMessage(`{}`)})
	requireCode(t, err, contracts.CodeConflict)

	b.clock.Advance(tasks.ClaimTokenTTL + time.Minute)
	res, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{QueueID: id, Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.EqualValues(t, 0, b.rdb.Exists(b.ctx, locKey).Val(), "the stale locator is gone")
	require.Equal(t, id, b.get(t, id).QueueID)
}

func shardedBatch(t *testing.T, b *bundle) {
	reqs := make([]contracts.CreateTaskRequest, 30)
	for i := range reqs {
		reqs[i] = contracts.CreateTaskRequest{EncounterID: fmt.Sprint("batch-", i), Payload: json.RawMessage(`{}`)}
		if i%3 == 0 {
			reqs[i].QueueID = uuid.NewString()
		}
	}
	res, err := b.l.CreateBatch(b.ctx, reqs)
	require.NoError(t, err)
	homes := map[int]bool{}
	for i, r := range res {
		require.False(t, r.Duplicate)
		require.Equal(t, reqs[i].EncounterID, r.Task.EncounterID, "results in request order")
		homes[b.l.ShardOf(r.Task.EncounterID)] = true
	}
	require.Greater(t, len(homes), 3)
	again, err := b.l.CreateBatch(b.ctx, reqs)
	require.NoError(t, err)
	for i, r := range again {
		require.True(t, r.Duplicate)
		require.Equal(t, res[i].Task.QueueID, r.Task.QueueID)
	}

	// A reused queue_id in one shard refuses the batch before any shard is
	// written.
	bad := []contracts.CreateTaskRequest{
		{EncounterID: encIn(t, b, 0, "bx"), Payload: json.RawMessage(`{}`)},
		{EncounterID: encIn(t, b, 1, "bx"), Payload: json.RawMessage(`{}`)},
		{QueueID: res[0].Task.QueueID, EncounterID: "another", Payload: json.RawMessage(`{}`)},
	}
	_, err = b.l.CreateBatch(b.ctx, bad)
	requireCode(t, err, contracts.CodeConflict)
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 30, st.Total)
}

func shardedSweeps(t *testing.T, b *bundle) {
	for sh := range testShards {
		b.create(t, encIn(t, b, sh, "sw"), contracts.PriorityNormal)
		b.create(t, encIn(t, b, sh, "sw2"), contracts.PriorityLow)
	}
	b.clock.Advance(time.Hour)
	promoted, err := b.l.PromoteOverdue(b.ctx, b.clock.Now(), 30*time.Minute)
	require.NoError(t, err)
	require.Len(t, promoted.Promoted, 2*testShards)
	require.Zero(t, promoted.FailedShards)
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 2 * testShards})
	require.NoError(t, err)
	require.Len(t, got, 2*testShards)
	b.clock.Advance(time.Hour)
	rec, err := b.l.RecoverExpired(b.ctx, b.clock.Now(), 10*time.Minute, "")
	require.NoError(t, err)
	require.Len(t, rec.Recovered, 2*testShards)
	got, err = b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 2 * testShards})
	require.NoError(t, err)
	for _, task := range got {
		_, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, WorkerID: "w", ErrorMessage: "x"})
		require.NoError(t, err)
	}
	b.clock.Advance(time.Hour)
	retried, err := b.l.RetryOverdue(b.ctx, b.clock.Now(), 10*time.Minute)
	require.NoError(t, err)
	require.Len(t, retried.Requeued, 2*testShards)
	stale, err := b.l.RecoverStale(b.ctx, b.clock.Now(), time.Minute, "")
	require.NoError(t, err)
	require.Empty(t, stale.Recovered)
	_, ok, err := b.l.OldestActivity(b.ctx)
	require.NoError(t, err)
	require.False(t, ok)
}

func shardedListStats(t *testing.T, b *bundle) {
	const n = 25
	ids := map[string]bool{}
	for i := range n {
		task := b.create(t, fmt.Sprint("ls-", i), []contracts.Priority{contracts.PriorityHigh, contracts.PriorityNormal}[i%2])
		ids[task.QueueID] = true
		b.clock.Advance(time.Millisecond)
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		page, err := b.l.List(b.ctx, contracts.ListQuery{Limit: 7, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Tasks), 7)
		for _, task := range page.Tasks {
			require.False(t, seen[task.QueueID], "listed twice")
			seen[task.QueueID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, ids, seen)
	high, err := b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusPending, Priority: contracts.PriorityHigh, Limit: 100})
	require.NoError(t, err)
	require.Len(t, high.Tasks, 13)
	_, err = b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusDone, Cursor: cursorOf(t, b)})
	requireCode(t, err, contracts.CodeInvalid)
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, n, st.Total)
	require.Equal(t, 13, st.PendingByPriority[contracts.PriorityHigh])
	require.Equal(t, 12, st.PendingByPriority[contracts.PriorityNormal])
	enc, err := b.l.List(b.ctx, contracts.ListQuery{EncounterID: "ls-3"})
	require.NoError(t, err)
	require.Len(t, enc.Tasks, 1)
}

// cursorOf is a cursor of the unfiltered listing.
func cursorOf(t *testing.T, b *bundle) string {
	page, err := b.l.List(b.ctx, contracts.ListQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.NextCursor)
	return page.NextCursor
}

func shardedImport(t *testing.T, b *bundle) {
	in := make([]tasks.ImportTask, 12)
	for i := range in {
		in[i] = tasks.ImportTask{QueueID: uuid.NewString(), EncounterID: fmt.Sprint("imp-", i), Status: contracts.StatusPending,
			Payload: json.RawMessage(`{}`)}
	}
	res, err := b.l.NewImporter("test", false).Import(b.ctx, in)
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, tasks.ImportImported, r.Outcome, r.Reason)
	}
	again, err := b.l.NewImporter("test", false).Import(b.ctx, in)
	require.NoError(t, err)
	for _, r := range again {
		require.Equal(t, tasks.ImportUnchanged, r.Outcome, r.Reason)
	}
	moved := in[0]
	moved.EncounterID = encIn(t, b, (b.l.ShardOf(in[0].EncounterID)+1)%testShards, "impx")
	conf, err := b.l.NewImporter("test", false).Import(b.ctx, []tasks.ImportTask{moved})
	require.NoError(t, err)
	require.Equal(t, tasks.ImportConflict, conf[0].Outcome)
	require.True(t, strings.Contains(conf[0].Reason, "different content"), conf[0].Reason)
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "w", Limit: 50})
	require.NoError(t, err)
	require.Len(t, got, 12)
}

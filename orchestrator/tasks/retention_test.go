package tasks_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// done makes a new task of encounter enc DONE (claim, ACK) at the clock's now.
func (b *bundle) done(t *testing.T, enc string) contracts.Task {
	t.Helper()
	task := b.create(t, enc, contracts.PriorityHigh)
	require.Equal(t, task.QueueID, b.claimOne(t, "vm-1").QueueID)
	ack, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: task.QueueID, ExperityActions: json.RawMessage(`{"ok":1}`)})
	require.NoError(t, err)
	return ack.Task
}

// requireGone asserts that nothing of task id is left: Get answers not
// found, and its hash, history and encounter set entry are deleted.
func (b *bundle) requireGone(t *testing.T, id, enc string) {
	t.Helper()
	_, err := b.l.Get(b.ctx, id)
	requireCode(t, err, contracts.CodeNotFound)
	base := b.l.KeyBase()
	n, err := b.rdb.Exists(b.ctx, base+"t:"+id, base+"h:"+id).Result()
	require.NoError(t, err)
	require.Zero(t, n, "hash and history deleted")
	_, err = b.rdb.ZScore(b.ctx, base+"enc:"+enc, id).Result()
	require.ErrorIs(t, err, redis.Nil, "out of its encounter's set")
}

func listIDs(t *testing.T, b *bundle, q contracts.ListQuery) []string {
	t.Helper()
	q.Limit = contracts.MaxListLimit
	page, err := b.l.List(b.ctx, q)
	require.NoError(t, err)
	ids := []string{}
	for _, task := range page.Tasks {
		ids = append(ids, task.QueueID)
	}
	return ids
}

// PurgeDone deletes DONE tasks older than the threshold, in batches, and
// nothing else: younger DONE tasks, open tasks and dead letters stay, even
// old ones. A second run finds nothing to do.
func TestPurgeDone(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.SweepBatch = 3 })
	const week = 7 * 24 * time.Hour

	// Old: 8 DONE tasks (batches of 3), one of them an encounter that has a
	// newer open task; and an old task of every other kind.
	var old []contracts.Task
	for i := range 8 {
		old = append(old, b.done(t, fmt.Sprintf("enc-old-%d", i)))
		b.clock.Advance(time.Minute)
	}
	reopened := b.create(t, "enc-old-0", contracts.PriorityLow) // the encounter's next task, PENDING
	oldPending := b.create(t, "enc-pending", contracts.PriorityLow)
	dead, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-dead", Priority: contracts.PriorityHigh, MaxAttempts: 1})
	require.NoError(t, err)
	b.claimOne(t, "vm-1")
	fail, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: dead.Task.QueueID, ErrorMessage: "x"})
	require.NoError(t, err)
	require.True(t, fail.DLQ)
	errored := b.create(t, "enc-error", contracts.PriorityHigh)
	b.claimOne(t, "vm-1")
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: errored.QueueID, ErrorMessage: "x"})
	require.NoError(t, err)
	processing := b.create(t, "enc-processing", contracts.PriorityHigh)
	b.claimOne(t, "vm-1")

	// Young: DONE exactly a week before the purge (not older than it).
	b.clock.Advance(24 * time.Hour)
	young := b.done(t, "enc-young")
	now := b.clock.Advance(week)

	before, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 9, before.ByStatus[contracts.StatusDone])

	res, err := b.l.PurgeDone(b.ctx, now, week)
	require.NoError(t, err)
	var want []string
	for _, task := range old {
		want = append(want, task.QueueID)
	}
	require.Equal(t, want, res.Purged, "oldest first")
	require.Equal(t, 3, res.Batches, "8 tasks in batches of 3: 3+3+2")
	for i, task := range old {
		b.requireGone(t, task.QueueID, fmt.Sprintf("enc-old-%d", i))
	}

	kept := []string{reopened.QueueID, oldPending.QueueID, dead.Task.QueueID, errored.QueueID, processing.QueueID, young.QueueID}
	for _, id := range kept {
		b.get(t, id)
	}
	require.ElementsMatch(t, kept, listIDs(t, b, contracts.ListQuery{}))
	require.Equal(t, []string{young.QueueID}, listIDs(t, b, contracts.ListQuery{Status: contracts.StatusDone}))
	require.Equal(t, []string{reopened.QueueID}, listIDs(t, b, contracts.ListQuery{EncounterID: "enc-old-0"}))
	require.Equal(t, []string{dead.Task.QueueID}, listIDs(t, b, contracts.ListQuery{DLQ: true}))
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[contracts.Status]int{"PENDING": 2, "PROCESSING": 1, "DONE": 1, "ERROR": 2}, st.ByStatus)
	require.Equal(t, 6, st.Total)
	require.Equal(t, 1, st.DLQ)

	// The encounter's open task is untouched: a create still answers it.
	dup, err := b.l.Create(b.ctx, contracts.CreateTaskRequest{EncounterID: "enc-old-0"})
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	require.Equal(t, reopened.QueueID, dup.Task.QueueID)

	again, err := b.l.PurgeDone(b.ctx, now, week)
	require.NoError(t, err)
	require.Empty(t, again.Purged, "idempotent")
	require.Equal(t, 1, again.Batches)

	// A millisecond later the young one is old enough too.
	res, err = b.l.PurgeDone(b.ctx, now.Add(time.Millisecond), week)
	require.NoError(t, err)
	require.Equal(t, []string{young.QueueID}, res.Purged)
	b.requireGone(t, young.QueueID, "enc-young")

	_, err = b.l.PurgeDone(b.ctx, now, -time.Second)
	requireCode(t, err, contracts.CodeInvalid)
}

// DONE tasks left by a flowgate without the retention index are indexed by
// the first PurgeDone, in batches, then purged like the others.
func TestPurgeDoneIndexesOlderDoneTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.SweepBatch = 2 })
	var old []string
	for i := range 5 {
		old = append(old, b.done(t, fmt.Sprintf("enc-%d", i)).QueueID)
	}
	b.clock.Advance(48 * time.Hour)
	recent := b.done(t, "enc-recent")
	require.NoError(t, b.l.ForgetDoneIndex(b.ctx))

	res, err := b.l.PurgeDone(b.ctx, b.clock.Now(), 24*time.Hour)
	require.NoError(t, err)
	require.ElementsMatch(t, old, res.Purged)
	b.get(t, recent.QueueID)
	// Later DONE tasks are indexed by their transition; the backfill is over.
	later := b.done(t, "enc-later")
	res, err = b.l.PurgeDone(b.ctx, b.clock.Advance(48*time.Hour), 24*time.Hour)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{recent.QueueID, later.QueueID}, res.Purged)
	require.Empty(t, listIDs(t, b, contracts.ListQuery{}))
}

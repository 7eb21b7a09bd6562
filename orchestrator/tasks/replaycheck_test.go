package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

const sig = "5efcfb0e19b7174486c81c4db79cf9dd374296b8943dc6fa7a1b5b8f148fda75"

// An ACK's or FAIL's ReplayCheck is made by its script: the key is set
// (2 × tolerance) before the transition, whatever it answers, and a call
// that finds it fails with ErrReplayed (401 replayed) and changes nothing.
// A route-bound signature's key lives in the task's shard; a global key is
// passed to the script on one shard.
func TestReplayCheckInScript(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, global, key string
	}{
		{"shard key", "", "test:{tasks}:replay:" + sig},
		{"global key", "webhook:replay:" + sig, "webhook:replay:" + sig},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			immediate := func(context.Context) error { t.Fatal("the check belongs in the script"); return nil }
			task := b.create(t, "enc-rc", contracts.PriorityNormal)
			b.claimOne(t, "vm-1")
			rc := &tasks.ReplayCheck{Sig: sig, Global: c.global, TTL: 10 * time.Minute, Immediate: immediate}
			res, err := b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
			require.NoError(t, err)
			require.True(t, rc.Made())
			require.Equal(t, contracts.StatusDone, res.Task.Status)
			ttl, err := b.rdb.PTTL(b.ctx, c.key).Result()
			require.NoError(t, err)
			require.Equal(t, 10*time.Minute, ttl.Round(time.Minute))

			before := b.get(t, task.QueueID)
			rc = &tasks.ReplayCheck{Sig: sig, Global: c.global, TTL: 10 * time.Minute, Immediate: immediate}
			_, err = b.l.FailChecked(b.ctx, contracts.FailRequest{QueueID: task.QueueID, ErrorMessage: "x"}, rc)
			require.ErrorIs(t, err, tasks.ErrReplayed)
			e := codeError(t, err, contracts.CodeUnauthorized)
			require.Equal(t, "replayed", e.Details["reason"])
			require.Equal(t, before, b.get(t, task.QueueID), "a replay changed the task")

			// A refusal of the script sets the key too.
			other := sig[:63] + "0"
			rc = &tasks.ReplayCheck{Sig: other, Global: strings.ReplaceAll(c.global, sig, other), TTL: time.Minute}
			_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: "00000000-0000-4000-8000-000000000000"}, rc)
			requireCode(t, err, contracts.CodeNotFound)
			require.True(t, rc.Made())
			rc = &tasks.ReplayCheck{Sig: other, Global: rc.Global, TTL: time.Minute}
			_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
			require.ErrorIs(t, err, tasks.ErrReplayed)

			// An invalid request never reaches the script: the check is not made.
			rc = &tasks.ReplayCheck{Sig: sig[:63] + "1", TTL: time.Minute}
			_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: "nope"}, rc)
			requireCode(t, err, contracts.CodeInvalid)
			require.False(t, rc.Made())
		})
	}
}

// With several shards (or on Redis Cluster) a global key has another slot
// than the task's: Immediate checks it before the script, and its error is
// the call's. A route-bound key rides in the script of the first shard the
// task is looked for in, once, even when the task is found in another.
func TestReplayCheckSeveralShards(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *tasks.Config) { c.Shards = 2 })
	task := b.create(t, "enc-shards", contracts.PriorityNormal)
	b.claimOne(t, "vm-1")
	calls := 0
	refusal := errors.New("replayed, says the guard")
	rc := &tasks.ReplayCheck{Sig: sig, Global: "webhook:replay:" + sig, TTL: time.Minute,
		Immediate: func(context.Context) error { calls++; return refusal }}
	_, err := b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
	require.ErrorIs(t, err, refusal)
	require.Equal(t, 1, calls)
	require.True(t, rc.Made())
	require.Equal(t, contracts.StatusProcessing, b.get(t, task.QueueID).Status)

	// A route-bound key: set once, in the shard first tried, and made
	// once per ReplayCheck.
	rc = &tasks.ReplayCheck{Sig: sig, TTL: time.Minute}
	_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
	require.NoError(t, err)
	keys, err := b.rdb.Keys(b.ctx, "test:*replay:"+sig).Result()
	require.NoError(t, err)
	require.Len(t, keys, 1, "%v", keys)
	_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
	require.NoError(t, err, "a check made once is not made again")
	rc = &tasks.ReplayCheck{Sig: sig, TTL: time.Minute}
	_, err = b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
	require.ErrorIs(t, err, tasks.ErrReplayed)
}

// The scripts run as EVALSHA where Redis has no FUNCTION (miniredis): the
// check is the same.
func TestReplayCheckEval(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	b := setupOn(t, rdb)
	task := b.create(t, "enc-eval", contracts.PriorityNormal)
	b.claimOne(t, "vm-1")
	for i, want := range []error{nil, tasks.ErrReplayed} {
		rc := &tasks.ReplayCheck{Sig: sig, TTL: time.Minute}
		_, err := b.l.AckBriefChecked(b.ctx, contracts.AckRequest{QueueID: task.QueueID}, rc)
		if want == nil {
			require.NoError(t, err, i)
		} else {
			require.ErrorIs(t, err, want, i)
		}
	}
	require.True(t, m.Exists("test:{tasks}:replay:"+sig))
}

package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
)

// lostReply is a go-redis hook that lets the claim script run in Redis and
// then reports a timeout, as when Redis hangs past the request's deadline
// and runs the queued script afterwards.
type lostReply struct{}

func (lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if name := strings.ToLower(cmd.Name()); (name == "evalsha" || name == "eval" || name == "fcall") && claimKey(args) && err == nil {
			cmd.SetErr(context.DeadlineExceeded)
			return context.DeadlineExceeded
		}
		return err
	}
}

// claimKey reports whether a script call declares a claim key.
func claimKey(args []any) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && strings.Contains(s, ":claim:") {
			return true
		}
	}
	return false
}

// TestClaimAnsweredFailedKeepsNoTask: a claim whose script ran but whose
// reply was lost is reported as unavailable with its token; CancelClaim
// puts its task back to PENDING with no attempt counted, not PROCESSING
// under a worker that never got it (CHANGELOG.md, 2026-11-23).
func TestClaimAnsweredFailedKeepsNoTask(t *testing.T) {
	db := redistest.New(t)
	b := setupOn(t, db.Client)
	task := b.create(t, "enc-lost", contracts.PriorityNormal)

	faulty := redis.NewClient(db.Client.Options())
	faulty.AddHook(lostReply{})
	t.Cleanup(func() { _ = faulty.Close() })
	lossy, err := tasks.New(faulty, tasks.Config{KeyPrefix: "test", Now: b.clock.Now})
	require.NoError(t, err)

	got, err := lossy.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1"})
	require.Empty(t, got)
	requireCode(t, err, contracts.CodeUnavailable)
	var uncertain *tasks.UncertainClaimError
	require.True(t, errors.As(err, &uncertain), "the error carries the claim token: %v", err)
	require.Equal(t, contracts.StatusProcessing, b.get(t, task.QueueID).Status, "the script did run")

	out, err := b.l.CancelClaim(b.ctx, uncertain.Token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{Released: 1}, out)
	back := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusPending, back.Status)
	require.Zero(t, back.Attempts)
	require.Empty(t, back.WorkerID)
	require.Nil(t, back.ClaimedAt)
	require.Contains(t, back.History[len(back.History)-1].Reason, "claim cancelled")

	again, err := b.l.CancelClaim(b.ctx, uncertain.Token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{}, again, "repeating the cancel changes nothing")
	require.Equal(t, task.QueueID, b.claimOne(t, "vm-2").QueueID, "the task is claimable again, first in line")
}

// TestClaimCancelledBeforeItRuns: when the cancel reaches Redis before the
// claim script (another connection, a hung server that reads them in any
// order), the claim takes nothing.
func TestClaimCancelledBeforeItRuns(t *testing.T) {
	b := setup(t)
	task := b.create(t, "enc-late", contracts.PriorityHigh)
	token := uuid.NewString()
	out, err := b.l.CancelClaim(b.ctx, token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{}, out)
	got, err := b.l.ClaimWithToken(b.ctx, "vm-1", 5, token)
	require.NoError(t, err)
	require.Empty(t, got, "a cancelled claim takes nothing")
	require.Equal(t, contracts.StatusPending, b.get(t, task.QueueID).Status)
}

// claimTwo creates two tasks and claims both with one token.
func claimTwo(t *testing.T, b *bundle) ([]contracts.Task, string) {
	t.Helper()
	b.create(t, "enc-a", contracts.PriorityNormal)
	b.create(t, "enc-b", contracts.PriorityNormal)
	token := uuid.NewString()
	got, err := b.l.ClaimWithToken(b.ctx, "vm-1", 2, token)
	require.NoError(t, err)
	require.Len(t, got, 2)
	return got, token
}

// TestCancelClaimLeavesMovedOnTasks: a task of the claim that was
// acknowledged meanwhile is kept as it is.
func TestCancelClaimLeavesMovedOnTasks(t *testing.T) {
	b := setup(t)
	got, token := claimTwo(t, b)
	_, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: got[0].QueueID})
	require.NoError(t, err)
	out, err := b.l.CancelClaim(b.ctx, token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{Released: 1, Kept: 1}, out)
	require.Equal(t, contracts.StatusDone, b.get(t, got[0].QueueID).Status)
	require.Equal(t, contracts.StatusPending, b.get(t, got[1].QueueID).Status)
	_, err = b.l.CancelClaim(b.ctx, "not-a-token")
	requireCode(t, err, contracts.CodeInvalid)
}

// TestCancelClaimReadsAnEarlierVersionsClaimKey: a claim key that is a
// set of ids (its tombstone: the set {"!"}; written before 2026-11-26,
// CHANGELOG.md) is read by a cancel, and a claim with a token tombstoned
// that way takes nothing. On miniredis too (its Lua answers TYPE its own
// way).
func TestCancelClaimReadsAnEarlierVersionsClaimKey(t *testing.T) {
	mini := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = mini.Close() })
	for name, rdb := range map[string]redis.UniversalClient{"redis": redistest.New(t).Client, "miniredis": mini} {
		t.Run(name, func(t *testing.T) {
			b := setupOn(t, rdb)
			got, token := claimTwo(t, b)
			key := b.l.KeyBase() + "claim:" + token
			require.Equal(t, got[0].QueueID+","+got[1].QueueID, b.rdb.Get(b.ctx, key).Val())
			// Rewritten as a set.
			require.NoError(t, b.rdb.Del(b.ctx, key).Err())
			require.NoError(t, b.rdb.SAdd(b.ctx, key, got[0].QueueID, got[1].QueueID).Err())
			out, err := b.l.CancelClaim(b.ctx, token)
			require.NoError(t, err)
			require.Equal(t, tasks.ClaimCancel{Released: 2}, out)
			require.Equal(t, "!", b.rdb.Get(b.ctx, key).Val())
			require.Positive(t, b.rdb.PTTL(b.ctx, key).Val())

			late := uuid.NewString()
			lateKey := b.l.KeyBase() + "claim:" + late
			require.NoError(t, b.rdb.SAdd(b.ctx, lateKey, "!").Err())
			out, err = b.l.CancelClaim(b.ctx, late)
			require.NoError(t, err)
			require.Equal(t, tasks.ClaimCancel{}, out)
			taken, err := b.l.ClaimWithToken(b.ctx, "vm-2", 5, late)
			require.NoError(t, err)
			require.Empty(t, taken, "a cancelled claim takes nothing")
			require.NoError(t, b.rdb.Del(b.ctx, key, lateKey).Err())
		})
	}
}

// TestCancelClaimLeavesATaskTakenSinceByHand: a task that left its claim
// (FAIL, requeue) and was then set PROCESSING by hand carries no claim
// token any more, so a late cancel of the old claim leaves it alone.
func TestCancelClaimLeavesATaskTakenSinceByHand(t *testing.T) {
	b := setup(t)
	task := b.create(t, "enc-hand", contracts.PriorityNormal)
	token := uuid.NewString()
	got, err := b.l.ClaimWithToken(b.ctx, "vm-1", 1, token)
	require.NoError(t, err)
	require.Len(t, got, 1)
	_, err = b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, WorkerID: "vm-1", ErrorMessage: "boom"})
	require.NoError(t, err)
	require.Empty(t, b.rdb.HGet(b.ctx, b.l.KeyBase()+"t:"+task.QueueID, "claim").Val(), "the token is forgotten")
	_, err = b.l.UpdateStatus(b.ctx, task.QueueID, contracts.StatusUpdateRequest{Status: contracts.StatusPending})
	require.NoError(t, err)
	_, err = b.l.UpdateStatus(b.ctx, task.QueueID, contracts.StatusUpdateRequest{Status: contracts.StatusProcessing, WorkerID: "vm-admin"})
	require.NoError(t, err)
	out, err := b.l.CancelClaim(b.ctx, token)
	require.NoError(t, err)
	require.Equal(t, tasks.ClaimCancel{Kept: 1}, out)
	require.Equal(t, "vm-admin", b.get(t, task.QueueID).WorkerID)
}

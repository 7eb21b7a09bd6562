package webhooks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// When the follower cannot schedule the retry after the ledger recorded the
// FAIL, the worker still gets 200 (a resent FAIL would only conflict), and
// the ledger's RetryOverdue sweep requeues the task later.
func TestFollowUpFailureAnswers200(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-1")
	b.claim(t, "vm-1", task.QueueID)
	b.follower.FailWith(errors.New("asynq: redis down"))

	fail := `{"queue_id":"` + task.QueueID + `","error_message":"boom"}`
	resp, r := b.hook(t, "/fail", fail)
	taskhttptest.Golden(t, "webhook_fail_followup_failed", r.Body)
	require.Equal(t, contracts.StatusError, resp.Status)
	require.Equal(t, 1, resp.Attempts)
	require.False(t, resp.Requeued)
	require.False(t, resp.DLQ)
	require.Contains(t, resp.Message, "recovery sweep")
	require.Contains(t, b.logs.String(), `"level":"ERROR","msg":"webhook FAIL recorded but its follow-up failed"`)
	require.Contains(t, b.logs.String(), "asynq: redis down")
	require.NotContains(t, string(r.Body), "redis down", "the cause stays in the log")

	// Why 200: the FAIL is recorded; sending it again is a duplicate that
	// changes nothing (and tries the follow-up once more).
	dup, _ := b.hook(t, "/fail", fail)
	require.True(t, dup.Duplicate)
	require.Equal(t, 1, dup.Attempts)

	// The safety net requeues it.
	res, err := b.ledger.RetryOverdue(b.ctx, time.Now().Add(time.Hour), 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{task.QueueID}, res.Requeued)
	got := b.get(t, task.QueueID)
	require.Equal(t, contracts.StatusPending, got.Status)
	require.Equal(t, contracts.PriorityHigh, got.Priority)

	// A dead letter whose follow-up fails is still reported as one.
	b.claim(t, "vm-1", task.QueueID)
	b.hook(t, "/fail", fail)
	_, err = b.ledger.RetryOverdue(b.ctx, time.Now().Add(time.Hour), 10*time.Minute)
	require.NoError(t, err)
	b.claim(t, "vm-1", task.QueueID)
	resp, _ = b.hook(t, "/fail", fail)
	require.True(t, resp.DLQ)
	require.Equal(t, contracts.DLQErrorMessage, resp.Message)
	require.Equal(t, 3, resp.Attempts)

	require.Equal(t, map[string]int{"error": 4}, outcomes(t, b.srv.Registry, "fail")) // the resent FAIL too: its follow-up failed again
}

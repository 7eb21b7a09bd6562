package buffer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
)

// failWrite is a go-redis hook that fails the first run of one task's
// Asynq enqueue script before it reaches Redis: the enqueue errs and
// nothing was written.
type failWrite struct {
	taskID string
	done   atomic.Bool
}

var errInjected = errors.New("injected: connection reset")

func (h *failWrite) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failWrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.hit(cmd) {
				for _, c := range cmds {
					c.SetErr(errInjected)
				}
				return errInjected
			}
		}
		return next(ctx, cmds)
	}
}
func (h *failWrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hit(cmd) {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func (h *failWrite) hit(cmd redis.Cmder) bool {
	if n := cmd.Name(); (n != "evalsha" && n != "eval") || len(cmd.Args()) <= 3 {
		return false
	}
	k, _ := cmd.Args()[3].(string)
	return strings.HasSuffix(k, ":t:"+h.taskID) && h.done.CompareAndSwap(false, true)
}

// A client-chosen messageId is unique across the four queues: before the
// fix the same id at CRITICAL and NORMAL gave two tasks (Asynq's task id
// conflicts only within a queue) and no DUPLICATE_MESSAGE.
func TestMessageIDUniqueAcrossPriorities(t *testing.T) {
	x := setup(t, nil)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	ctx := context.Background()
	req := func(id string, p contracts.BufferPriority) contracts.BufferEnqueueRequest {
		return contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{}`), MessageID: id, Priority: &p}
	}
	_, err := x.buf.Enqueue(ctx, req("m-1", contracts.BufferPriorityCritical))
	require.NoError(t, err)
	_, err = x.buf.Enqueue(ctx, req("m-1", contracts.BufferPriorityNormal))
	require.Equal(t, contracts.CodeDuplicateMessage, code(err), "same messageId at another priority")
	require.Equal(t, "m-1", details(t, err)["messageId"])
	require.Equal(t, "messageId", details(t, err)["field"])

	out, errs, err := x.buf.EnqueueBatch(ctx, []contracts.BufferEnqueueRequest{
		req("m-2", contracts.BufferPriorityHigh), req("m-2", contracts.BufferPriorityLow)})
	require.NoError(t, err)
	ok := 0
	for i := range out {
		if errs[i] == nil {
			ok++
		} else {
			require.Equal(t, contracts.CodeDuplicateMessage, code(errs[i]))
		}
	}
	require.Equal(t, 1, ok, "one of a batch's two m-2 is enqueued")
	n := 0
	for _, q := range buffer.Queues() {
		for _, id := range []string{"m-1", "m-2"} {
			if _, err := x.buf.Runtime().Inspector.GetTaskInfo(q, id); err == nil {
				n++
			}
		}
	}
	require.Equal(t, 2, n, "one task per messageId across the queues")
}

// A client-chosen messageId may not be a message's generated one (which
// takes no claim): before the fix a client naming another's dead letter's
// id at CRITICAL got 202, and GET /messages/{id} answered its message,
// completed, for the dead letter.
func TestClientChosenIDCannotTakeAGeneratedOne(t *testing.T) {
	x := setup(t, nil)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	ctx := context.Background()
	high, crit := contracts.BufferPriorityHigh, contracts.BufferPriorityCritical
	gen, err := x.buf.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{"n":1}`), Priority: &high})
	require.NoError(t, err)
	for _, p := range []*contracts.BufferPriority{&crit, &high, nil} {
		_, err = x.buf.Enqueue(ctx, contracts.BufferEnqueueRequest{Type: "email", Payload: json.RawMessage(`{"n":2}`),
			MessageID: gen.MessageID, Priority: p})
		require.Equal(t, contracts.CodeDuplicateMessage, code(err), "priority %v", p)
		require.Equal(t, gen.MessageID, details(t, err)["messageId"])
	}
	_, errs, err := x.buf.EnqueueBatch(ctx, []contracts.BufferEnqueueRequest{
		{Type: "email", Payload: json.RawMessage(`{"n":3}`), MessageID: gen.MessageID, Priority: &crit}})
	require.NoError(t, err)
	require.Equal(t, contracts.CodeDuplicateMessage, code(errs[0]), "in a batch too")
	m, err := x.buf.Get(ctx, gen.MessageID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(m.Payload), "the generated message is the one its id names")
	n := 0
	for _, q := range buffer.Queues() {
		if _, err := x.buf.Runtime().Inspector.GetTaskInfo(q, gen.MessageID); err == nil {
			n++
		}
	}
	require.Equal(t, 1, n, "one task under the id")
}

// An enqueue that failed without writing its task leaves a claim the
// retry resumes, never a 409 naming a message that does not exist
// (CHANGELOG.md, 2026-11-26). A retry without the messageId gets the
// claim's.
func TestFailedEnqueueIsResumedByTheRetry(t *testing.T) {
	x := setup(t, nil)
	x.db.Client.AddHook(&failWrite{taskID: "first"})
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { return nil, nil }))
	ctx := context.Background()
	_, err := x.buf.Enqueue(ctx, keyed("pay-9", "first"))
	require.Equal(t, contracts.CodePersistenceFailure, code(err))
	_, err = x.buf.Get(ctx, "first")
	require.Equal(t, contracts.CodeNotFound, code(err), "nothing was written")

	e, err := x.buf.Enqueue(ctx, keyed("pay-9", ""))
	require.NoError(t, err, "the retry is no duplicate: no message exists")
	require.Equal(t, "first", e.MessageID, "the retry resumes the claim's messageId")
	waitState(t, x.buf, "first", contracts.BufferCompleted)
	require.Eventually(t, func() bool {
		d, err := x.db.Client.Get(ctx, "flowgate:buffer:{buffer}:depth").Int64()
		return err == nil && d == 0
	}, 3*time.Second, 20*time.Millisecond, "the failed enqueue gave its place back, the retry's left with the message")
}

// Claims carry a TTL from their admission, so a claim no finish path
// expires still goes.
func TestClaimsExpire(t *testing.T) {
	x := setup(t, nil)
	block := make(chan struct{})
	defer close(block)
	x.start(t, fn("email", func(context.Context, *buffer.Message) (any, error) { <-block; return nil, nil }))
	ctx := context.Background()
	_, err := x.buf.Enqueue(ctx, keyed("k-ttl", "m-ttl"))
	require.NoError(t, err)
	for _, k := range []string{"flowgate:buffer:{buffer}:idem:k-ttl", "flowgate:buffer:{buffer}:id:m-ttl"} {
		ttl, err := x.db.Client.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, k)
	}
}

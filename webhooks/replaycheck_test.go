package webhooks_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/taskhttp/taskhttptest"
)

// cmdLog records the commands a Redis client sends.
type cmdLog struct {
	mu    sync.Mutex
	names []string
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.mu.Lock()
		l.names = append(l.names, strings.ToLower(cmd.Name()))
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// take returns the commands sent since the last take.
func (l *cmdLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.names
	l.names = nil
	return out
}

// A signed ACK or FAIL is one round trip: the replay check rides in the
// ledger's script (docs/tasks.md, "Authentication"), for version 1 (the
// global key, passed to the script: one shard on one server) and version
// 2 (the key in the task's shard). Its replay is refused as the verifier
// refuses one (401 replayed) and changes nothing; the key lives 2 ×
// tolerance.
func TestHookReplayCheckedInScript(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name string
		opts []taskhttptest.Option
		keys string
	}{
		{"v1", nil, "taskhttptest:replay:*"},
		{"v2", []taskhttptest.Option{taskhttptest.V2()}, "test:{tasks}:replay:*"},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			log := &cmdLog{}
			b.rdb.AddHook(log)
			for _, hook := range []string{"/ack", "/fail"} {
				task := b.create(t, "enc-"+v.name+hook)
				b.claim(t, "vm-1", task.QueueID)
				body := `{"queue_id":"` + task.QueueID + `","experityActions":{}}`
				if hook == "/fail" {
					body = `{"queue_id":"` + task.QueueID + `","error_message":"portal timeout"}`
				}
				at := time.Now()
				opts := append([]taskhttptest.Option{taskhttptest.SignedAt(at)}, v.opts...)
				keys := func() []string {
					ks, err := b.rdb.Keys(b.ctx, v.keys).Result()
					require.NoError(t, err)
					return ks
				}
				n := len(keys())
				log.take()
				r := b.srv.Do("POST", hook, []byte(body), opts...)
				require.Equal(t, 200, r.Status, string(r.Body))
				cmds := log.take()
				require.Len(t, keys(), n+1, "the hook's replay key")
				if hook == "/ack" {
					require.Len(t, cmds, 1, "one round trip: %v", cmds)
					require.Contains(t, []string{"fcall", "evalsha"}, cmds[0])
				} else {
					require.NotContains(t, cmds, "set", "the FAIL's replay check is in its script")
				}
				before := b.snapshot(t)
				for range 2 {
					env := b.srv.Do("POST", hook, []byte(body), opts...).Error(t, 401, contracts.CodeUnauthorized)
					require.Equal(t, "replayed", env.Error.Details["reason"])
					require.Equal(t, "request was already received", env.Error.Message)
				}
				require.Equal(t, before, b.snapshot(t), "a replay changed the ledger")
			}
			keys, err := b.rdb.Keys(b.ctx, v.keys).Result()
			require.NoError(t, err)
			ttl, err := b.rdb.PTTL(b.ctx, keys[0]).Result()
			require.NoError(t, err)
			require.InDelta(t, 10*time.Minute, ttl, float64(5*time.Second))
		})
	}
}

// A deferred check is made whatever the hook answers: a request refused
// before the ledger's script (a bad body), by the script (a task not
// found, a conflict) or accepted leaves its signature seen, so that its
// replay is refused 401 replayed, as when the verifier checked first. A
// version-1 ACK replayed to /fail or POST /queue is refused too: its key is
// the one every route checks.
func TestHookReplayAfterRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	task := b.create(t, "enc-refusals")
	for _, c := range []struct {
		name, path, body string
		status           int
		opts             []taskhttptest.Option
	}{
		{"bad json v1", "/ack", `{"queue_id":`, 400, nil},
		{"bad json v2", "/ack", `{"queue_id":`, 400, []taskhttptest.Option{taskhttptest.V2()}},
		{"error_message", "/ack", `{"queue_id":"` + task.QueueID + `","error_message":"x"}`, 400, nil},
		{"bad id v2", "/fail", `{"queue_id":"nope","error_message":"x"}`, 400, []taskhttptest.Option{taskhttptest.V2()}},
		{"not found v1", "/ack", `{"queue_id":"00000000-0000-4000-8000-000000000000","experityActions":{}}`, 404, nil},
		{"not found v2", "/fail", `{"queue_id":"00000000-0000-4000-8000-000000000000"}`, 404,
			[]taskhttptest.Option{taskhttptest.V2()}},
		{"late ack v2", "/ack", `{"queue_id":"` + task.QueueID + `","experityActions":{"a":1}}`, 200,
			[]taskhttptest.Option{taskhttptest.V2()}},
		{"conflict v2", "/ack", `{"queue_id":"` + task.QueueID + `","experityActions":{"a":2}}`, 409,
			[]taskhttptest.Option{taskhttptest.V2()}},
		{"conflict v1", "/fail", `{"queue_id":"` + task.QueueID + `","error_message":"other"}`, 409, nil},
	} {
		opts := append([]taskhttptest.Option{taskhttptest.SignedAt(time.Now())}, c.opts...)
		r := b.srv.Do("POST", c.path, []byte(c.body), opts...)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
		env := b.srv.Do("POST", c.path, []byte(c.body), opts...).Error(t, 401, contracts.CodeUnauthorized)
		require.Equal(t, "replayed", env.Error.Details["reason"], c.name)
	}

	task = b.create(t, "enc-refusals-2")
	b.claim(t, "vm-1", task.QueueID)
	ack := []byte(`{"queue_id":"` + task.QueueID + `","experityActions":{}}`)
	at := time.Now()
	r := b.srv.Do("POST", "/ack", ack, taskhttptest.SignedAt(at))
	require.Equal(t, 200, r.Status, string(r.Body))
	before := b.snapshot(t)
	for _, path := range []string{"/fail", "/webhook/fail", "/webhook/ack", "/queue"} {
		env := b.srv.Do("POST", path, ack, taskhttptest.SignedAt(at)).Error(t, 401, contracts.CodeUnauthorized)
		require.Equal(t, "replayed", env.Error.Details["reason"], path)
	}
	require.Equal(t, before, b.snapshot(t))
}

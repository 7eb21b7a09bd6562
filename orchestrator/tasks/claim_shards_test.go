package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
)

// tryAgain is the error reply Redis gives for a slot being migrated.
type tryAgain string

func (e tryAgain) Error() string { return string(e) }
func (tryAgain) RedisError()     {}

// blockShard makes every command that names one shard's keys fail with
// TRYAGAIN, as while that shard's slot moves between masters.
type blockShard struct{ base atomic.Value }

func (h *blockShard) blocked(cmd redis.Cmder) bool {
	base, _ := h.base.Load().(string)
	if base == "" {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, base) {
			return true
		}
	}
	return false
}

func (h *blockShard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *blockShard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.blocked(cmd) {
			err := tryAgain("TRYAGAIN Multiple keys request during rehashing of slot")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *blockShard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var pass []redis.Cmder
		var first error
		for _, c := range cmds {
			if h.blocked(c) {
				err := tryAgain("TRYAGAIN Multiple keys request during rehashing of slot")
				c.SetErr(err)
				first = err
				continue
			}
			pass = append(pass, c)
		}
		if len(pass) > 0 {
			if err := next(ctx, pass); err != nil {
				return err
			}
		}
		return first
	}
}

// A shard that cannot answer (its slot moving) is left out of a claim: the
// other shards' tasks are claimed as usual, the blocked shard's stay
// PENDING until it answers again, and a claim fails only when no shard
// answers.
func TestClaimServesOtherShardsWhileOneCannotAnswer(t *testing.T) {
	db := redistest.New(t)
	hook := &blockShard{}
	rdb := redis.NewClient(db.Client.Options())
	rdb.AddHook(hook)
	t.Cleanup(func() { _ = rdb.Close() })
	b := setupOn(t, rdb, func(c *tasks.Config) { c.Shards = 6 })

	const n = 36
	inBlocked := 0
	blocked := b.l.ShardOf("enc-0")
	for i := range n {
		enc := fmt.Sprintf("enc-%d", i)
		b.create(t, enc, contracts.PriorityNormal)
		if b.l.ShardOf(enc) == blocked {
			inBlocked++
		}
	}
	require.Positive(t, inBlocked)
	hook.base.Store(b.l.ShardBase(blocked))

	claimed := 0
	for {
		got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: 5})
		require.NoError(t, err, "the other shards answer")
		if len(got) == 0 {
			break
		}
		for _, task := range got {
			require.NotEqual(t, blocked, b.l.ShardOf(task.EncounterID), "a task of the blocked shard was claimed")
		}
		claimed += len(got)
	}
	require.Equal(t, n-inBlocked, claimed)

	hook.base.Store("")
	got, err := b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: contracts.MaxClaimLimit})
	require.NoError(t, err)
	require.Len(t, got, inBlocked, "the blocked shard's tasks waited for it")

	// With every shard unable to answer the claim fails (503), not "none pending".
	hook.base.Store(b.l.ShardBase(0)[:len("test:{")])
	_, err = b.l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: "vm-1"})
	requireCode(t, err, contracts.CodeUnavailable)
	hook.base.Store("")
}

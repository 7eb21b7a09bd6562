// Package autopipe puts go-redis's AutoPipeliner behind the caller's
// context.
//
// The AutoPipeliner (an experimental go-redis API) sends the commands of
// concurrent callers as one pipeline: one write and one read on a
// connection instead of a round trip each. Its blocking face waits for the
// batch whatever the caller's context, so with Redis paused a caller with a
// 1 s budget waited for the connection's read timeout and retries (11 s in
// bookingdeps' TestPausedRedisBookingAnswersWithinTheBudget). Client
// returns, for the commands flowgate sends on its hot paths (scripts and
// single reads and writes), a command failed with the context's error as
// soon as the context ends. The command may still run when Redis resumes,
// exactly as a command whose reply timed out on a plain connection may
// have.
package autopipe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnsupported: the client has no AutoPipeliner.
var ErrUnsupported = errors.New("autopipe: the Redis client has no AutoPipeliner")

// Client is a client's blocking AutoPipeliner whose Eval, EvalSha, EvalRO,
// EvalShaRO (so redis.Script.Run), FCall, FCallRO, Get, HGet, HSet and
// PTTL are submitted to the client's deferred (async) AutoPipeliner and
// waited for with AutoFuture.WaitContext: they return when the caller's
// context ends, with no goroutine per call. Other commands wait for their
// batch.
type Client struct {
	redis.UniversalClient                      // the blocking *redis.AutoPipeliner
	async                 *redis.AutoPipeliner // where the bounded commands go
}

// New returns rdb's AutoPipeliners (shared by every user of rdb and closed
// with it) behind contexts, or ErrUnsupported.
func New(rdb redis.UniversalClient) (*Client, error) {
	ap, ok := rdb.(interface {
		AutoPipeline() (*redis.AutoPipeliner, error)
		AsyncAutoPipeline() (*redis.AutoPipeliner, error)
	})
	if !ok {
		return nil, ErrUnsupported
	}
	p, err := ap.AutoPipeline()
	if err != nil {
		return nil, err
	}
	a, err := ap.AsyncAutoPipeline()
	if err != nil {
		return nil, err
	}
	return &Client{UniversalClient: p, async: a}, nil
}

// Prefer is New(rdb) for a user that falls back to rdb itself: nil, with
// a warning naming user and what the fallback costs, when rdb has no
// AutoPipeliner (every go-redis client of flowgate's has one, so this
// is not expected).
func Prefer(rdb redis.UniversalClient, log *slog.Logger, user, fallback string) *Client {
	p, err := New(rdb)
	if err != nil {
		log.Warn(user+": no auto-pipelined Redis client; "+fallback, "err", err)
		return nil
	}
	return p
}

// wait submits cmd and waits for it until ctx ends; then it returns
// failed(ctx.Err()) — cmd itself belongs to its batch until that completes.
func wait[C redis.Cmder](c *Client, ctx context.Context, cmd C, failed func(error) C) C {
	if err := c.async.Submit(ctx, cmd).WaitContext(ctx); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return failed(err)
	}
	return cmd
}

// evalCmd builds name (EVAL, EVALSHA, FCALL, …) as go-redis's cmdable
// does: name, script or function, the number of keys, keys, args.
func evalCmd(ctx context.Context, name, payload string, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, payload, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

func cmdErr(ctx context.Context) func(error) *redis.Cmd {
	return func(err error) *redis.Cmd { c := redis.NewCmd(ctx); c.SetErr(err); return c }
}

func stringErr(ctx context.Context) func(error) *redis.StringCmd {
	return func(err error) *redis.StringCmd { c := redis.NewStringCmd(ctx); c.SetErr(err); return c }
}

// Eval is EVAL, bounded by ctx.
func (c *Client) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "eval", script, keys, args), cmdErr(ctx))
}

// EvalSha is EVALSHA, bounded by ctx.
func (c *Client) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "evalsha", sha1, keys, args), cmdErr(ctx))
}

// EvalRO is EVAL_RO, bounded by ctx.
func (c *Client) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "eval_ro", script, keys, args), cmdErr(ctx))
}

// EvalShaRO is EVALSHA_RO, bounded by ctx.
func (c *Client) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "evalsha_ro", sha1, keys, args), cmdErr(ctx))
}

// FCall is FCALL, bounded by ctx.
func (c *Client) FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "fcall", function, keys, args), cmdErr(ctx))
}

// FCallRO is FCALL_RO, bounded by ctx.
func (c *Client) FCallRO(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd {
	return wait(c, ctx, evalCmd(ctx, "fcall_ro", function, keys, args), cmdErr(ctx))
}

// Get is GET, bounded by ctx.
func (c *Client) Get(ctx context.Context, key string) *redis.StringCmd {
	return wait(c, ctx, redis.NewStringCmd(ctx, "get", key), stringErr(ctx))
}

// HGet is HGET, bounded by ctx.
func (c *Client) HGet(ctx context.Context, key, field string) *redis.StringCmd {
	return wait(c, ctx, redis.NewStringCmd(ctx, "hget", key, field), stringErr(ctx))
}

// HSet is HSET key field value [field value …], bounded by ctx (the
// values as pairs, not a map or struct).
func (c *Client) HSet(ctx context.Context, key string, values ...any) *redis.IntCmd {
	return wait(c, ctx, redis.NewIntCmd(ctx, append([]any{"hset", key}, values...)...), func(err error) *redis.IntCmd {
		i := redis.NewIntCmd(ctx)
		i.SetErr(err)
		return i
	})
}

// PTTL is PTTL, bounded by ctx.
func (c *Client) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	return wait(c, ctx, redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key), func(err error) *redis.DurationCmd {
		d := redis.NewDurationCmd(ctx, time.Millisecond)
		d.SetErr(err)
		return d
	})
}

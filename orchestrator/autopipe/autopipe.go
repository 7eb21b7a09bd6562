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
// single reads and writes), a command failed with the context's error as soon as the
// context ends. The command may still run when Redis resumes, exactly as a
// command whose reply timed out on a plain connection may have.
package autopipe

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnsupported: the client has no AutoPipeliner.
var ErrUnsupported = errors.New("autopipe: the Redis client has no AutoPipeliner")

// Client is a client's AutoPipeliner whose Eval, EvalSha, EvalRO, EvalShaRO
// (so redis.Script.Run), Get, HGet, HSet and PTTL return when the caller's
// context ends. Other commands wait for their batch.
type Client struct {
	redis.UniversalClient // the *redis.AutoPipeliner
}

// New returns rdb's AutoPipeliner (shared by every user of rdb and closed
// with it) behind contexts, or ErrUnsupported.
func New(rdb redis.UniversalClient) (*Client, error) {
	ap, ok := rdb.(interface {
		AutoPipeline() (*redis.AutoPipeliner, error)
	})
	if !ok {
		return nil, ErrUnsupported
	}
	p, err := ap.AutoPipeline()
	if err != nil {
		return nil, err
	}
	return &Client{UniversalClient: p}, nil
}

// bounded runs call on its own goroutine and returns its command, or
// failed(ctx.Err()) when ctx ends first. A context that never ends costs
// no goroutine.
func bounded[C redis.Cmder](ctx context.Context, call func() C, failed func(error) C) C {
	if ctx.Done() == nil {
		return call()
	}
	done := make(chan C, 1)
	go func() { done <- call() }()
	select {
	case c := <-done:
		return c
	case <-ctx.Done():
		return failed(ctx.Err())
	}
}

func cmdErr(ctx context.Context) func(error) *redis.Cmd {
	return func(err error) *redis.Cmd { c := redis.NewCmd(ctx); c.SetErr(err); return c }
}

func stringErr(ctx context.Context) func(error) *redis.StringCmd {
	return func(err error) *redis.StringCmd { c := redis.NewStringCmd(ctx); c.SetErr(err); return c }
}

// Eval is the pipeliner's Eval, bounded by ctx.
func (c *Client) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return c.UniversalClient.Eval(ctx, script, keys, args...) }, cmdErr(ctx))
}

// EvalSha is the pipeliner's EvalSha, bounded by ctx.
func (c *Client) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return c.UniversalClient.EvalSha(ctx, sha1, keys, args...) }, cmdErr(ctx))
}

// EvalRO is the pipeliner's EvalRO, bounded by ctx.
func (c *Client) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return c.UniversalClient.EvalRO(ctx, script, keys, args...) }, cmdErr(ctx))
}

// EvalShaRO is the pipeliner's EvalShaRO, bounded by ctx.
func (c *Client) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return bounded(ctx, func() *redis.Cmd { return c.UniversalClient.EvalShaRO(ctx, sha1, keys, args...) }, cmdErr(ctx))
}

// Get is the pipeliner's Get, bounded by ctx.
func (c *Client) Get(ctx context.Context, key string) *redis.StringCmd {
	return bounded(ctx, func() *redis.StringCmd { return c.UniversalClient.Get(ctx, key) }, stringErr(ctx))
}

// HGet is the pipeliner's HGet, bounded by ctx.
func (c *Client) HGet(ctx context.Context, key, field string) *redis.StringCmd {
	return bounded(ctx, func() *redis.StringCmd { return c.UniversalClient.HGet(ctx, key, field) }, stringErr(ctx))
}

// HSet is the pipeliner's HSet, bounded by ctx.
func (c *Client) HSet(ctx context.Context, key string, values ...any) *redis.IntCmd {
	return bounded(ctx, func() *redis.IntCmd { return c.UniversalClient.HSet(ctx, key, values...) }, func(err error) *redis.IntCmd {
		i := redis.NewIntCmd(ctx)
		i.SetErr(err)
		return i
	})
}

// PTTL is the pipeliner's PTTL, bounded by ctx.
func (c *Client) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	return bounded(ctx, func() *redis.DurationCmd { return c.UniversalClient.PTTL(ctx, key) }, func(err error) *redis.DurationCmd {
		d := redis.NewDurationCmd(ctx, time.Millisecond)
		d.SetErr(err)
		return d
	})
}

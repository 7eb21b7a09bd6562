package autopipe_test

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/autopipe"
	"github.com/flowgate/flowgate/test/logtest"
	"github.com/flowgate/flowgate/test/redistest"
)

// hungRedis accepts connections and reads from them but never answers: a
// paused Redis as a client sees it. stop drops the connections.
func hungRedis(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = c.Read(make([]byte, 1<<16)) }()
		}
	}()
	stop = func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func TestCallsReturnWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	addr, stop := hungRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { stop(); _ = rdb.Close() }) // Redis "resumes" (drops), then the batch ends
	c, err := autopipe.New(rdb)
	require.NoError(t, err)
	calls := map[string]func(ctx context.Context) error{
		"EvalSha": func(ctx context.Context) error { return c.EvalSha(ctx, "0123", []string{"k"}).Err() },
		"Eval":    func(ctx context.Context) error { return c.Eval(ctx, "return 1", []string{"k"}).Err() },
		"Script":  func(ctx context.Context) error { return redis.NewScript("return 1").Run(ctx, c, []string{"k"}).Err() },
		"FCall":   func(ctx context.Context) error { return c.FCall(ctx, "fn", []string{"k"}).Err() },
		"FCallRO": func(ctx context.Context) error { return c.FCallRO(ctx, "fn", []string{"k"}).Err() },
		"Get":     func(ctx context.Context) error { return c.Get(ctx, "k").Err() },
		"HGet":    func(ctx context.Context) error { return c.HGet(ctx, "k", "f").Err() },
		"HSet":    func(ctx context.Context) error { return c.HSet(ctx, "k", "f", "v").Err() },
		"PTTL":    func(ctx context.Context) error { return c.PTTL(ctx, "k").Err() },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := call(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Less(t, time.Since(start), 2*time.Second, "bounded by the context, not the 10 s read timeout")
		})
	}
}

func TestAnswersPassThrough(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	c, err := autopipe.New(db.Client)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, db.Client.FunctionLoadReplace(ctx, "#!lua name=autopipetest\n"+
		"redis.register_function{function_name='autopipetest_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n"+
		"redis.register_function('autopipetest_incr', function(keys) return redis.call('INCR', keys[1]) end)").Err())
	for _, ctx := range []context.Context{ctx, context.Background()} { // bounded, and the no-deadline path
		require.NoError(t, db.Client.Set(ctx, "ap:k", "v", time.Minute).Err())
		require.NoError(t, c.HSet(ctx, "ap:h", "f", "w").Err())
		require.Equal(t, "v", c.Get(ctx, "ap:k").Val())
		require.Equal(t, "w", c.HGet(ctx, "ap:h", "f").Val())
		require.ErrorIs(t, c.Get(ctx, "ap:missing").Err(), redis.Nil)
		d := c.PTTL(ctx, "ap:k").Val()
		require.True(t, d > 50*time.Second && d <= time.Minute, "%s", d)
		n, err := redis.NewScript(`return redis.call('INCR', KEYS[1])`).Run(ctx, c, []string{"ap:n"}).Int()
		require.NoError(t, err)
		require.Positive(t, n)
		v, err := c.EvalRO(ctx, `return redis.call('GET', KEYS[1])`, []string{"ap:k"}).Text()
		require.NoError(t, err)
		require.Equal(t, "v", v)
		v, err = c.FCallRO(ctx, "autopipetest_get", []string{"ap:k"}).Text()
		require.NoError(t, err)
		require.Equal(t, "v", v)
		m, err := c.FCall(ctx, "autopipetest_incr", []string{"ap:n"}).Int()
		require.NoError(t, err)
		require.Equal(t, n+1, m)
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	_, err := autopipe.New(nil)
	require.ErrorIs(t, err, autopipe.ErrUnsupported)
}

// Prefer falls back (nil) with a warning that names its user and what the
// fallback costs; with an AutoPipeliner it logs nothing.
func TestPrefer(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rdb := redistest.New(t).Client
	require.NotNil(t, autopipe.Prefer(rdb, log, "holds", "one round trip per script"))
	require.Empty(t, logs.String())
	require.Nil(t, autopipe.Prefer(nil, log, "holds", "one round trip per script"))
	require.Len(t, logs.Lines("holds: no auto-pipelined Redis client; one round trip per script"), 1)
	require.Contains(t, logs.String(), "level=WARN")
}

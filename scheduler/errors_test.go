package scheduler

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// closedPortClient is a client for a port nothing listens on.
func closedPortClient(t *testing.T) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func requireCode(t *testing.T, err error, sentinel error, code contracts.Code) {
	t.Helper()
	require.ErrorIs(t, err, sentinel)
	require.Equal(t, code, contracts.ErrorCode(err), "%v", err)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	requireCode(t, err, ErrInvalid, contracts.CodeInvalid)
	_, err = New(Config{Redis: closedPortClient(t), KeyPrefix: "x:{y}:"})
	requireCode(t, err, ErrInvalid, contracts.CodeInvalid)
}

func TestRegisterValidates(t *testing.T) {
	t.Parallel()
	in := newInstanceOn(t, closedPortClient(t), nil)
	s := in.s
	noop := JobFunc(func(context.Context) error { return nil })

	for _, name := range []string{"", "has space", "brace{x}", string(make([]byte, 129))} {
		requireCode(t, s.Register(name, "* * * * * *", noop), ErrInvalid, contracts.CodeInvalid)
	}
	for _, spec := range []string{"", "* * * * *", "@every nope", "61 * * * * *", "0 0 0 30 2 *"} {
		requireCode(t, s.Register("job", spec, noop), ErrInvalid, contracts.CodeInvalid)
	}
	requireCode(t, s.Register("job", "* * * * * *", nil), ErrInvalid, contracts.CodeInvalid)
	requireCode(t, s.Register("job", "* * * * * *", noop, WithMaxRunTime(0)), ErrInvalid, contracts.CodeInvalid)

	require.NoError(t, s.Register("job", "* * * * * *", noop))
	requireCode(t, s.Register("job", "@hourly", noop), ErrDuplicateJob, contracts.CodeConflict)
	_, err := s.RunNow(context.Background(), "nope", time.Time{})
	requireCode(t, err, ErrUnknownJob, contracts.CodeNotFound)
}

func TestDefaultMaxRunTimeIsTheInterval(t *testing.T) {
	t.Parallel()
	in := newInstanceOn(t, closedPortClient(t), nil)
	noop := JobFunc(func(context.Context) error { return nil })
	require.NoError(t, in.s.Register("a-every-second", "* * * * * *", noop))
	require.NoError(t, in.s.Register("b-every-30s", "@every 30s", noop))
	require.NoError(t, in.s.Register("c-weekdays", "0 0 9 * * MON-FRI", noop))
	require.NoError(t, in.s.Register("d-explicit", "@hourly", noop, WithMaxRunTime(time.Minute)))
	var got []time.Duration
	for _, st := range in.s.Status() {
		got = append(got, st.MaxRunTime)
	}
	require.Equal(t, []time.Duration{5 * time.Second, 30 * time.Second, 24 * time.Hour, time.Minute}, got)
}

// Redis down: the tick is logged, counted and skipped; the job never runs
// without the lock, and nothing panics.
func TestRedisDownSkipsTheTick(t *testing.T) {
	t.Parallel()
	in := newInstanceOn(t, closedPortClient(t), nil)
	c := newCounter()
	require.NoError(t, in.s.Register("sweep", "* * * * * *", c.job(nil)))

	ran, err := in.s.RunNow(context.Background(), "sweep", time.Time{})
	require.False(t, ran)
	requireCode(t, err, ErrUnavailable, contracts.CodeUnavailable)
	require.Equal(t, 1, in.runs("sweep", resultSkippedUnavailable))

	require.NoError(t, in.s.Start())
	time.Sleep(2200 * time.Millisecond) // under test: two real ticks with Redis down
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, in.s.Stop(ctx))

	calls, _, _ := c.snapshot()
	require.Zero(t, calls, "never run without the lock")
	require.GreaterOrEqual(t, in.runs("sweep", resultSkippedUnavailable), 2, "each timer tick counted")
	require.Zero(t, in.runs("sweep", resultSucceeded)+in.runs("sweep", resultFailed))
	require.Contains(t, in.log.String(), `level=WARN msg="scheduler: tick skipped: cannot take the lock" job=sweep`)
}

func TestJobFailureAndPanic(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	in := newInstance(t, db, nil)
	diskFull := errors.New("disk full")
	require.NoError(t, in.s.Register("broken", "* * * * * *", JobFunc(func(context.Context) error { return diskFull })))
	require.NoError(t, in.s.Register("panicky", "* * * * * *", JobFunc(func(context.Context) error { panic("boom") })))
	ctx := context.Background()

	ran, err := in.s.RunNow(ctx, "broken", time.Time{})
	require.True(t, ran)
	requireCode(t, err, ErrJobFailed, contracts.CodeInternal)
	require.ErrorIs(t, err, diskFull)
	require.Contains(t, in.log.String(), `level=ERROR msg="scheduler: job failed" job=broken`)
	require.Contains(t, in.log.String(), `err="disk full"`)

	ran, err = in.s.RunNow(ctx, "panicky", time.Time{})
	require.True(t, ran)
	requireCode(t, err, ErrJobFailed, contracts.CodeInternal)
	require.ErrorContains(t, err, "panic: boom")
	require.Contains(t, in.log.String(), "stack=")
	require.Zero(t, db.Client.Exists(ctx, lockKey(DefaultKeyPrefix, "panicky")).Val(), "lock released after a panic")

	st := in.s.Status()
	require.Equal(t, "disk full", st[0].LastError)
	require.Equal(t, "panic: boom", st[1].LastError)
	require.Equal(t, 1, in.runs("broken", resultFailed))
	require.Equal(t, 1, in.runs("panicky", resultFailed))
}

// Stop cancels running jobs' contexts, waits for them, and their locks are
// released; afterwards the scheduler refuses work.
func TestStopCancelsAndWaits(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	in := newInstance(t, db, nil)
	started, sawErr := make(chan struct{}), make(chan error, 1)
	require.NoError(t, in.s.Register("sweep", "* * * * * *", JobFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // Stop must wait for this
		sawErr <- ctx.Err()
		return nil
	})))
	require.NoError(t, in.s.Start())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_, _ = in.s.RunNow(context.Background(), "sweep", time.Time{})
	}()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, in.s.Stop(ctx))
	require.ErrorIs(t, <-sawErr, context.Canceled, "the job saw Stop")
	<-runDone
	require.Zero(t, db.Client.Exists(ctx, lockKey(DefaultKeyPrefix, "sweep")).Val(), "lock released on Stop")

	_, err := in.s.RunNow(ctx, "sweep", time.Time{})
	requireCode(t, err, ErrStopped, contracts.CodeUnavailable)
	requireCode(t, in.s.Register("other", "* * * * * *", JobFunc(func(context.Context) error { return nil })),
		ErrStopped, contracts.CodeUnavailable)
	requireCode(t, in.s.Start(), ErrStopped, contracts.CodeUnavailable)
	require.NoError(t, in.s.Stop(ctx), "Stop twice")
}

func TestStopRespectsItsContext(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	in := newInstance(t, db, nil)
	started, finish := make(chan struct{}), make(chan struct{})
	require.NoError(t, in.s.Register("stubborn", "* * * * * *", JobFunc(func(context.Context) error {
		close(started)
		<-finish // ignores its context
		return nil
	})))
	go func() { _, _ = in.s.RunNow(context.Background(), "stubborn", time.Time{}) }()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := in.s.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	requireCode(t, err, ErrStopped, contracts.CodeUnavailable)

	close(finish)
	require.NoError(t, in.s.Stop(context.Background()), "a later Stop waits for the job")
}

// A RunNow whose context is already done does not run the job and is not
// counted as a Redis failure.
func TestRunNowWithDoneContext(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	in := newInstance(t, db, nil)
	c := newCounter()
	require.NoError(t, in.s.Register("sweep", "* * * * * *", c.job(nil)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran, err := in.s.RunNow(ctx, "sweep", time.Time{})
	require.False(t, ran)
	require.ErrorIs(t, err, context.Canceled)
	calls, _, _ := c.snapshot()
	require.Zero(t, calls)
	for _, r := range allResults {
		require.Zero(t, in.runs("sweep", r), r)
	}
	require.Zero(t, db.Client.Exists(context.Background(), lockKey(DefaultKeyPrefix, "sweep")).Val())
}

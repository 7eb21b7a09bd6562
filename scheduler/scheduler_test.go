package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

// Three instances share one Redis and register the same every-second job
// on the real cron timer: each tick runs exactly once.
func TestOncePerTickAcrossThreeInstances(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	c := newCounter()
	instances := make([]*instance, 3)
	for i := range instances {
		instances[i] = newInstance(t, db, nil)
		require.NoError(t, instances[i].s.Register("sweep", "* * * * * *", c.job(nil)))
	}
	windowStart := time.Now().Truncate(time.Second).Add(2 * time.Second)
	windowEnd := windowStart.Add(10 * time.Second)
	for _, in := range instances {
		require.NoError(t, in.s.Start())
	}
	time.Sleep(time.Until(windowEnd.Add(500 * time.Millisecond))) // under test: real cron ticks over a real window
	for _, in := range instances {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, in.s.Stop(ctx))
		cancel()
	}

	calls, maxConc, ticks := c.snapshot()
	t.Cleanup(func() {
		if t.Failed() { // what each instance saw, to tell a stall from a bug
			for i, in := range instances {
				t.Logf("instance %d log:\n%s", i, in.log.String())
			}
		}
	})
	inWindow := 0
	for tick := windowStart; tick.Before(windowEnd); tick = tick.Add(time.Second) {
		require.Equal(t, 1, ticks[tick.UnixMilli()], "tick %v", tick)
		inWindow += ticks[tick.UnixMilli()]
	}
	require.Equal(t, 10, inWindow, "exactly once per tick over 10 ticks")
	for tick, n := range ticks {
		require.Equal(t, 1, n, "tick %v", time.UnixMilli(tick))
	}
	require.Equal(t, len(ticks), calls, "every run had a distinct tick")
	require.Equal(t, 1, maxConc)

	succeeded, claimed := 0, 0
	for _, in := range instances {
		succeeded += in.runs("sweep", resultSucceeded)
		claimed += in.runs("sweep", resultSkippedClaimed)
		require.GreaterOrEqual(t, in.runs("sweep", resultSucceeded)+in.runs("sweep", resultSkippedClaimed), 10,
			"each instance fired every tick of the window")
		require.Zero(t, in.runs("sweep", resultSkippedOverrun))
		require.Zero(t, in.runs("sweep", resultSkippedUnavailable))
		require.Zero(t, in.runs("sweep", resultFailed))
	}
	require.Equal(t, calls, succeeded)
	require.GreaterOrEqual(t, claimed, 20, "the two other instances skip each tick")
}

// A job that takes 2.2s on an every-second schedule, on two instances:
// the ticks in between are skipped, never stacked.
func TestOverrunIsSkippedOnTheRealTimer(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	c := newCounter()
	slow := c.job(func(ctx context.Context) error {
		select {
		case <-time.After(2200 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})
	a, b := newInstance(t, db, nil), newInstance(t, db, nil)
	for _, in := range []*instance{a, b} {
		require.NoError(t, in.s.Register("slow", "* * * * * *", slow))
		require.NoError(t, in.s.Start())
	}
	time.Sleep(5500 * time.Millisecond) // under test: real cron ticks while the slow jobs run
	for _, in := range []*instance{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, in.s.Stop(ctx))
		cancel()
	}

	calls, maxConc, _ := c.snapshot()
	require.Equal(t, 1, maxConc, "never two runs at once, on either instance")
	require.GreaterOrEqual(t, calls, 1)
	require.LessOrEqual(t, calls, 3, "5.5s of 2.2s runs, each followed by skipped ticks")
	overrun := a.runs("slow", resultSkippedOverrun) + b.runs("slow", resultSkippedOverrun)
	require.GreaterOrEqual(t, overrun, 4, "ticks during a run are counted as overrun skips")
}

// The same, driven tick by tick: a run blocks; the next tick is skipped on
// its own instance (without asking Redis) and on the other (lock held);
// after the run the following tick runs.
func TestOverrunIsSkippedNotStacked(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(t0)
	c := newCounter()
	entered, release := make(chan struct{}), make(chan struct{})
	job := c.job(func(ctx context.Context) error {
		tick, _ := TickFromContext(ctx)
		if tick.Equal(t0) {
			close(entered)
			<-release
		}
		return nil
	})
	edit := func(cfg *Config) { cfg.Now = clock.Now }
	a, b := newInstance(t, db, edit), newInstance(t, db, edit)
	require.NoError(t, a.s.Register("sweep", "* * * * * *", job))
	require.NoError(t, b.s.Register("sweep", "* * * * * *", job))

	firstDone := make(chan error, 1)
	go func() {
		_, err := a.s.RunNow(context.Background(), "sweep", t0)
		firstDone <- err
	}()
	<-entered

	clock.Set(t0.Add(time.Second))
	ran, err := a.s.RunNow(context.Background(), "sweep", t0.Add(time.Second))
	require.NoError(t, err)
	require.False(t, ran, "same instance: still running")
	ran, err = b.s.RunNow(context.Background(), "sweep", t0.Add(time.Second))
	require.NoError(t, err)
	require.False(t, ran, "other instance: lock held")
	require.Equal(t, 1, a.runs("sweep", resultSkippedOverrun))
	require.Equal(t, 1, b.runs("sweep", resultSkippedOverrun))
	require.Contains(t, a.log.String(), "result=skipped_overrun")
	require.True(t, a.s.Status()[0].Running)

	close(release)
	require.NoError(t, <-firstDone)
	clock.Set(t0.Add(2 * time.Second))
	ran, err = b.s.RunNow(context.Background(), "sweep", t0.Add(2*time.Second))
	require.NoError(t, err)
	require.True(t, ran, "next tick after the run released the lock")

	calls, maxConc, _ := c.snapshot()
	require.Equal(t, 2, calls)
	require.Equal(t, 1, maxConc)
}

// With an injected clock, RunNow names ticks deterministically.
func TestRunNowWithInjectedClock(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 10, 0, time.UTC)
	clock := clocktest.New(t0)
	c := newCounter()
	edit := func(cfg *Config) { cfg.Now = clock.Now }
	a, b := newInstance(t, db, edit), newInstance(t, db, edit)
	for _, in := range []*instance{a, b} {
		require.NoError(t, in.s.Register("sweep", "*/10 * * * * *", c.job(nil)))
	}
	ctx := context.Background()

	ran, err := a.s.RunNow(ctx, "sweep", t0)
	require.NoError(t, err)
	require.True(t, ran, "first run of the tick")
	ran, err = a.s.RunNow(ctx, "sweep", t0)
	require.NoError(t, err)
	require.False(t, ran, "same tick twice")

	// Another instance whose timer fired 7ms later, or whose clock is 3s
	// ahead, names the same tick.
	ran, err = b.s.RunNow(ctx, "sweep", t0.Add(7*time.Millisecond))
	require.NoError(t, err)
	require.False(t, ran)
	ran, err = b.s.RunNow(ctx, "sweep", t0.Add(3*time.Second))
	require.NoError(t, err)
	require.False(t, ran)

	// A lagging instance asking for an older tick is refused too.
	ran, err = b.s.RunNow(ctx, "sweep", t0.Add(-10*time.Second))
	require.NoError(t, err)
	require.False(t, ran)

	// The next tick runs once; a zero tick means Config.Now().
	clock.Set(t0.Add(10*time.Second + 2*time.Millisecond))
	ran, err = b.s.RunNow(ctx, "sweep", time.Time{})
	require.NoError(t, err)
	require.True(t, ran, "next tick")
	ran, err = a.s.RunNow(ctx, "sweep", time.Time{})
	require.NoError(t, err)
	require.False(t, ran)

	calls, _, ticks := c.snapshot()
	require.Equal(t, 2, calls)
	require.Equal(t, map[int64]int{t0.UnixMilli(): 1, t0.Add(10 * time.Second).UnixMilli(): 1}, ticks)
	require.Equal(t, 1, a.runs("sweep", resultSucceeded))
	require.Equal(t, 2, a.runs("sweep", resultSkippedClaimed))
	require.Equal(t, 1, b.runs("sweep", resultSucceeded))
	require.Equal(t, 3, b.runs("sweep", resultSkippedClaimed))

	st := a.s.Status()
	require.Len(t, st, 1)
	require.Equal(t, t0, st[0].LastTick)
	require.Equal(t, t0.Add(20*time.Second), st[0].Next)
}

// A run past its MaxRunTime sees its context end when its lock expires;
// the next tick then runs on another instance, and the first run's late
// release does not delete the new holder's lock.
func TestMaxRunTimeEndsContextAndLock(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(t0)
	edit := func(cfg *Config) { cfg.Now = clock.Now }
	a, b := newInstance(t, db, edit), newInstance(t, db, edit)

	ctxErr := make(chan error, 1)
	secondStarted := make(chan struct{})
	finishFirst, finishSecond := make(chan struct{}), make(chan struct{})
	job := JobFunc(func(ctx context.Context) error {
		if tick, _ := TickFromContext(ctx); tick.Equal(t0) {
			<-ctx.Done()
			ctxErr <- ctx.Err()
			<-finishFirst // keeps running past its lock, ignoring ctx
			return nil
		}
		close(secondStarted)
		<-finishSecond
		return nil
	})
	for _, in := range []*instance{a, b} {
		require.NoError(t, in.s.Register("sweep", "* * * * * *", job, WithMaxRunTime(300*time.Millisecond)))
	}
	firstDone := make(chan error, 1)
	go func() {
		_, err := a.s.RunNow(context.Background(), "sweep", t0)
		firstDone <- err
	}()
	require.ErrorIs(t, <-ctxErr, context.DeadlineExceeded)

	clock.Set(t0.Add(time.Second))
	secondDone := make(chan error, 1)
	go func() { // the TTL in Redis outlives the context by a round trip
		for {
			ran, err := b.s.RunNow(context.Background(), "sweep", t0.Add(time.Second))
			if ran || err != nil {
				secondDone <- err
				return
			}
			time.Sleep(10 * time.Millisecond) // retries until the lock's TTL in Redis lapses; signals by channel
		}
	}()
	select {
	case <-secondStarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the next tick never ran after the lock expired")
	}

	close(finishFirst)
	require.NoError(t, <-firstDone)
	require.Contains(t, a.log.String(), "run outlived its lock")
	lock := lockKey(DefaultKeyPrefix, "sweep")
	require.Equal(t, int64(1), db.Client.Exists(context.Background(), lock).Val(), "the late release left the new lock alone")

	close(finishSecond)
	require.NoError(t, <-secondDone)
	require.Zero(t, db.Client.Exists(context.Background(), lock).Val(), "the holder released it")
}

package scheduler

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// redisTimeout bounds each lock script call, so a hung Redis delays a tick
// by at most this much.
const redisTimeout = 5 * time.Second

// fire is what the cron timer calls on each tick of e. The timer fires at
// the scheduled time plus some jitter; run maps that back to the tick.
func (s *Scheduler) fire(e *entry) {
	now := s.cfg.Now()
	s.metrics.scheduled(e.name, e.sched.Next(now.In(s.cfg.Location)))
	// Errors are logged and counted by run; nothing to return them to.
	_, _ = s.run(s.base, e, now)
}

// run runs one tick of e, at or before at, under the lock:
//
//  1. skip if a run of e is in progress on this instance (overrun);
//  2. claim the tick and take the lock in Redis (acquireCmd), or skip;
//  3. run the job with a context that ends at MaxRunTime or on Stop;
//  4. release the lock if it still holds this run's token (releaseCmd).
func (s *Scheduler) run(parent context.Context, e *entry, at time.Time) (bool, error) {
	const op = "run"
	tick, err := prevTick(e.sched, at.In(s.cfg.Location))
	if err != nil { // not for a schedule that cron fired
		s.log.Error("scheduler: no tick", "job", e.name, "at", at, "err", err)
		return false, fail(contracts.CodeInternal, op, ErrInvalid, "job %q: %w", e.name, err)
	}
	if !s.begin() {
		return false, fail(contracts.CodeUnavailable, op, ErrStopped, "job %q tick %v", e.name, tick)
	}
	defer s.runs.Done()
	if !e.running.CompareAndSwap(false, true) {
		s.skipped(e, tick, resultSkippedOverrun, "a run is still in progress on this instance")
		return false, nil
	}
	defer e.running.Store(false)

	// The run's deadline starts before the lock is taken, so it passes
	// before the lock expires in Redis.
	ctx, cancel := context.WithTimeout(parent, e.maxRunTime)
	defer cancel()
	stopOnStop := context.AfterFunc(s.base, cancel)
	defer stopOnStop()

	token := rand.Text()
	got, err := s.acquire(ctx, e, tick, token)
	if err != nil {
		return false, s.lockFailed(ctx, e, tick, token, err)
	}
	switch got {
	case claimed:
		s.skipped(e, tick, resultSkippedClaimed, "tick already ran")
		return false, nil
	case locked:
		s.skipped(e, tick, resultSkippedOverrun, "an earlier run still holds the lock")
		return false, nil
	}
	defer s.release(e, token, tick)

	runErr := s.execute(context.WithValue(ctx, tickKey{}, tick), e, tick)
	if runErr != nil {
		return true, fail(contracts.CodeInternal, op, ErrJobFailed, "job %q tick %v: %w", e.name, tick, runErr)
	}
	return true, nil
}

// lockFailed logs, counts and wraps an acquire error.
func (s *Scheduler) lockFailed(ctx context.Context, e *entry, tick time.Time, token string, err error) error {
	const op = "run"
	if ctx.Err() == nil { // Redis failed: skip the tick rather than run unlocked
		s.metrics.count(e.name, resultSkippedUnavailable)
		s.log.Warn("scheduler: tick skipped: cannot take the lock", "job", e.name, "tick", tick, "err", err)
		return fail(contracts.CodeUnavailable, op, ErrUnavailable, "job %q tick %v: %w", e.name, tick, err)
	}
	// Cut short by Stop or the caller. The script may have run before the
	// reply was dropped: free the lock if it is ours. The tick stays
	// claimed (at most once).
	s.releaseQuietly(e, token)
	s.log.Debug("scheduler: tick abandoned", "job", e.name, "tick", tick, "err", err)
	if s.base.Err() != nil {
		return fail(contracts.CodeUnavailable, op, ErrStopped, "job %q tick %v: %w", e.name, tick, err)
	}
	return fmt.Errorf("scheduler: job %q tick %v: %w", e.name, tick, err)
}

// begin registers a run with Stop's wait group unless stopped.
func (s *Scheduler) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.runs.Add(1)
	return true
}

func (s *Scheduler) acquire(ctx context.Context, e *entry, tick time.Time, token string) (acquireResult, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	return s.lock.acquire(ctx, e.name, tick, token, e.maxRunTime, e.lastTTL)
}

// release runs even when the run's context is done (Stop, deadline), so a
// stopped instance does not hold the lock until its TTL.
func (s *Scheduler) release(e *entry, token string, tick time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	ok, err := s.lock.release(ctx, e.name, token)
	switch {
	case err != nil:
		s.log.Warn("scheduler: lock not released; it expires on its own", "job", e.name, "tick", tick, "err", err)
	case !ok:
		s.log.Warn("scheduler: run outlived its lock (MaxRunTime)", "job", e.name, "tick", tick, "max_run_time", e.maxRunTime)
	}
}

func (s *Scheduler) releaseQuietly(e *entry, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = s.lock.release(ctx, e.name, token)
}

// execute runs the job, recovering a panic into an error, and records the
// run in the metrics, the status and the log.
func (s *Scheduler) execute(ctx context.Context, e *entry, tick time.Time) (err error) {
	start := s.cfg.Now()
	s.metrics.started(e.name, start)
	s.log.Debug("scheduler: run", "job", e.name, "tick", tick)
	var stack []byte
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
			stack = debug.Stack()
		}
		took := s.cfg.Now().Sub(start)
		failed := err != nil
		s.metrics.finished(e.name, took, failed)
		if failed {
			s.metrics.count(e.name, resultFailed)
			attrs := []any{"job", e.name, "tick", tick, "duration", took, "err", err}
			if stack != nil {
				attrs = append(attrs, "stack", string(stack))
			}
			s.log.Error("scheduler: job failed", attrs...)
		} else {
			s.metrics.count(e.name, resultSucceeded)
			s.log.Debug("scheduler: job done", "job", e.name, "tick", tick, "duration", took)
		}
		e.mu.Lock()
		e.last = lastRun{tick: tick, started: start, duration: took, err: err, ran: true}
		e.mu.Unlock()
	}()
	return e.job.Run(ctx)
}

func (s *Scheduler) skipped(e *entry, tick time.Time, r result, why string) {
	s.metrics.count(e.name, r)
	s.log.Debug("scheduler: tick skipped", "job", e.name, "tick", tick, "result", string(r), "why", why)
}

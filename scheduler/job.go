package scheduler

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// Job is the work run on each tick.
//
// Its context is cancelled when the scheduler stops and when the run
// reaches the job's MaxRunTime, which is also when its lock expires: a job
// that keeps running after that is no longer protected from a run of a
// later tick on another instance, so jobs should return when ctx is done.
type Job interface {
	Run(ctx context.Context) error
}

// JobFunc adapts a function to Job.
type JobFunc func(ctx context.Context) error

// Run calls f(ctx).
func (f JobFunc) Run(ctx context.Context) error { return f(ctx) }

// JobOption configures one job at Register.
type JobOption func(*jobOptions)

type jobOptions struct {
	maxRunTime time.Duration
}

// Bounds of the default MaxRunTime.
const (
	minDefaultMaxRunTime = 5 * time.Second
)

// WithMaxRunTime sets how long one run may hold the job's lock, and so how
// long it may run: the lock's TTL and the run's context deadline. The
// default is the job's interval (its shortest gap between ticks), at least
// 5s. A run that outlives it loses the lock (see Job).
func WithMaxRunTime(d time.Duration) JobOption {
	return func(o *jobOptions) { o.maxRunTime = d }
}

// jobNameRE keeps names usable inside a Redis hash tag and readable as a
// metric label.
var jobNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)

func validateName(name string) error {
	if !jobNameRE.MatchString(name) {
		return fmt.Errorf("job name %q: want 1-128 of A-Z a-z 0-9 _ . : / -", name)
	}
	return nil
}

type tickKey struct{}

// TickFromContext returns the scheduled time of the run that ctx belongs
// to: the same on every instance, so it can name the run's output.
func TickFromContext(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(tickKey{}).(time.Time)
	return t, ok
}

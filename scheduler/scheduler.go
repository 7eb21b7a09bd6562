package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/flowgate/flowgate/contracts"
)

// Scheduler runs registered jobs on their cron schedules, at most once per
// tick across every instance sharing its Redis. Create it with New.
type Scheduler struct {
	cfg     Config
	log     *slog.Logger
	cron    *cron.Cron
	lock    locker
	metrics *metrics

	// base is the parent of every run's context; stopping cancels it.
	base       context.Context
	cancelBase context.CancelFunc

	mu      sync.Mutex
	jobs    map[string]*entry
	started bool
	stopped bool
	runs    sync.WaitGroup // runs in progress; Add only under mu while !stopped
}

// entry is one registered job.
type entry struct {
	name       string
	spec       string
	sched      cron.Schedule
	job        Job
	maxRunTime time.Duration
	lastTTL    time.Duration
	running    atomic.Bool // a run is in progress on this instance

	mu   sync.Mutex
	last lastRun
}

type lastRun struct {
	tick     time.Time
	started  time.Time
	duration time.Duration
	err      error
	ran      bool
}

// New validates cfg and builds a stopped Scheduler; call Register, then Start.
func New(cfg Config) (*Scheduler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fail(contracts.CodeInvalid, "New", ErrInvalid, "config: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fail(contracts.CodeInvalid, "New", ErrInvalid, "%w", err)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Scheduler{
		cfg: cfg,
		log: cfg.Logger,
		cron: cron.New(
			cron.WithLocation(cfg.Location),
			cron.WithParser(parser),
			cron.WithLogger(cronLogger{cfg.Logger}),
		),
		lock:       locker{rdb: cfg.Redis, prefix: cfg.KeyPrefix},
		metrics:    m,
		base:       base,
		cancelBase: cancel,
		jobs:       make(map[string]*entry),
	}, nil
}

// Register adds job under name (unique per scheduler, and the same on
// every instance) to run on spec: six fields with seconds first
// ("*/10 * * * * *"), or a descriptor ("@hourly", "@every 30s"), optionally
// prefixed by "CRON_TZ=<zone> ". "@every d" ticks on multiples of d since
// the Unix epoch so that all instances agree. Register may be called after
// Start.
func (s *Scheduler) Register(name, spec string, job Job, opts ...JobOption) error {
	const op = "Register"
	if err := validateName(name); err != nil {
		return fail(contracts.CodeInvalid, op, ErrInvalid, "%w", err)
	}
	if job == nil {
		return fail(contracts.CodeInvalid, op, ErrInvalid, "job %q is nil", name)
	}
	sched, err := parseSpec(spec, s.cfg.Location)
	if err != nil {
		return fail(contracts.CodeInvalid, op, ErrInvalid, "job %q: spec %q: %w", name, spec, err)
	}
	interval, err := minInterval(sched, s.cfg.Now().In(s.cfg.Location))
	if err != nil {
		return fail(contracts.CodeInvalid, op, ErrInvalid, "job %q: spec %q never fires: %w", name, spec, err)
	}
	o := jobOptions{maxRunTime: max(interval, minDefaultMaxRunTime)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxRunTime < time.Millisecond {
		return fail(contracts.CodeInvalid, op, ErrInvalid, "job %q: MaxRunTime %v is under 1ms", name, o.maxRunTime)
	}
	e := &entry{
		name:       name,
		spec:       spec,
		sched:      sched,
		job:        job,
		maxRunTime: o.maxRunTime,
		// last must outlive the timer jitter between instances; a few
		// intervals is plenty, and a later tick overwrites it anyway.
		lastTTL: 3 * max(interval, o.maxRunTime),
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fail(contracts.CodeUnavailable, op, ErrStopped, "job %q", name)
	}
	if _, dup := s.jobs[name]; dup {
		return fail(contracts.CodeConflict, op, ErrDuplicateJob, "job %q", name)
	}
	s.jobs[name] = e
	s.metrics.addJob(name)
	s.metrics.scheduled(name, sched.Next(s.cfg.Now().In(s.cfg.Location)))
	s.cron.Schedule(sched, cron.FuncJob(func() { s.fire(e) }))
	return nil
}

// Start starts the cron timer in its own goroutine. Starting twice is a
// no-op; starting after Stop is an error.
func (s *Scheduler) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fail(contracts.CodeUnavailable, "Start", ErrStopped, "cannot restart")
	}
	if !s.started {
		s.started = true
		s.cron.Start()
	}
	return nil
}

// Stop stops the timer, cancels the context of running jobs and waits for
// them to return (their locks are released) or for ctx to be done, whichever
// comes first. Calling it again waits again.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	cronDone := s.cron.Stop().Done() // closed when cron's job goroutines return
	s.cancelBase()
	runsDone := make(chan struct{})
	go func() {
		s.runs.Wait()
		<-cronDone
		close(runsDone)
	}()
	select {
	case <-runsDone:
		return nil
	case <-ctx.Done():
		return fail(contracts.CodeUnavailable, "Stop", ErrStopped, "jobs still running: %w", ctx.Err())
	}
}

// RunNow runs job name for the tick at or before tick, exactly as a cron
// firing at that time would, with the same lock: it is skipped (false, nil)
// if that tick already ran, on any instance, or if an earlier run still
// holds the lock. A zero tick means Config.Now(). It returns after the run,
// with ran true and the job's error (wrapping ErrJobFailed) if it ran, or
// an ErrUnavailable error if Redis could not be asked. Tests drive ticks
// with it; ctx is the parent of the job's context.
func (s *Scheduler) RunNow(ctx context.Context, name string, tick time.Time) (ran bool, err error) {
	s.mu.Lock()
	e := s.jobs[name]
	s.mu.Unlock()
	if e == nil {
		return false, fail(contracts.CodeNotFound, "RunNow", ErrUnknownJob, "job %q", name)
	}
	if tick.IsZero() {
		tick = s.cfg.Now()
	}
	return s.run(ctx, e, tick)
}

// JobStatus is what this instance knows of one job, for health pages.
// Runs on other instances do not show here.
type JobStatus struct {
	Name       string
	Spec       string
	MaxRunTime time.Duration
	Next       time.Time // next tick after Config.Now()
	Running    bool      // a run is in progress on this instance

	// The last run on this instance; zero if it has not run here.
	LastTick     time.Time // its scheduled time
	LastRun      time.Time // when it started
	LastDuration time.Duration
	LastError    string // empty if it succeeded
}

// Status returns every job's status, sorted by name.
func (s *Scheduler) Status() []JobStatus {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.name, b.name) })

	now := s.cfg.Now().In(s.cfg.Location)
	out := make([]JobStatus, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		last := e.last
		e.mu.Unlock()
		st := JobStatus{
			Name:       e.name,
			Spec:       e.spec,
			MaxRunTime: e.maxRunTime,
			Next:       e.sched.Next(now),
			Running:    e.running.Load(),
		}
		if last.ran {
			st.LastTick, st.LastRun, st.LastDuration = last.tick, last.started, last.duration
			if last.err != nil {
				st.LastError = last.err.Error()
			}
		}
		out = append(out, st)
	}
	return out
}

// cronLogger sends robfig/cron's own logs to slog: its chatter at debug.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}

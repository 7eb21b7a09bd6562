package taskjobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Config configures a Dispatcher. Ledger and Runtime are required; zero
// values of the rest take the defaults.
type Config struct {
	Ledger  *tasks.Ledger
	Runtime *asynqrt.Runtime
	// Backoff gives the delay of the requeue after the nth failed attempt as
	// Backoff.RetryDelay(n−1, …), and the delay of the follow-up tasks' own
	// retries when Redis fails them. Default asynqrt.Exponential{10s,
	// 5m}: 10 s·2^(attempts−1), at most 5 min.
	Backoff asynqrt.RetryPolicy
	// Queue is the Asynq queue of requeue tasks. Default asynqrt.QueueHigh.
	Queue string
	// ReplayQueue is the Asynq queue whose archive holds the dead letters'
	// replay tasks (and where a replay runs). Default asynqrt.QueueLow,
	// the queue of replays.
	ReplayQueue string
	// Retention keeps a completed requeue task visible in Asynqmon. Default
	// 24h; negative: not kept.
	Retention time.Duration
	Logger    *slog.Logger
	// Registerer gets the flowgate_tasks_* metrics. Default: a private
	// registry, so nothing is exported.
	Registerer prometheus.Registerer
	// Now is the clock of the sweeps and of FollowUp.RetryAt. Default
	// time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Backoff = valutil.ValOrDefault[asynqrt.RetryPolicy](c.Backoff, asynqrt.Exponential{Base: DefaultRequeueBackoffBase, Max: DefaultRequeueBackoffMax})
	c.Queue = valutil.ValOrDefault(c.Queue, asynqrt.QueueHigh)
	c.ReplayQueue = valutil.ValOrDefault(c.ReplayQueue, asynqrt.QueueLow)
	// 0 is the default; a negative Retention keeps nothing.
	c.Retention = max(valutil.ValOrDefault(c.Retention, 24*time.Hour), 0)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.Registerer = valutil.ValOrDefault[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Ledger == nil:
		return errors.New("taskjobs: Ledger is required")
	case c.Runtime == nil:
		return errors.New("taskjobs: Runtime is required")
	}
	served := c.Runtime.DLQ.Queues() // the runtime's queues
	for _, q := range []string{c.Queue, c.ReplayQueue} {
		if !slices.Contains(served, q) {
			return fmt.Errorf("taskjobs: queue %q is not served by the runtime (queues %v)", q, served)
		}
	}
	return nil
}

// Task types and limits of the follow-up tasks.
const (
	TypeRequeue = "tasks:requeue" // payload {queue_id, attempts}
	TypeReplay  = "tasks:replay"  // payload {queue_id, …}; archived at once, run from Asynqmon

	// requeueMaxRetry is how often a requeue whose ledger call failed
	// (Redis trouble) is tried again: with the default backoff, about two
	// hours. The retry-overdue job requeues the task long before.
	requeueMaxRetry = 25
	// replayMaxRetry bounds the retries of a replay run from Asynqmon; it
	// then goes back to the archive with its last error.
	replayMaxRetry = 5
	// handlerTimeout bounds one run of a follow-up: a few ledger calls.
	handlerTimeout = 30 * time.Second
	// farFuture is when a replay task would run if archiving it failed; the
	// DLQ-repair job archives it long before.
	farFuture = 100 * 365 * 24 * time.Hour
)

// Dispatcher schedules the Asynq follow-ups of the ledger's FAIL outcomes,
// replays dead letters and runs the sweeps. Create it with New, call
// Register before the runtime starts.
type Dispatcher struct {
	cfg      Config
	log      *slog.Logger
	m        *metrics
	register sync.Once
}

// New validates cfg and registers the metrics.
func New(cfg Config) (*Dispatcher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer, cfg.Ledger, cfg.Logger, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger.With("component", "taskjobs"), m: m}, nil
}

// Register registers the handlers of TypeRequeue and TypeReplay on the
// runtime, with Config.Backoff as their retry policy. Calling it again does
// nothing.
func (d *Dispatcher) Register() {
	d.register.Do(func() {
		d.cfg.Runtime.Handle(TypeRequeue, asynq.HandlerFunc(d.handleRequeue), d.cfg.Backoff)
		d.cfg.Runtime.Handle(TypeReplay, asynq.HandlerFunc(d.handleReplay), d.cfg.Backoff)
	})
}

// FollowUp is what AfterFail scheduled.
type FollowUp struct {
	Requeued bool      // a requeue is scheduled (now or by an earlier call)
	DLQ      bool      // the dead letter has its archived replay task and durable record
	RetryAt  time.Time // when the requeue runs (approximately, for an earlier call's)
	TaskID   string    // the Asynq task id of the follow-up
}

// AfterFail schedules the follow-up of a FAIL recorded by Ledger.Fail: the
// requeue after the backoff (res.Retry) or the archived replay task and
// durable record of a dead letter (res.DLQ). It is idempotent: a second call
// with the same result schedules nothing more.
//
// An error (CodeUnavailable: Redis) means the follow-up may not be in
// place; the ledger's transition stands, the call may be repeated, and the
// retry-overdue and DLQ-repair jobs catch it otherwise.
func (d *Dispatcher) AfterFail(ctx context.Context, res tasks.FailResult) (FollowUp, error) {
	const op = "taskjobs.AfterFail"
	t := res.Task
	switch {
	case t.QueueID == "":
		return FollowUp{}, &contracts.Error{Code: contracts.CodeInvalid, Op: op, Message: "fail result without a task"}
	case res.Retry == res.DLQ:
		return FollowUp{}, &contracts.Error{Code: contracts.CodeInvalid, Op: op,
			Message: "fail result must be exactly one of retry and dlq", Details: map[string]any{"queue_id": t.QueueID}}
	case res.DLQ:
		id, _, err := d.deadLetter(ctx, t, viaFail, true)
		if err != nil {
			return FollowUp{TaskID: id}, unavailable(op, t.QueueID, err)
		}
		return FollowUp{DLQ: true, TaskID: id}, nil
	}
	delay := d.backoff(t.Attempts)
	id := RequeueTaskID(t)
	payload, err := encode(requeuePayload{QueueID: t.QueueID, Attempts: t.Attempts})
	if err != nil {
		return FollowUp{}, err
	}
	opts := []asynq.Option{asynq.TaskID(id), asynq.Queue(d.cfg.Queue), asynq.ProcessIn(delay),
		asynq.MaxRetry(requeueMaxRetry), asynq.Timeout(handlerTimeout)}
	if d.cfg.Retention > 0 {
		opts = append(opts, asynq.Retention(d.cfg.Retention))
	}
	_, err = d.cfg.Runtime.Client.EnqueueContext(ctx, asynq.NewTask(TypeRequeue, payload), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return FollowUp{TaskID: id}, unavailable(op, t.QueueID, err)
	}
	at := d.cfg.Now().Add(delay)
	if err == nil {
		d.log.Info("task failed; requeue scheduled", "queue_id", t.QueueID, "attempts", t.Attempts,
			"max_attempts", t.MaxAttempts, "delay", delay, "asynq_task_id", id)
	}
	return FollowUp{Requeued: true, RetryAt: at, TaskID: id}, nil
}

// Replay brings a dead letter back to PENDING (POST /queue/{id}/replay):
// Ledger.Replay with req, then the archived replay task and the durable
// record are removed. The ledger's errors are returned as they are; a
// failure to clean up is logged (a leftover archived task replays nothing
// when run).
func (d *Dispatcher) Replay(ctx context.Context, queueID string, req contracts.RequeueRequest) (contracts.Task, error) {
	// Read first: the replay clears claimed_at, which names the archived task.
	before, err := d.cfg.Ledger.Get(ctx, queueID)
	if err != nil {
		return contracts.Task{}, err
	}
	t, err := d.cfg.Ledger.Replay(ctx, queueID, req)
	if err != nil {
		return t, err
	}
	d.m.replayed.WithLabelValues(viaAPI).Inc()
	id := DeadLetterTaskID(before)
	d.forget(ctx, id)
	d.log.Info("dead letter replayed", "queue_id", t.QueueID, "priority", t.Priority, "asynq_task_id", id, "via", viaAPI)
	return t, nil
}

// backoff is the delay before the requeue that follows failed attempt n
// (1-based).
func (d *Dispatcher) backoff(attempts int) time.Duration {
	return max(d.cfg.Backoff.RetryDelay(max(attempts-1, 0), nil, asynq.NewTask(TypeRequeue, nil)), 0)
}

// maxBackoff is the longest requeue delay any task can get.
func (d *Dispatcher) maxBackoff() time.Duration {
	var m time.Duration
	for n := 1; n <= contracts.MaxMaxAttempts; n++ {
		m = max(m, d.backoff(n))
	}
	return m
}

func unavailable(op, queueID string, err error) error {
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "could not schedule the task's follow-up",
		Details: map[string]any{"queue_id": queueID}, Err: err}
}

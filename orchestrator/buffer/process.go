package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// completion is the task result of a completed message.
type completion struct {
	Result              json.RawMessage `json:"result,omitempty"`
	ResultTruncated     bool            `json:"resultTruncated,omitempty"`
	ProcessingStartedAt time.Time       `json:"processingStartedAt"`
	CompletedAt         time.Time       `json:"completedAt"`
	WorkerID            string          `json:"workerId"`
	AttemptCount        int             `json:"attemptCount"`
}

// appendJSON appends what json.Marshal writes for r, without its
// reflection (worker is r.WorkerID already encoded): every completed
// message writes one (a fifth of the completion's CPU in a profile of the
// buffer's processing).
// TestCompletionAppendJSONMatchesMarshal holds the two byte-identical.
func (r completion) appendJSON(dst, worker []byte) []byte {
	dst = append(dst, '{')
	if len(r.Result) > 0 {
		dst = append(append(dst, `"result":`...), r.Result...)
		dst = append(dst, ',')
	}
	if r.ResultTruncated {
		dst = append(dst, `"resultTruncated":true,`...)
	}
	dst = appendTimeJSON(append(dst, `"processingStartedAt":`...), r.ProcessingStartedAt)
	dst = appendTimeJSON(append(dst, `,"completedAt":`...), r.CompletedAt)
	dst = append(append(dst, `,"workerId":`...), worker...)
	dst = strconv.AppendInt(append(dst, `,"attemptCount":`...), int64(r.AttemptCount), 10)
	return append(dst, '}')
}

// appendTimeJSON is time.Time's MarshalJSON appended to dst (a time whose
// year is out of JSON's range writes null, where Marshal would fail).
func appendTimeJSON(dst []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	return append(t.AppendFormat(dst, time.RFC3339Nano), '"')
}

// TruncatedResult is what Process returns when the work is done but its
// result is over the handler's bound (a declared target's 2xx answer over
// 1 MiB): the message completes with Value (the beginning of the result)
// and resultTruncated set, never dead-lettered for the size of an answer
// to work that was done.
type TruncatedResult struct {
	Value any
	// Size is the whole result's size in bytes when known, else -1.
	Size int64
}

// finalError is the error a message leaves the buffer with: asynq archives
// it (SkipRetry) and the runtime records the dead letter.
type finalError struct {
	code  string
	cause error
}

func (e *finalError) Error() string { return e.code + ": " + e.cause.Error() }
func (e *finalError) Unwrap() []error {
	return []error{e.cause, asynq.SkipRetry}
}

// processor runs one handler type's messages (seed PROCESS).
type processor struct {
	b *Buffer
	h Handler
	// completedIn and failedIn are the run-time histogram's children of
	// the type, looked up once.
	completedIn, failedIn prometheus.Observer
	// bh counts the type's messages being processed on this instance
	// (every server's workers share the processor).
	bh         *bulkhead
	overCapped prometheus.Counter
	capper     ConcurrencyCapper // nil: Config.TypeConcurrency
	defaultCap int32
	inline     bool // the handler honours its context: called on the worker's goroutine
}

// bulkheadDelay is how long a message deferred by its type's bulkhead
// waits before it is tried again (plus Asynq's forwarder tick).
const bulkheadDelay = 500 * time.Millisecond

// bulkheadWait is how long a message dequeued while its type has its cap
// in flight may wait for a place before it is deferred. A fast type's
// places free within microseconds, but on busy cores a few workers (or
// the goroutines of handlers that may ignore their context) waiting to be
// scheduled held a place: a no-op type at the default cap, its calls then
// each on a goroutine of their own, deferred 13 of 10,000 messages, each
// then 0.5–1.5 s late. The wait is only taken while the type has left a
// place within the last bulkheadWait: a hanging type's extra messages,
// whose places are not coming back, are deferred at once as before.
const bulkheadWait = 5 * time.Millisecond

// bulkhead caps the messages of one type in flight on this instance.
type bulkhead struct {
	inflight atomic.Int32
	lastLeft atomic.Int64     // when a place was last left, Unix ns (0: never)
	freed    chan struct{}    // a token when a place is left: wakes one waiter
	now      func() time.Time // the buffer's clock
}

func newBulkhead(now func() time.Time) *bulkhead {
	return &bulkhead{freed: make(chan struct{}, 1), now: now}
}

// enter takes a place under limit. When none is free and the type left
// one within wait, it waits up to wait for one to be left; false when
// none was (or ctx ended first).
func (b *bulkhead) enter(ctx context.Context, limit int32, wait time.Duration) bool {
	if b.try(limit) {
		return true
	}
	if last := b.lastLeft.Load(); last == 0 || b.now().UnixNano()-last > int64(wait) {
		return false // nothing leaves: a slow or hanging type
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-b.freed:
			if b.try(limit) {
				return true
			}
		case <-timer.C:
			return b.try(limit)
		case <-ctx.Done():
			return false
		}
	}
}

func (b *bulkhead) try(limit int32) bool {
	if b.inflight.Add(1) > limit {
		b.inflight.Add(-1)
		return false
	}
	return true
}

// leave gives a place back and wakes a waiter, if any.
func (b *bulkhead) leave() {
	b.inflight.Add(-1)
	b.lastLeft.Store(b.now().UnixNano())
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

func newProcessor(b *Buffer, h Handler) *processor {
	p := &processor{b: b, h: h,
		completedIn: b.metrics.duration.WithLabelValues(h.Type(), "completed"),
		failedIn:    b.metrics.duration.WithLabelValues(h.Type(), "failed"),
		overCapped:  b.metrics.bulkhead.WithLabelValues(h.Type()),
		defaultCap:  int32(b.cfg.TypeConcurrency), bh: newBulkhead(b.cfg.Now), inline: honoursContext(h)}
	p.capper, _ = h.(ConcurrencyCapper)
	return p
}

// enter takes a place in the type's bulkhead; false when its cap stayed
// in flight for bulkheadWait.
func (p *processor) enter(ctx context.Context) bool {
	limit := p.defaultCap
	if p.capper != nil {
		if n := p.capper.MaxConcurrency(); n > 0 {
			limit = int32(n)
		}
	}
	return p.bh.enter(ctx, limit, bulkheadWait)
}

// ProcessTask implements asynq.Handler.
func (p *processor) ProcessTask(ctx context.Context, t *asynq.Task) error {
	b := p.b
	msg, sh, err := p.message(ctx, t)
	if err != nil {
		return &finalError{code: string(contracts.CodeInvalidMessage), cause: err}
	}
	// The bulkhead counts the handler's call only, not the completion's
	// writes, and a message over the cap waits bulkheadWait for a place:
	// a fast type under load is not deferred by it.
	if !p.enter(ctx) {
		// No attempt is counted and nothing is written: the message
		// comes back after bulkheadDelay, as a deferral.
		p.overCapped.Inc()
		return asynqrt.Defer(bulkheadDelay, "BULKHEAD_FULL")
	}
	cb := b.circuits.get(p.h.Type())
	start := b.cfg.Now().UTC()
	msg.ProcessingStartedAt = &start
	res, err := cb.Execute(func() (any, error) { return p.run(ctx, msg) })
	p.bh.leave()
	if isBreakerRefusal(err) {
		return p.deferred(ctx, msg)
	}
	var de *asynqrt.DeferError
	if errors.As(err, &de) {
		// The handler deferred the message (a declared type removed
		// from its file, within the grace): no attempt, nothing written.
		return err
	}
	took := b.cfg.Now().Sub(start).Seconds()
	if err == nil {
		p.completedIn.Observe(took)
		return p.completed(ctx, t, msg, sh, res, start)
	}
	p.failedIn.Observe(took)
	return p.failed(ctx, msg, sh, err)
}

// message decodes the task into the seed's message and the shard of its
// place.
func (p *processor) message(ctx context.Context, t *asynq.Task) (*Message, int, error) {
	var env envelope
	if err := decodeEnvelope(t.Payload(), &env); err != nil {
		return nil, 0, fmt.Errorf("undecodable task payload: %w", err)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	return &Message{
		MessageID: env.MessageID, Type: t.Type(), Priority: env.Priority, State: contracts.BufferProcessing,
		Payload: env.Payload, Metadata: env.Metadata, AttemptCount: retried + 1, MaxRetries: env.MaxRetries,
		WorkerID: p.b.cfg.WorkerID, IdempotencyKey: env.IdempotencyKey, CreatedAt: env.CreatedAt,
		UpdatedAt: p.b.cfg.Now().UTC(), Errors: []contracts.BufferError{},
	}, env.Shard, nil
}

// run validates, calls the hooks and Process within Timeout().
func (p *processor) run(ctx context.Context, msg *Message) (result any, err error) {
	if err := p.h.Validate(msg.Payload); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			err = &ValidationError{Field: "payload", Reason: err.Error()}
		}
		return nil, err
	}
	if err := p.h.OnBeforeProcess(ctx, msg); err != nil {
		return nil, fmt.Errorf("onBeforeProcess: %w", err)
	}
	limit := p.h.Timeout()
	tctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var a outcome
	if p.inline {
		a = p.call(tctx, msg)
	} else {
		a = p.detached(ctx, tctx, msg)
	}
	if a.err != nil {
		if tctx.Err() != nil && ctx.Err() == nil {
			return nil, &timeoutError{after: limit.String()}
		}
		return nil, a.err
	}
	if err := p.h.OnAfterProcess(ctx, msg, a.v); err != nil {
		return nil, fmt.Errorf("onAfterProcess: %w", err)
	}
	return a.v, nil
}

// outcome is what one Process call gave.
type outcome struct {
	v   any
	err error
}

// call is one Process call on this goroutine, a panic recovered as its
// error.
func (p *processor) call(ctx context.Context, msg *Message) (a outcome) {
	defer func() {
		if r := recover(); r != nil {
			a = outcome{err: newPanicError(r, debug.Stack())}
		}
	}()
	v, err := p.h.Process(ctx, msg)
	return outcome{v, err}
}

// detached is call on a goroutine of its own, for a handler that may
// ignore its context: past tctx's deadline the attempt is over (the
// goroutine is left to finish) and the worker is free. ctx done first
// (shutdown, asynq's deadline) answers ctx's error.
func (p *processor) detached(ctx, tctx context.Context, msg *Message) outcome {
	done := make(chan outcome, 1)
	go func() { done <- p.call(tctx, msg) }()
	select {
	case a := <-done:
		return a
	case <-tctx.Done():
		if ctx.Err() != nil {
			return outcome{err: ctx.Err()}
		}
		return outcome{err: tctx.Err()}
	}
}

// completed writes the result (seed 4a).
func (p *processor) completed(ctx context.Context, t *asynq.Task, msg *Message, sh int, res any, start time.Time) error {
	b := p.b
	rec := completion{ProcessingStartedAt: start, CompletedAt: b.cfg.Now().UTC(), WorkerID: b.cfg.WorkerID, AttemptCount: msg.AttemptCount}
	if tr, ok := res.(TruncatedResult); ok {
		rec.ResultTruncated, res = true, tr.Value
	}
	if res != nil {
		raw, err := json.Marshal(res)
		if err != nil {
			return &finalError{code: "RESULT_NOT_JSON", cause: err}
		}
		rec.Result = raw
	}
	body := rec.appendJSON(make([]byte, 0, 160+len(rec.Result)), b.workerID)
	if err := b.writeResult(ctx, t, body); err != nil {
		// The work is done; asynq would run it again if we failed here.
		b.log.Warn("buffer: could not write a message result", "message_id", msg.MessageID, "err", err)
	}
	b.depth.leave(sh, 1)
	if msg.IdempotencyKey != "" {
		b.expireIdem(ctx, msg.IdempotencyKey, msg.MessageID, b.cfg.CompletedRetention)
	}
	b.emit(contracts.BufferEvent{Event: EventCompleted, MessageID: msg.MessageID, Type: msg.Type, Priority: msg.Priority, Attempt: msg.AttemptCount})
	return nil
}

// resultHolder is the ResultWriter of the Asynq patched in third_party/asynq
// (PATCH.md): the result is written by the completion's own script.
type resultHolder interface {
	WriteOnComplete(data []byte) (int, error)
}

// writeResult stores a completed task's result: with the patched Asynq,
// held for the completion script that also dequeues the next task (no
// Redis call of its own); else what Asynq's ResultWriter.Write does (HSET
// of the task hash's "result" field, refused once the task's context is
// done), through the auto-pipelined client, so the concurrent workers'
// writes share round trips instead of taking a pooled connection each.
func (b *Buffer) writeResult(ctx context.Context, t *asynq.Task, body []byte) error {
	if rw := t.ResultWriter(); rw != nil {
		if h, ok := any(rw).(resultHolder); ok {
			_, err := h.WriteOnComplete(body)
			return err
		}
	}
	q, okQ := asynq.GetQueueName(ctx)
	id, okID := asynq.GetTaskID(ctx)
	if b.ap == nil || !okQ || !okID {
		_, err := t.ResultWriter().Write(body)
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("buffer: write result: %w", err)
	}
	if err := b.ap.HSet(ctx, taskKey(q, id), "result", body).Err(); err != nil {
		return fmt.Errorf("buffer: write result: %w", err)
	}
	return nil
}

// failed is the seed's failure path (4b).
func (p *processor) failed(ctx context.Context, msg *Message, sh int, err error) error {
	b := p.b
	code := ErrorCode(err)
	var ve *ValidationError
	var te *timeoutError
	retry := !errors.As(err, &ve) && p.h.OnError(err, msg)
	if retry && errors.As(err, &te) && !p.h.Idempotent() {
		retry = false // the timed-out attempt may have taken effect
	}
	final := !retry || msg.AttemptCount > msg.MaxRetries
	rec := contracts.BufferError{Message: err.Error(), Code: code, Timestamp: b.cfg.Now().UTC(), AttemptNumber: msg.AttemptCount}
	var pe *PanicError
	if errors.As(err, &pe) {
		rec.Stack = pe.Stack
	}
	b.recordError(ctx, msg, rec)
	willRetry := !final
	b.emit(contracts.BufferEvent{Event: EventFailed, MessageID: msg.MessageID, Type: msg.Type, Priority: msg.Priority,
		Attempt: msg.AttemptCount, WillRetry: &willRetry, Code: code, Error: err.Error()})
	if !final {
		return fmt.Errorf("%s: %w", code, err)
	}
	if retry {
		code = string(contracts.CodeMaxRetriesExceeded)
	}
	b.depth.leave(sh, 1)
	if msg.IdempotencyKey != "" {
		b.expireIdem(ctx, msg.IdempotencyKey, msg.MessageID, b.cfg.FailedRetention)
	}
	b.emit(contracts.BufferEvent{Event: EventDLQ, MessageID: msg.MessageID, Type: msg.Type, Priority: msg.Priority,
		Attempt: msg.AttemptCount, Code: code, Error: err.Error()})
	b.afterDeadLetter(ctx)
	return &finalError{code: code, cause: err}
}

// deferred re-schedules a message its open breaker refused, burning no
// attempt (CIRCUIT_OPEN recorded).
func (p *processor) deferred(ctx context.Context, msg *Message) error {
	b := p.b
	b.recordError(ctx, msg, contracts.BufferError{Message: "circuit breaker for " + msg.Type + " is open; re-scheduled without an attempt",
		Code: string(contracts.CodeCircuitOpen), Timestamp: b.cfg.Now().UTC(), AttemptNumber: msg.AttemptCount})
	wait := b.circuits.settings(msg.Type).Timeout / 2
	if wait < 100*time.Millisecond {
		wait = 100 * time.Millisecond
	}
	return asynqrt.Defer(wait, string(contracts.CodeCircuitOpen))
}

// recordError appends to the message's errors array (kept the failed
// retention) in one MULTI.
func (b *Buffer) recordError(ctx context.Context, msg *Message, e contracts.BufferError) {
	raw, _ := json.Marshal(e) // BufferError always marshals
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	k := errKey(b.cfg.KeyPrefix, msg.MessageID)
	pipe := b.cfg.Redis.TxPipeline()
	pipe.RPush(wctx, k, raw)
	pipe.LTrim(wctx, k, -100, -1)
	pipe.PExpire(wctx, k, b.cfg.FailedRetention)
	if _, err := pipe.Exec(wctx); err != nil {
		b.log.Warn("buffer: could not record a message error", "message_id", msg.MessageID, "err", err)
	}
}

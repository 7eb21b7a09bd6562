package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
)

// Enqueued is a message accepted by the buffer.
type Enqueued struct {
	MessageID string
	Priority  contracts.BufferPriority
	Queue     string
}

// envelope is the task payload: the enqueue-time message.
type envelope struct {
	MessageID      string                   `json:"messageId"`
	Priority       contracts.BufferPriority `json:"priority"`
	Payload        json.RawMessage          `json:"payload"`
	Metadata       contracts.BufferMetadata `json:"metadata"`
	MaxRetries     int                      `json:"maxRetries"`
	IdempotencyKey string                   `json:"idempotencyKey,omitempty"`
	CreatedAt      time.Time                `json:"createdAt"`
}

// prepared is a validated message ready to enqueue.
type prepared struct {
	env     envelope
	typ     string
	queue   string
	timeout time.Duration
}

func invalid(field, format string, args ...any) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeInvalidMessage, Op: "buffer.Enqueue",
		Message: fmt.Sprintf(format, args...), Details: map[string]any{"field": field}}
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

// prepare validates req (seed ENQUEUE "Validate input").
func (b *Buffer) prepare(req contracts.BufferEnqueueRequest) (prepared, error) {
	if req.Type == "" {
		return prepared{}, invalid("type", "type is required")
	}
	h, ok := b.handlers.get(req.Type)
	if !ok {
		return prepared{}, &contracts.Error{Code: contracts.CodeHandlerNotFound, Op: "buffer.Enqueue",
			Message: fmt.Sprintf("no handler registered for type %q", req.Type), Details: map[string]any{"field": "type", "type": req.Type}}
	}
	pri := contracts.BufferPriorityNormal
	if req.Priority != nil {
		if pri = *req.Priority; !pri.Valid() {
			return prepared{}, invalid("priority", "priority must be 0 (CRITICAL) to 3 (LOW), got %d", pri)
		}
	}
	id := req.MessageID
	if id == "" {
		id = uuid.NewString()
	} else if !validID(id) {
		return prepared{}, invalid("messageId", "messageId must be 1–128 of [A-Za-z0-9._:-]")
	}
	if req.IdempotencyKey != "" && len(req.IdempotencyKey) > 256 {
		return prepared{}, invalid("idempotencyKey", "idempotencyKey must be at most 256 bytes")
	}
	if len(req.Payload) > b.cfg.MaxPayload {
		return prepared{}, invalid("payload", "payload is %d bytes; the limit is %d", len(req.Payload), b.cfg.MaxPayload)
	}
	maxR := h.MaxRetries()
	if maxR < 0 {
		maxR = b.cfg.DefaultMaxRetries
	}
	if req.MaxRetries != nil {
		if *req.MaxRetries < 0 || *req.MaxRetries > 100 {
			return prepared{}, invalid("maxRetries", "maxRetries must be 0..100, got %d", *req.MaxRetries)
		}
		maxR = *req.MaxRetries
	}
	if err := h.Validate(req.Payload); err != nil {
		var ve *ValidationError
		field := "payload"
		if errors.As(err, &ve) && ve.Field != "" {
			field = ve.Field
		}
		return prepared{}, invalid(field, "%s", err.Error())
	}
	return prepared{
		env: envelope{MessageID: id, Priority: pri, Payload: req.Payload, Metadata: req.Metadata,
			MaxRetries: maxR, IdempotencyKey: req.IdempotencyKey, CreatedAt: b.cfg.Now().UTC()},
		typ: req.Type, queue: QueueFor(pri), timeout: h.Timeout(),
	}, nil
}

// admit reports SHUTDOWN_IN_PROGRESS, and registers an enqueue in progress.
func (b *Buffer) admit() error {
	b.gate.Lock()
	defer b.gate.Unlock()
	if b.State() != StateRunning {
		return &contracts.Error{Code: contracts.CodeShutdownInProgress, Op: "buffer.Enqueue",
			Message: "the work buffer is " + b.State() + "; enqueue is refused"}
	}
	b.inflight.Add(1)
	return nil
}

// capacity checks backpressure for n more messages.
func (b *Buffer) capacity(ctx context.Context, n int64) error {
	d, err := b.depth.Current(ctx)
	if err != nil {
		return persistence("buffer.Enqueue", err)
	}
	if d+n > b.cfg.MaxQueueSize {
		return &contracts.Error{Code: contracts.CodeBufferQueueFull, Op: "buffer.Enqueue",
			Message: fmt.Sprintf("the work buffer holds %d messages; the limit is %d", d, b.cfg.MaxQueueSize),
			Details: map[string]any{"depth": d, "maxQueueSize": b.cfg.MaxQueueSize, "retryAfterSeconds": 1}}
	}
	return nil
}

func persistence(op string, err error) *contracts.Error {
	return &contracts.Error{Code: contracts.CodePersistenceFailure, Op: op, Err: err,
		Message: "the work buffer's store (Redis) failed; try again"}
}

// Enqueue validates, checks idempotency and capacity, and enqueues one
// message (seed ENQUEUE).
func (b *Buffer) Enqueue(ctx context.Context, req contracts.BufferEnqueueRequest) (Enqueued, error) {
	if err := b.admit(); err != nil {
		return Enqueued{}, err
	}
	defer b.inflight.Done()
	p, err := b.prepare(req)
	if err != nil {
		return Enqueued{}, err
	}
	if err := b.capacity(ctx, 1); err != nil {
		return Enqueued{}, err
	}
	return b.put(ctx, p)
}

// EnqueueBatch enqueues up to MaxBatch messages concurrently; results are
// in request order, each an Enqueued or an error.
func (b *Buffer) EnqueueBatch(ctx context.Context, reqs []contracts.BufferEnqueueRequest) ([]Enqueued, []error, error) {
	if len(reqs) > MaxBatch {
		return nil, nil, invalid("messages", "a batch holds at most %d messages, got %d", MaxBatch, len(reqs))
	}
	if err := b.admit(); err != nil {
		return nil, nil, err
	}
	defer b.inflight.Done()
	out, errs := make([]Enqueued, len(reqs)), make([]error, len(reqs))
	ps := make([]prepared, len(reqs))
	valid := 0
	for i, r := range reqs {
		if ps[i], errs[i] = b.prepare(r); errs[i] == nil {
			valid++
		}
	}
	if err := b.capacity(ctx, int64(valid)); err != nil {
		return nil, nil, err
	}
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range ps {
		if errs[i] != nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = b.put(ctx, ps[i])
		}(i)
	}
	wg.Wait()
	return out, errs, nil
}

// put claims the idempotency key and enqueues the task.
func (b *Buffer) put(ctx context.Context, p prepared) (Enqueued, error) {
	id := p.env.MessageID
	if k := p.env.IdempotencyKey; k != "" {
		orig, err := claimIdemScript.Run(ctx, b.cfg.Redis, []string{idemKey(b.cfg.KeyPrefix, k)}, id).Text()
		if err != nil {
			return Enqueued{}, persistence("buffer.Enqueue", err)
		}
		if orig != "" {
			return Enqueued{}, duplicate(orig, "idempotencyKey")
		}
	}
	body, err := json.Marshal(p.env)
	if err != nil {
		return Enqueued{}, fmt.Errorf("buffer: encode message: %w", err)
	}
	_, err = b.rt.Client.EnqueueContext(ctx, asynq.NewTask(p.typ, body), asynq.TaskID(id), asynq.Queue(p.queue),
		asynq.MaxRetry(p.env.MaxRetries), asynq.Timeout(p.timeout+10*time.Second), asynq.Retention(b.cfg.CompletedRetention))
	if err != nil {
		if k := p.env.IdempotencyKey; k != "" {
			b.releaseIdem(context.WithoutCancel(ctx), k, id, 0)
		}
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			return Enqueued{}, duplicate(id, "messageId")
		}
		return Enqueued{}, persistence("buffer.Enqueue", err)
	}
	b.depth.Add(1)
	b.emit(contracts.BufferEvent{Event: EventEnqueued, MessageID: id, Type: p.typ, Priority: p.env.Priority})
	return Enqueued{MessageID: id, Priority: p.env.Priority, Queue: p.queue}, nil
}

func duplicate(orig, field string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeDuplicateMessage, Op: "buffer.Enqueue",
		Message: "a message with this " + field + " is already in the buffer: " + orig,
		Details: map[string]any{"messageId": orig, "field": field}}
}

// releaseIdem deletes (ttl 0) or times out an idempotency key that still
// names id.
func (b *Buffer) releaseIdem(ctx context.Context, key, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := releaseIdemScript.Run(ctx, b.cfg.Redis, []string{idemKey(b.cfg.KeyPrefix, key)}, id, strconv.FormatInt(ttl.Milliseconds(), 10)).Err()
	if err != nil {
		b.log.Warn("buffer: could not release an idempotency key", "message_id", id, "err", err)
	}
}

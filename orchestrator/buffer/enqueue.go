package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

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
	// Shard is the shard whose depth counter holds the message's place
	// (0 with one shard, then omitted: the payload of before), so that
	// its finish is subtracted there.
	Shard int `json:"shard,omitempty"`
}

// deferHeadroom is how many retries more than the message's own budget
// Asynq is told. The buffer decides a message's last attempt itself
// (processor.failed: AttemptCount > MaxRetries, then SkipRetry), but
// Asynq archives a task whose retries are spent whatever the error — a
// deferral too (CIRCUIT_OPEN, which costs no attempt). Without the
// headroom a message meeting an open breaker on its last retry, or a
// replayed one, was dead-lettered at once, without its DLQ record (the
// runtime writes none for a deferral). The message's budget stays
// env.MaxRetries, which Get and the DLQ listing report.
const deferHeadroom = 1

// prepared is a validated message ready to enqueue.
type prepared struct {
	env   envelope
	typ   string
	queue string
	// visibility is the Asynq task's timeout (visibility).
	visibility time.Duration
	ownID      bool // the client chose the messageId: it is claimed
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
		id = ids.next()
	} else if !validID(id) {
		return prepared{}, invalid("messageId", "messageId must be 1–128 of [A-Za-z0-9._:-]")
	}
	if req.IdempotencyKey != "" && len(req.IdempotencyKey) > 256 {
		return prepared{}, invalid("idempotencyKey", "idempotencyKey must be at most 256 bytes")
	}
	if !ValidHeaderValue(req.Metadata.CorrelationID) {
		// It is sent as X-Correlation-Id: a CR or LF would make every
		// attempt's request unbuildable.
		e := invalid("metadata.correlationId", "metadata.correlationId is sent as the X-Correlation-Id header: it may not hold CR, LF or another control character")
		e.Details["reason"] = "invalid_header_value"
		return prepared{}, e
	}
	if len(req.Payload) > b.cfg.MaxPayload {
		return prepared{}, invalid("payload", "payload is %d bytes; the limit is %d", len(req.Payload), b.cfg.MaxPayload)
	}
	maxR := h.MaxRetries()
	if maxR < 0 {
		maxR = max(b.cfg.DefaultMaxRetries, 0) // NoRetries
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
		typ: req.Type, queue: QueueFor(pri), visibility: visibility(h), ownID: req.MessageID != "",
	}, nil
}

// admit reports SHUTDOWN_IN_PROGRESS, and registers an enqueue in progress.
func (b *Buffer) admit() error {
	b.gate.RLock() // enqueues admit concurrently; a state change waits for them
	defer b.gate.RUnlock()
	if b.State() != StateRunning {
		return &contracts.Error{Code: contracts.CodeShutdownInProgress, Op: "buffer.Enqueue",
			Message: "the work buffer is " + b.State() + "; enqueue is refused"}
	}
	b.inflight.Add(1)
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
	unkeyed := 0 // items with a claim (key or own id) are admitted one by one
	for i, r := range reqs {
		if ps[i], errs[i] = b.prepare(r); errs[i] == nil && !ps[i].claims() {
			unkeyed++
		}
	}
	got, err := b.reserve(ctx, unkeyed)
	if err != nil {
		return nil, nil, err
	}
	for i := range ps { // each unkeyed item takes a place of the shards reserve answered
		if errs[i] == nil && !ps[i].claims() {
			for got[0].n == 0 {
				got = got[1:]
			}
			got[0].n--
			ps[i].env.Shard = got[0].shard
		}
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
			if ps[i].claims() {
				out[i], errs[i] = b.put(ctx, ps[i])
			} else {
				out[i], errs[i] = b.enqueueAdmitted(ctx, ps[i], claim{id: ps[i].env.MessageID, queue: ps[i].queue, at: b.cfg.Now()})
			}
		}(i)
	}
	wg.Wait()
	return out, errs, nil
}

// fullAt is QUEUE_FULL after a script answered a shard full at depth v:
// with one shard that is the buffer's depth, with several the sum of the
// shards' last figures.
func (b *Buffer) fullAt(v string) *contracts.Error {
	d, _ := strconv.ParseInt(v, 10, 64)
	if b.shards.N() > 1 {
		d = b.depth.Value()
	}
	return b.full(d)
}

// full is QUEUE_FULL.
func (b *Buffer) full(depth int64) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeBufferQueueFull, Op: "buffer.Enqueue",
		Message: fmt.Sprintf("the work buffer holds %d messages; the limit is %d", depth, b.cfg.MaxQueueSize),
		Details: map[string]any{"depth": depth, "maxQueueSize": b.cfg.MaxQueueSize, "retryAfterSeconds": 1}}
}

// batchPlaces is places a batch reserved in one shard.
type batchPlaces struct{ shard, n int }

// reserve admits n messages without idempotency keys (a batch's places),
// all or none: split evenly over the shards (the first in round-robin
// order take the remainder), one reserveScript call per shard. A shard
// that is full refuses the batch: the places taken in the others are
// given back and the batch answers QUEUE_FULL.
func (b *Buffer) reserve(ctx context.Context, n int) ([]batchPlaces, error) {
	if n == 0 {
		return nil, nil
	}
	order := b.depth.rot.Order(b.shards.N())
	got := make([]batchPlaces, 0, len(order))
	for j, i := range order {
		k := int(shareOf(int64(n), j, len(order)))
		if k == 0 {
			continue
		}
		g := b.depth.gauges[i]
		res, err := reserveScript.Run(ctx, b.cfg.Redis, []string{g.key}, k, g.max).Int64Slice()
		if err == nil && len(res) != 2 {
			err = fmt.Errorf("%d values, want 2", len(res))
		}
		if err != nil {
			b.unreserve(ctx, got)
			return nil, persistence("buffer.Enqueue", fmt.Errorf("reserve: %w", err))
		}
		g.set(res[1])
		if res[0] == reserveFull {
			b.unreserve(ctx, got)
			return nil, b.fullAt(strconv.FormatInt(res[1], 10))
		}
		got = append(got, batchPlaces{shard: i, n: k})
	}
	return got, nil
}

// unreserve gives back the places a refused batch reserved.
func (b *Buffer) unreserve(ctx context.Context, got []batchPlaces) {
	for _, r := range got {
		b.giveBackClaims(ctx, r.shard, r.n, "", "", claim{})
	}
}

// admitAnywhere admits a message without claims in any shard with room:
// the shards in round-robin order, the next one when a shard is full, so
// such a message is refused only when every shard is full.
func (b *Buffer) admitAnywhere(ctx context.Context, p prepared) (prepared, claim, error) {
	c := claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()}
	var last string
	for _, sh := range b.depth.rot.Order(b.shards.N()) {
		x := &admission{claim: c}
		if err := b.admitters[sh].admit(ctx, x); err != nil {
			return p, c, persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
		}
		if x.err != nil {
			return p, c, x.err
		}
		if x.status == admitted {
			p.env.Shard = sh
			return p, c, nil
		}
		last = x.val // admitFull: the next shard may have room
	}
	return p, c, b.fullAt(last)
}

// put admits and enqueues one message: without a key, on a place of
// this instance's credit when it has one (no round trip), else through
// the admission script.
func (b *Buffer) put(ctx context.Context, p prepared) (Enqueued, error) {
	if !p.claims() {
		if sh := b.depth.take(); sh >= 0 {
			p.env.Shard = sh
			return b.enqueueAdmitted(ctx, p, claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()})
		}
	}
	if p.ownID {
		if err := b.idFreeElsewhere(ctx, p); err != nil {
			return Enqueued{}, err
		}
	}
	p, c, err := b.admitOne(ctx, p)
	if err != nil {
		return Enqueued{}, err
	}
	return b.enqueueAdmitted(ctx, p, c)
}

// idFreeElsewhere refuses a client-chosen messageId that a message of
// another queue already has without a claim: a generated id (the claim
// :id: covers client-chosen ones only; its own queue's task id is
// Asynq's, checked when the task is written). Without it, a client naming
// another's generated id got a second message under it, and GET
// /messages/{id} answered the first queue's (a dead letter read as the
// other's completion). A read before the admission's script, and safe
// across instances: a generated id exists before anyone can name it, and
// no enqueue generates an id already taken.
func (b *Buffer) idFreeElsewhere(ctx context.Context, p prepared) error {
	cmds := make([]*redis.IntCmd, 0, len(queueNames))
	pipe := b.cfg.Redis.Pipeline()
	for _, q := range queueNames {
		if q != p.queue {
			cmds = append(cmds, pipe.Exists(ctx, taskKey(q, p.env.MessageID)))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return persistence("buffer.Enqueue", err)
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return duplicate(p.env.MessageID, "messageId")
		}
	}
	return nil
}

// enqueueAdmitted hands an admitted message to Asynq. Its claims stay
// unless the message certainly was not and will not be written (it could
// not be encoded): a claim whose task is missing is resumed by the next
// enqueue of its key with the same messageId (admitOne), so keeping it
// never refuses a resend, and dropping it could let a late write of this
// enqueue land beside the resend's message. The place is given back when
// nothing took it: a task id conflict (the message is already there, under
// a resumed claim's place), or an error after which the task is certainly
// absent; the depth resync heals any other miscount.
func (b *Buffer) enqueueAdmitted(ctx context.Context, p prepared, c claim) (Enqueued, error) {
	id := p.env.MessageID
	body, err := p.env.appendJSON(make([]byte, 0, 160+len(p.env.Payload)+len(p.env.IdempotencyKey)))
	if err != nil {
		b.unadmit(ctx, 1, p, c)
		return Enqueued{}, fmt.Errorf("buffer: encode message: %w", err)
	}
	_, err = b.enq.EnqueueContext(ctx, asynq.NewTask(p.typ, body), asynq.TaskID(id), asynq.Queue(p.queue),
		asynq.MaxRetry(p.env.MaxRetries+deferHeadroom), asynq.Timeout(p.visibility), asynq.Retention(b.cfg.CompletedRetention))
	if err != nil {
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			b.giveBackClaims(ctx, p.env.Shard, 1, "", "", claim{})
			return Enqueued{}, duplicate(id, "messageId")
		}
		// After the caller's context ended the enqueue may still be queued in
		// the auto-pipeliner, to be written after an EXISTS on another
		// connection answers "absent": the place stays too (the resync heals it).
		if ctx.Err() == nil && b.taskAbsent(ctx, p) {
			b.giveBackClaims(ctx, p.env.Shard, 1, "", "", claim{})
		}
		return Enqueued{}, persistence("buffer.Enqueue", err)
	}
	b.emit(contracts.BufferEvent{Event: EventEnqueued, MessageID: id, Type: p.typ, Priority: p.env.Priority})
	return Enqueued{MessageID: id, Priority: p.env.Priority, Queue: p.queue}, nil
}

// absentCheck bounds taskAbsent: a healthy Redis answers an EXISTS in
// well under a millisecond; one that cannot answer in this long (paused,
// overloaded) leaves the claims, which the claim check heals, and the
// caller gets its answer by its deadline plus this much.
const absentCheck = 250 * time.Millisecond

// taskAbsent checks once, after an ambiguous enqueue error, whether p's
// task is certainly not in Redis (false when the check fails too).
func (b *Buffer) taskAbsent(ctx context.Context, p prepared) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), absentCheck)
	defer cancel()
	n, err := b.cfg.Redis.Exists(ctx, taskKey(p.queue, p.env.MessageID)).Result()
	return err == nil && n == 0
}

// unadmit gives back n places and p's claims c.
func (b *Buffer) unadmit(ctx context.Context, n int, p prepared, c claim) {
	b.giveBackClaims(ctx, p.env.Shard, n, p.env.IdempotencyKey, p.claimID(), c)
}

// giveBack gives back the place and claims of an admission its caller
// abandoned (all of shard sh: its admitter's).
func (b *Buffer) giveBack(sh int, x *admission) {
	b.giveBackClaims(context.Background(), sh, 1, x.key, x.id, x.claim)
}

package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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
	ownID   bool // the client chose the messageId: it is claimed
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
		typ: req.Type, queue: QueueFor(pri), timeout: h.Timeout(), ownID: req.MessageID != "",
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
	if err := b.reserve(ctx, unkeyed); err != nil {
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

// claims reports whether p's admission claims a key (its idempotency key
// or its client-chosen messageId).
func (p prepared) claims() bool { return p.env.IdempotencyKey != "" || p.ownID }

// claimID is the messageId p claims, "" for a generated one.
func (p prepared) claimID() string {
	if p.ownID {
		return p.env.MessageID
	}
	return ""
}

// claimTTL bounds a claim's life from its admission: the longest a
// message can stay (every retry at the maximum backoff, then the longer
// retention) plus a minute. It is a backstop for claims no finish
// path expires (a task deleted elsewhere, a failed expireIdem, an
// enqueue whose client never retries); a message still pending after it
// is protected by Asynq's task id in its own queue only.
func (b *Buffer) claimTTL() time.Duration {
	return max(b.cfg.CompletedRetention, b.cfg.FailedRetention) + 101*b.cfg.Backoff.Max + time.Minute
}

// claim is an idempotency key's value: who claimed it, where, when.
type claim struct {
	id, queue string
	at        time.Time
}

func (c claim) String() string {
	return c.id + " " + c.queue + " " + strconv.FormatInt(c.at.UnixMilli(), 10)
}

func parseClaim(s string) claim {
	f := strings.Fields(s)
	if len(f) != 3 {
		return claim{id: s} // unreadable: taken over (admitOne)
	}
	ms, _ := strconv.ParseInt(f[2], 10, 64)
	return claim{id: f[0], queue: f[1], at: time.UnixMilli(ms)}
}

// full is QUEUE_FULL.
func (b *Buffer) full(depth int64) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeBufferQueueFull, Op: "buffer.Enqueue",
		Message: fmt.Sprintf("the work buffer holds %d messages; the limit is %d", depth, b.cfg.MaxQueueSize),
		Details: map[string]any{"depth": depth, "maxQueueSize": b.cfg.MaxQueueSize, "retryAfterSeconds": 1}}
}

// reserve admits n messages without idempotency keys (a batch's places).
func (b *Buffer) reserve(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	res, err := reserveScript.Run(ctx, b.cfg.Redis, []string{depthKey(b.cfg.KeyPrefix)}, n, b.cfg.MaxQueueSize).Int64Slice()
	if err != nil || len(res) != 2 {
		return persistence("buffer.Enqueue", fmt.Errorf("reserve: %w", err))
	}
	b.depth.set(res[1])
	if res[0] == reserveFull {
		return b.full(res[1])
	}
	return nil
}

// admitOne admits one message: its place and, with a key, its claim. A
// key already claimed is resolved before anything is answered:
//   - the claimed message's task exists (queued, or retained after it
//     finished): DUPLICATE_MESSAGE naming it, so a 409 always names a
//     message a GET finds;
//   - it does not (an enqueue that died or is still in flight after an
//     uncertain answer: flowgate killed, Redis paused): this enqueue
//     resumes the claim. It takes the claim over with the same messageId
//     and queue, so its enqueue and a late one of the original are the
//     same Asynq task id and only one of them lands (the other is a task
//     id conflict, answered DUPLICATE_MESSAGE naming the message).
//
// An unreadable claim is taken over with p's own messageId. It returns p
// as admitted (its messageId, priority and queue are the claim's when it
// resumed one).
func (b *Buffer) admitOne(ctx context.Context, p prepared) (prepared, claim, error) {
	c := claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()}
	x := &admission{key: p.env.IdempotencyKey, id: p.claimID(), claim: c}
	field := "idempotencyKey"
	for range 3 {
		if err := b.admitter.admit(ctx, x); err != nil {
			return p, c, persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
		}
		if x.err != nil {
			return p, c, x.err
		}
		st, v := x.status, x.val
		switch st {
		case admitted:
			return p, c, nil
		case admitFull:
			d, _ := strconv.ParseInt(v, 10, 64)
			return p, c, b.full(d)
		case admitIDClaimed:
			field = "messageId"
		default: // admitClaimed
			field = "idempotencyKey"
		}
		orig := parseClaim(v)
		live, err := b.claimLive(ctx, orig)
		if err != nil {
			return p, c, err
		}
		if live {
			return p, c, duplicate(orig.id, field)
		}
		if pri, ok := priorityOf(orig.queue); ok && validID(orig.id) {
			b.log.Info("buffer: resuming an unfinished enqueue", "field", field, "key", p.env.IdempotencyKey,
				"message_id", orig.id, "queue", orig.queue)
			p = p.resuming(orig.id, pri)
			c = claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()}
			x.claim, x.id = c, p.claimID()
			if x.id != "" { // the original's own messageId claim, when it had one, holds the same value
				x.takeoverID = v
			}
		} else {
			b.log.Warn("buffer: taking over an unreadable claim", "field", field, "key", p.env.IdempotencyKey, "claim", v, "message_id", c.id)
		}
		if st == admitIDClaimed {
			x.takeoverID = v
		} else {
			x.takeover = v
		}
		x.status, x.val = 0, ""
	}
	return p, c, duplicate(c.id, field) // lost three takeovers in a row to concurrent claimants
}

// resuming is p taking over an unfinished enqueue's messageId id in the
// queue of priority pri.
func (p prepared) resuming(id string, pri contracts.BufferPriority) prepared {
	p.env.MessageID, p.env.Priority, p.queue = id, pri, QueueFor(pri)
	return p
}

// claimLive reports whether a claim stands for a message that exists: its
// task is in its queue. An unreadable claim is not live.
func (b *Buffer) claimLive(ctx context.Context, orig claim) (bool, error) {
	if orig.queue == "" {
		return false, nil
	}
	n, err := b.cfg.Redis.Exists(ctx, taskKey(orig.queue, orig.id)).Result()
	if err != nil {
		return false, persistence("buffer.Enqueue", err)
	}
	return n == 1, nil
}

// put admits and enqueues one message: without a key, on a place of
// this instance's credit when it has one (no round trip), else through
// the admission script.
func (b *Buffer) put(ctx context.Context, p prepared) (Enqueued, error) {
	if !p.claims() && b.depth.credit.take() {
		return b.enqueueAdmitted(ctx, p, claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()})
	}
	p, c, err := b.admitOne(ctx, p)
	if err != nil {
		return Enqueued{}, err
	}
	return b.enqueueAdmitted(ctx, p, c)
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
		asynq.MaxRetry(p.env.MaxRetries), asynq.Timeout(p.timeout+10*time.Second), asynq.Retention(b.cfg.CompletedRetention))
	if err != nil {
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			b.giveBackPlaces(ctx, 1)
			return Enqueued{}, duplicate(id, "messageId")
		}
		// After the caller's context ended the enqueue may still be queued in
		// the auto-pipeliner, to be written after an EXISTS on another
		// connection answers "absent": the place stays too (the resync heals it).
		if ctx.Err() == nil && b.taskAbsent(ctx, p) {
			b.giveBackPlaces(ctx, 1)
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
	b.giveBackClaims(ctx, n, p.env.IdempotencyKey, p.claimID(), c)
}

// giveBackPlaces gives back n places and no claim.
func (b *Buffer) giveBackPlaces(ctx context.Context, n int) {
	b.giveBackClaims(ctx, n, "", "", claim{})
}

// giveBack gives back the place and claims of an admission its caller
// abandoned.
func (b *Buffer) giveBack(x *admission) {
	b.giveBackClaims(context.Background(), 1, x.key, x.id, x.claim)
}

// giveBackClaims gives back n places and the claims c of key and id
// ("" for none).
func (b *Buffer) giveBackClaims(ctx context.Context, n int, key, id string, c claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	keys := []string{depthKey(b.cfg.KeyPrefix)}
	if key != "" {
		keys = append(keys, idemKey(b.cfg.KeyPrefix, key))
	}
	if id != "" {
		keys = append(keys, idKey(b.cfg.KeyPrefix, id))
	}
	d, err := unadmitScript.Run(ctx, b.cfg.Redis, keys, n, c.String()).Int64()
	if err != nil {
		b.log.Warn("buffer: could not give back an admission", "message_id", c.id, "err", err)
		return
	}
	b.depth.set(d)
}

func duplicate(orig, field string) *contracts.Error {
	return &contracts.Error{Code: contracts.CodeDuplicateMessage, Op: "buffer.Enqueue",
		Message: "a message with this " + field + " is already in the buffer: " + orig,
		Details: map[string]any{"messageId": orig, "field": field}}
}

// expireIdem gives a finished message's claim its retention (ttl 0:
// deletes it), only while the claim still names the message.
func (b *Buffer) expireIdem(ctx context.Context, key, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := expireIdemScript.Run(ctx, b.cfg.Redis, []string{idemKey(b.cfg.KeyPrefix, key)}, id+" ", strconv.FormatInt(ttl.Milliseconds(), 10)).Err()
	if err != nil {
		b.log.Warn("buffer: could not expire an idempotency key", "message_id", id, "err", err)
	}
}

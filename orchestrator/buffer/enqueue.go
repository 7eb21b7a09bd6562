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
	// Shard is the shard whose depth counter holds the message's place
	// (0 with one shard, then omitted: the payload of before), so that
	// its finish is subtracted there.
	Shard int `json:"shard,omitempty"`
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
//
// Its place is in its key's shard, else its messageId's (shard.Set.Of),
// so every enqueue of one key or one id meets the same claim; when both
// fall in different shards, admitSplit keeps the id claim exact too.
func (b *Buffer) admitOne(ctx context.Context, p prepared) (prepared, claim, error) {
	if !p.claims() {
		return b.admitAnywhere(ctx, p)
	}
	c := claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()}
	x := &admission{key: p.env.IdempotencyKey, id: p.claimID(), claim: c}
	field := "idempotencyKey"
	for range 3 {
		sh, err := b.admitClaims(ctx, x)
		if err != nil {
			return p, c, err
		}
		st, v := x.status, x.val
		switch st {
		case admitted:
			p.env.Shard = sh
			return p, c, nil
		case admitFull:
			return p, c, b.fullAt(v)
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

// admitClaims runs x's admission in its shard: its key's, else its id's.
// It answers the shard of the place.
func (b *Buffer) admitClaims(ctx context.Context, x *admission) (int, error) {
	ks, is := -1, -1
	if x.key != "" {
		ks = b.shards.Of(x.key)
	}
	if x.id != "" {
		is = b.shards.Of(x.id)
	}
	if ks >= 0 && is >= 0 && ks != is {
		return ks, b.admitSplit(ctx, x, ks, is)
	}
	sh := max(ks, is)
	if err := b.admitters[sh].admit(ctx, x); err != nil {
		return sh, persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
	}
	return sh, x.err
}

// admitSplit admits x whose idempotency key (shard ks) and messageId
// (shard is) fall in different shards, two steps in this order:
//  1. the id claim in shard is (claimScript: free, or the claim x takes
//     over), no place;
//  2. the admission of the key claim and the place in shard ks (the
//     key's admitter, coalesced as any);
//
// and when step 2 does not admit (QUEUE_FULL, the key claimed, Redis
// failed, the caller left), the id claim is dropped again while it still
// names x. A crash, or a failed drop, after step 1 leaves an id claim
// naming a message whose task does not exist: the retry of the same
// enqueue meets it and resumes it (admitOne), as it resumes any claim an
// enqueue that died left; nothing is lost and no second message with that
// id can be admitted meanwhile. Step 1 first, so that a refused id claim
// costs no place and no key claim to undo.
func (b *Buffer) admitSplit(ctx context.Context, x *admission, ks, is int) error {
	res, err := claimScript.Run(ctx, b.cfg.Redis, []string{b.keys(is).id(x.id)}, x.claim.String(), x.takeoverID, b.claimTTL().Milliseconds()).Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("%d values, want 2", len(res))
	}
	if err != nil {
		b.giveBackClaims(ctx, is, 0, "", x.id, x.claim) // the answer may be lost after it ran
		return persistence("buffer.Enqueue", fmt.Errorf("claim messageId: %w", err))
	}
	switch st, v, _ := answer(res, 0); st {
	case claimHeld:
		x.status, x.val = admitIDClaimed, v
		return nil
	case claimTaken:
	default:
		b.giveBackClaims(ctx, is, 0, "", x.id, x.claim)
		return persistence("buffer.Enqueue", fmt.Errorf("claim messageId: unexpected answer %v", res))
	}
	kx := &admission{key: x.key, claim: x.claim, takeover: x.takeover}
	err = b.admitters[ks].admit(ctx, kx)
	if err == nil && kx.err == nil && kx.status == admitted {
		x.status, x.val = kx.status, kx.val
		return nil
	}
	b.giveBackClaims(ctx, is, 0, "", x.id, x.claim)
	if err != nil {
		return persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
	}
	x.status, x.val = kx.status, kx.val
	return kx.err
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
	if !p.claims() {
		if sh := b.depth.take(); sh >= 0 {
			p.env.Shard = sh
			return b.enqueueAdmitted(ctx, p, claim{id: p.env.MessageID, queue: p.queue, at: b.cfg.Now()})
		}
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

// giveBackClaims gives back n places of shard sh and the claims c of key
// and id ("" for none), each in its own shard: one unadmitScript call for
// the place and the claims of sh, one more per claim of another shard
// (admitSplit's id claim). The order does not matter: a claim left by a
// failed call names a message whose task is missing, and the enqueue's
// retry resumes it.
func (b *Buffer) giveBackClaims(ctx context.Context, sh, n int, key, id string, c claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	k := b.keys(sh)
	keys := []string{k.depth()}
	var other []string // claims of other shards
	if key != "" {
		if ks := b.shards.Of(key); ks == sh {
			keys = append(keys, k.idem(key))
		} else {
			other = append(other, b.keys(ks).depth(), b.keys(ks).idem(key))
		}
	}
	if id != "" {
		if is := b.shards.Of(id); is == sh {
			keys = append(keys, k.id(id))
		} else {
			other = append(other, b.keys(is).depth(), b.keys(is).id(id))
		}
	}
	for i := 0; i < len(other); i += 2 {
		if err := unadmitScript.Run(ctx, b.cfg.Redis, other[i:i+2], 0, c.String()).Err(); err != nil {
			b.log.Warn("buffer: could not give back a claim", "message_id", c.id, "err", err)
		}
	}
	if n == 0 && len(keys) == 1 {
		return
	}
	d, err := unadmitScript.Run(ctx, b.cfg.Redis, keys, n, c.String()).Int64()
	if err != nil {
		b.log.Warn("buffer: could not give back an admission", "message_id", c.id, "err", err)
		return
	}
	b.depth.gauge(sh).set(d)
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
	err := expireIdemScript.Run(ctx, b.cfg.Redis, []string{b.keys(b.shards.Of(key)).idem(key)}, id+" ", strconv.FormatInt(ttl.Milliseconds(), 10)).Err()
	if err != nil {
		b.log.Warn("buffer: could not expire an idempotency key", "message_id", id, "err", err)
	}
}

package buffer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// The claims an enqueue takes so that one idempotency key, or one messageId
// the client chose, is one message: their value, their life, and the
// admission of a message that claims (admitOne and the paths it takes
// when the key and the id live in different shards).

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

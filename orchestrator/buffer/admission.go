package buffer

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// admission is one message's admission request and, once done is
// closed, its answer (admitScript's status and value, or err).
type admission struct {
	key        string // idempotency key, "" for none
	id         string // client-chosen messageId to claim, "" for none
	claim      claim
	takeover   string // the stale idem claim to take over
	takeoverID string // the stale id claim to take over

	status int64
	val    string
	err    error
	done   chan struct{}
}

// admitter coalesces admissions: one goroutine runs admitScript for every
// admission that arrived while its previous call was in flight, so N
// concurrent enqueues cost about one admission round trip, not N (a group
// commit). With no concurrency it is one round trip, as before.
type admitter struct {
	b    *Buffer
	ch   chan *admission
	done chan struct{}
}

const maxAdmissionBatch = 256

func newAdmitter(b *Buffer) *admitter {
	a := &admitter{b: b, ch: make(chan *admission, 4*maxAdmissionBatch), done: make(chan struct{})}
	go a.loop()
	return a
}

// admit waits for x's answer. Callers hold the buffer's enqueue gate, so
// close never races a send.
func (a *admitter) admit(x *admission) {
	x.done = make(chan struct{})
	a.ch <- x
	<-x.done
}

func (a *admitter) close() {
	close(a.ch)
	<-a.done
}

func (a *admitter) loop() {
	defer close(a.done)
	batch := make([]*admission, 0, maxAdmissionBatch)
	for x := range a.ch {
		batch = append(batch[:0], x)
	fill:
		for len(batch) < maxAdmissionBatch {
			select {
			case y, ok := <-a.ch:
				if !ok {
					break fill
				}
				batch = append(batch, y)
			default:
				break fill
			}
		}
		a.run(batch)
	}
}

// run answers a batch with one admitScript call.
func (a *admitter) run(batch []*admission) {
	b := a.b
	keys := []string{depthKey(b.cfg.KeyPrefix)}
	args := make([]any, 2, 2+5*len(batch))
	args[0], args[1] = b.cfg.MaxQueueSize, b.claimTTL().Milliseconds()
	for _, x := range batch {
		has, hasID := "0", "0"
		if x.key != "" {
			has = "1"
			keys = append(keys, idemKey(b.cfg.KeyPrefix, x.key))
		}
		if x.id != "" {
			hasID = "1"
			keys = append(keys, idKey(b.cfg.KeyPrefix, x.id))
		}
		args = append(args, has, hasID, x.claim.String(), x.takeover, x.takeoverID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	res, err := admitScript.Run(ctx, b.cfg.Redis, keys, args...).Slice()
	cancel()
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("admission: %d answers for %d messages", len(res), len(batch))
	}
	var last int64 = -1
	for i, x := range batch {
		if err != nil {
			x.err = persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
		} else {
			x.status, x.val, last = answer(res[i], last)
		}
		close(x.done)
	}
	if last >= 0 {
		b.depth.set(last)
	}
}

// answer reads one {status, value} pair; depth is the latest depth seen.
func answer(r any, depth int64) (int64, string, int64) {
	pair, _ := r.([]any)
	if len(pair) != 2 {
		return -1, "", depth
	}
	st, _ := pair[0].(int64)
	switch v := pair[1].(type) {
	case int64:
		return st, strconv.FormatInt(v, 10), v
	case string:
		return st, v, depth
	}
	return st, "", depth
}

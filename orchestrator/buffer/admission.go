package buffer

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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
	// fate is waiting, then answered (the loop) or abandoned (the caller,
	// when its context ended first), whichever comes first.
	fate atomic.Int32
}

const (
	waiting int32 = iota
	answered
	abandoned
)

// admitter coalesces one shard's admissions: one goroutine runs
// admitScript for every admission of its shard that arrived while its
// previous call was in flight, so N concurrent enqueues cost about one
// admission round trip per shard, not N (a group commit). With no
// concurrency it is one round trip, as before. Every key of an admission
// it is sent is of its shard (Buffer.admitOne sees to it).
type admitter struct {
	b      *Buffer
	g      *depthGauge // its shard's
	shard  int
	ch     chan *admission
	refill chan struct{} // the place credit ran low: reserve more ahead
	done   chan struct{}

	closeOnce sync.Once
}

const maxAdmissionBatch = 256

func newAdmitter(b *Buffer, shard int) *admitter {
	a := &admitter{b: b, g: b.depth.gauges[shard], shard: shard, ch: make(chan *admission, 4*maxAdmissionBatch), refill: make(chan struct{}, 1), done: make(chan struct{})}
	go a.loop()
	return a
}

// admit waits for x's answer, or until ctx ends: then x is abandoned and
// the loop gives back what its answer admitted (a paused Redis answers the
// caller by its deadline, not when Redis returns). Callers are counted
// enqueues (Buffer.admit, inflight) and Stop closes the loop only after
// they are done, so close never races a send.
func (a *admitter) admit(ctx context.Context, x *admission) error {
	x.done = make(chan struct{})
	x.fate.Store(waiting)
	select {
	case a.ch <- x:
	case <-ctx.Done(): // the loop is behind (Redis paused): nothing was admitted
		return ctx.Err()
	}
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		if x.fate.CompareAndSwap(waiting, abandoned) {
			return ctx.Err()
		}
		<-x.done // answered meanwhile
		return nil
	}
}

// close stops the loop once it answered what was sent (idempotent).
func (a *admitter) close() {
	a.closeOnce.Do(func() { close(a.ch) })
	<-a.done
}

// low asks for more place credit before it runs out (never blocks).
func (a *admitter) low() {
	select {
	case a.refill <- struct{}{}:
	default:
	}
}

func (a *admitter) loop() {
	defer close(a.done)
	batch := make([]*admission, 0, maxAdmissionBatch)
	for {
		var x *admission
		select {
		case y, ok := <-a.ch:
			if !ok {
				return
			}
			x = y
		case <-a.refill:
			if a.b.State() == StateRunning { // no credit once stopping: Stop gives it back
				a.run(nil)
			}
			continue
		}
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
	b, g, k := a.b, a.g, a.b.keys(a.shard)
	keys := []string{g.key, g.creditKey}
	args := make([]any, 4, 4+5*len(batch))
	args[0], args[1], args[2], args[3] = g.max, b.claimTTL().Milliseconds(), g.ahead(batch), g.instance
	for _, x := range batch {
		has, hasID := "0", "0"
		if x.key != "" {
			has = "1"
			keys = append(keys, k.idem(x.key))
		}
		if x.id != "" {
			hasID = "1"
			keys = append(keys, k.id(x.id))
		}
		args = append(args, has, hasID, x.claim.String(), x.takeover, x.takeoverID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	g.admitMu.Lock() // the places it reserves ahead reach the field and credit together (depthGauge.resync)
	res, err := admitScript.Run(ctx, b.cfg.Redis, keys, args...).Slice()
	cancel()
	if err == nil && len(res) != len(batch)+1 {
		err = fmt.Errorf("admission: %d answers for %d messages", len(res), len(batch))
	}
	var last int64 = -1
	var ahead int64
	if err == nil {
		if st, v, _ := answer(res[len(batch)], 0); st == admitAhead {
			ahead, _ = strconv.ParseInt(v, 10, 64)
		}
		g.credit.add(ahead) // before the waiters wake: they may find it at once
	}
	g.admitMu.Unlock()
	for i, x := range batch {
		if err != nil {
			x.err = persistence("buffer.Enqueue", fmt.Errorf("admission: %w", err))
		} else {
			x.status, x.val, last = answer(res[i], last)
		}
		if !x.fate.CompareAndSwap(waiting, answered) && x.err == nil && x.status == admitted {
			go b.giveBack(a.shard, x) // admitted for a caller that left: its place and claims
		}
		close(x.done)
	}
	if last >= 0 {
		g.set(last + ahead)
	}
}

// maxAhead bounds the places one admission reserves ahead.
const maxAhead = 64

// ahead is how many places a batch's admission reserves ahead in g's
// shard for this instance's next enqueues without a key: 16 per such
// enqueue in the batch, maxAhead for a refill (no batch); at most 1/32 of
// the shard's maximum, so a small buffer stays exact, and what tops the
// shard's credit up to maxAhead.
func (g *depthGauge) ahead(batch []*admission) int64 {
	room := maxAhead - g.credit.n.Load()
	if room <= 0 {
		return 0
	}
	free := int64(maxAhead / 16)
	if batch != nil {
		free = 0
		for _, x := range batch {
			if x.key == "" && x.id == "" {
				free++
			}
		}
	}
	return min(room, 16*free, g.max/32)
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

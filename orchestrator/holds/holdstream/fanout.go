package holdstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// typeSub is one appointment type's Redis subscription and its local
// streams, split into shards that are written in parallel.
type typeSub struct {
	id     string
	ps     *redis.PubSub
	shards []*shard
	n      int           // streams attached (under Hub.mu)
	next   int           // the shard the next stream joins (under Hub.mu)
	ready  chan struct{} // closed once subscribed (or failed: err)
	err    error
}

// shard is a part of a type's streams, written by one worker at a time.
type shard struct {
	mu      sync.Mutex
	streams map[*stream]struct{}
}

func newTypeSub(id string, shards int) *typeSub {
	ts := &typeSub{id: id, ready: make(chan struct{})}
	for range shards {
		ts.shards = append(ts.shards, &shard{streams: map[*stream]struct{}{}})
	}
	return ts
}

// each runs fn on every stream of the shard (under its lock).
func (sh *shard) each(fn func(*stream)) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for s := range sh.streams {
		fn(s)
	}
}

// forEach runs fn on every stream of shards, the shards in parallel (the
// first on the caller, the others on the hub's workers), and returns when
// all are done.
func (h *Hub) forEach(shards []*shard, fn func(*stream)) {
	fn = h.guarded(fn)
	var wg sync.WaitGroup
	for _, sh := range shards[1:] {
		wg.Add(1)
		job := func() { defer wg.Done(); sh.each(fn) }
		select {
		case h.work <- job:
		case <-h.stop:
			job()
		}
	}
	shards[0].each(fn)
	wg.Wait()
}

// guarded is fn with a panic for one stream ending that stream with
// "unknown" (logged at error level) instead of the process: the fan-out,
// the pings and the shutdown run it for every stream of a shard.
func (h *Hub) guarded(fn func(*stream)) func(*stream) {
	return func(s *stream) {
		defer func() {
			if r := recover(); r != nil {
				h.cfg.Logger.Error("holds stream panicked", "connection_id", s.id, "panic", r)
				h.end(s, ReasonUnknown)
			}
		}()
		fn(s)
	}
}

// worker runs fan-out jobs until the hub stops.
func (h *Hub) worker() {
	for {
		select {
		case <-h.stop:
			return
		case job := <-h.work:
			job()
		}
	}
}

// attach adds s to its appointment type's fan-out, subscribing the type's
// channel when s is its first local stream.
func (h *Hub) attach(s *stream) error {
	h.mu.Lock()
	ts := h.types[s.typeID]
	fresh := ts == nil
	if fresh {
		ts = newTypeSub(s.typeID, h.cfg.Shards)
		h.types[s.typeID] = ts
	}
	sh := ts.shards[ts.next%len(ts.shards)]
	s.pingSlot = ts.next / len(ts.shards) % h.pingSlots()
	ts.next++
	ts.n++
	sh.mu.Lock()
	sh.streams[s] = struct{}{}
	sh.mu.Unlock()
	s.ts, s.shard = ts, sh
	h.m.streams.WithLabelValues(s.typeID).Set(float64(ts.n))
	h.mu.Unlock()
	if fresh {
		h.subscribe(ts)
	}
	<-ts.ready
	return ts.err
}

// subscribe opens ts's subscription and waits for Redis to confirm it, so
// no event published after attach returns is missed.
func (h *Hub) subscribe(ts *typeSub) {
	defer close(ts.ready)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := h.cfg.Redis.Subscribe(ctx, h.cfg.Channel(ts.id))
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		h.mu.Lock()
		ts.err = fmt.Errorf("holdstream: subscribe %s: %w", ts.id, err)
		if h.types[ts.id] == ts {
			delete(h.types, ts.id)
		}
		h.mu.Unlock()
		return
	}
	ts.ps = ps
	go h.fanout(ts, ps.Channel(redis.WithChannelSize(1024)))
}

// detach removes s; the last stream of a type closes its subscription.
func (h *Hub) detach(s *stream) {
	h.mu.Lock()
	var ps *redis.PubSub
	if ts := s.ts; ts != nil {
		s.shard.mu.Lock()
		_, in := s.shard.streams[s]
		delete(s.shard.streams, s)
		s.shard.mu.Unlock()
		if in {
			ts.n--
		}
		if ts.n == 0 && h.types[ts.id] == ts {
			delete(h.types, ts.id)
			ps = ts.ps
			h.m.streams.DeleteLabelValues(ts.id)
		} else if h.types[ts.id] == ts {
			h.m.streams.WithLabelValues(ts.id).Set(float64(ts.n))
		}
	}
	if h.clients[s.clientID] == s {
		delete(h.clients, s.clientID)
	}
	h.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

// wire is a hold event as a stream sends it (docs/holds.md#the-live-stream-sse:
// the event without its credentials): the hold's public fields, holds.Ref of the hold id in
// place of the id (a hold id is its hold's bearer secret), no clientId
// (neither the web client's nor an IVA session's), and isOwnHold. Built
// field by field, so nothing else the engine's message carries (an
// appointmentId, a future field) ever reaches a client.
type wire struct {
	Type              string    `json:"type"`
	HoldID            string    `json:"holdId"` // holds.Ref(the hold id)
	AppointmentTypeID string    `json:"appointmentTypeId"`
	SpecialistID      string    `json:"specialistId"`
	SlotStartDate     time.Time `json:"slotStartDate"`
	SlotEndDate       time.Time `json:"slotEndDate"`
	HoldExpiresAt     time.Time `json:"holdExpiresAt"`
	Face              string    `json:"face,omitempty"`
	IsOwnHold         bool      `json:"isOwnHold"`
}

// public is the wire form of e (isOwnHold false).
func public(e Event) wire {
	h := e.Hold
	return wire{Type: e.Type, HoldID: holds.Ref(h.HoldID), AppointmentTypeID: h.AppointmentTypeID, SpecialistID: h.SpecialistID,
		SlotStartDate: h.SlotStartDate, SlotEndDate: h.SlotEndDate, HoldExpiresAt: h.HoldExpiresAt, Face: h.Face}
}

func encode(w wire, own bool) []byte {
	w.IsOwnHold = own
	b, _ := json.Marshal(w) // plain struct: cannot fail
	return b
}

// fanout decodes each event of a type once, frames it twice (own, not
// own) and writes it to every local stream of the type: hold, release and
// confirm to all, heartbeat to the hold's owner only.
func (h *Hub) fanout(ts *typeSub, ch <-chan *redis.Message) {
	for msg := range ch {
		var e Event
		if err := json.Unmarshal([]byte(msg.Payload), &e); err != nil || e.Type == "" {
			h.m.dropped.Inc()
			h.cfg.Logger.Warn("holdstream: not a holds event", "channel", msg.Channel, "err", err)
			continue
		}
		switch e.Type {
		case TypeHold, TypeRelease, TypeConfirm, TypeHeartbeat:
		default:
			h.m.dropped.Inc()
			continue
		}
		w := public(e)
		own := sse.AppendChunk(nil, sse.Event{Data: encode(w, true)})
		other := sse.AppendChunk(nil, sse.Event{Data: encode(w, false)})
		start := time.Now()
		h.forEach(ts.shards, func(s *stream) {
			switch {
			case s.owns(e.Hold):
				h.send(s, own)
			case e.Type != TypeHeartbeat:
				h.send(s, other)
			}
		})
		h.m.fanout.Observe(time.Since(start).Seconds())
	}
}

// pingSlotLen is the shortest interval between two rounds of pings.
const pingSlotLen = 250 * time.Millisecond

// pingSlots is how many groups the streams are pinged in, one group per
// Ping/pingSlots (at most 16): 10,000 pings at the same instant would take
// the cores from the events for a few hundred milliseconds.
func (h *Hub) pingSlots() int {
	return int(min(max(h.cfg.Ping/pingSlotLen, 1), 16))
}

// pingLoop writes a ping to every attached stream each Ping interval (one
// ticker for the instance), one group of streams per tick. A stream whose
// writes are owned (initialising, or draining to a slow client) skips it:
// it has writes under way anyway.
func (h *Hub) pingLoop() {
	slots := h.pingSlots()
	t := time.NewTicker(h.cfg.Ping / time.Duration(slots))
	defer t.Stop()
	for tick := 0; ; tick = (tick + 1) % slots {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		subs := make([]*typeSub, 0, len(h.types))
		for _, ts := range h.types {
			subs = append(subs, ts)
		}
		h.mu.Unlock()
		for _, ts := range subs {
			h.forEach(ts.shards, func(s *stream) {
				if s.pingSlot == tick {
					h.ping(s)
				}
			})
		}
	}
}

// pings are the pooled ping frames (one per worker at a time).
var pings = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// ping writes one ping to s, unless its writes are owned.
func (h *Hub) ping(s *stream) {
	s.mu.Lock()
	skip := s.owned || s.reason != ""
	s.mu.Unlock()
	if skip {
		return
	}
	bp := pings.Get().(*[]byte)
	b := appendSystem((*bp)[:0], system{Type: "ping", ConnectionID: s.id, Time: h.cfg.Now().UTC().Format(time.RFC3339)})
	h.send(s, b)
	*bp = b[:0]
	pings.Put(bp)
}

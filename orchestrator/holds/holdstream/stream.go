package holdstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2/utils"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/sidecar/web/sse"
)

// errClosed: the hub is shutting down.
var errClosed = errors.New("holdstream: shutting down")

// stream is one client's open stream on this instance.
type stream struct {
	id, clientID, typeID string
	seq                  int64
	lease                time.Duration
	events               chan []byte // encoded events for this client
	ts                   *typeSub

	once   sync.Once
	ended  chan struct{} // closed by end
	reason string        // set once, before ended closes
}

// end asks the stream to end with reason (the first reason wins).
func (s *stream) end(reason string) {
	s.once.Do(func() { s.reason = reason; close(s.ended) })
}

// deliver queues an event without blocking the fan-out; a client whose
// queue is full fell behind and is ended (it reconnects and gets a fresh
// snapshot rather than a stale board).
func (s *stream) deliver(b []byte) {
	select {
	case s.events <- b:
	default:
		s.end(ReasonSendFailed)
	}
}

// open numbers a new stream of clientID (the open script), registers it and
// ends an older local stream of the client with "replaced"; other
// instances do the same on the control message.
func (h *Hub) open(ctx context.Context, clientID, typeID string, lease time.Duration) (*stream, error) {
	s := &stream{id: utils.UUIDv4(), clientID: clientID, typeID: typeID, lease: lease,
		events: make(chan []byte, h.cfg.Buffer), ended: make(chan struct{})}
	if h.isClosed() {
		return nil, errClosed
	}
	ttl := (h.cfg.MaxLease + time.Minute).Milliseconds()
	seq, err := openScript.Run(ctx, h.cfg.Redis, []string{seqKey(h.cfg.Prefix, clientID)},
		ttl, controlChannel(h.cfg.Prefix), clientID, s.id).Int64()
	if err != nil {
		return nil, fmt.Errorf("holdstream open: %w", err)
	}
	s.seq = seq
	if err := h.register(s); err != nil {
		return nil, err
	}
	// A newer stream whose control message arrived before s was registered
	// has already counted past s: s is the older one. (One opened after
	// this read announces itself after s was registered and ends it then.)
	if cur, err := h.cfg.Redis.Get(ctx, seqKey(h.cfg.Prefix, clientID)).Int64(); err == nil && cur > seq {
		s.end(ReasonReplaced)
	}
	return s, nil
}

// register makes s the client's local stream unless a newer one is, and
// ends the older.
func (h *Hub) register(s *stream) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	if old := h.clients[s.clientID]; old != nil && old.seq > s.seq {
		s.end(ReasonReplaced) // a newer stream of this client got here first
	} else {
		if old != nil {
			old.end(ReasonReplaced)
		}
		h.clients[s.clientID] = s
	}
	h.running.Add(1)
	return nil
}

func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// controlMsg is a message on the control channel.
type controlMsg struct {
	Op           string `json:"op"` // open | cancel
	ClientID     string `json:"clientId"`
	Seq          int64  `json:"seq"`
	ConnectionID string `json:"connectionId"`
}

// controlLoop applies other instances' opens (replace an older local
// stream) and cancels.
func (h *Hub) controlLoop(ch <-chan *redis.Message) {
	for msg := range ch {
		var c controlMsg
		if err := json.Unmarshal([]byte(msg.Payload), &c); err != nil {
			h.cfg.Logger.Warn("holdstream: bad control message", "err", err)
			continue
		}
		h.mu.Lock()
		if s := h.clients[c.ClientID]; s != nil {
			switch {
			case c.Op == "open" && s.seq < c.Seq:
				s.end(ReasonReplaced)
			case c.Op == "cancel":
				s.end(ReasonClientCancel)
			}
		}
		h.mu.Unlock()
	}
}

// Cancel ends clientID's stream, on whichever instance serves it, with
// "client-cancel".
func (h *Hub) Cancel(ctx context.Context, clientID string) error {
	b, _ := json.Marshal(controlMsg{Op: "cancel", ClientID: clientID})
	if err := h.cfg.Redis.Publish(ctx, controlChannel(h.cfg.Prefix), b).Err(); err != nil {
		return fmt.Errorf("holdstream cancel: %w", err)
	}
	return nil
}

// attach adds s to its appointment type's fan-out, subscribing the type's
// channel when s is its first local stream.
func (h *Hub) attach(s *stream) error {
	h.mu.Lock()
	ts := h.types[s.typeID]
	fresh := ts == nil
	if fresh {
		ts = &typeSub{id: s.typeID, streams: map[*stream]struct{}{}, ready: make(chan struct{})}
		h.types[s.typeID] = ts
	}
	ts.streams[s] = struct{}{}
	s.ts = ts
	h.m.streams.WithLabelValues(s.typeID).Set(float64(len(ts.streams)))
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
		delete(ts.streams, s)
		n := len(ts.streams)
		if n == 0 && h.types[ts.id] == ts {
			delete(h.types, ts.id)
			ps = ts.ps
			h.m.streams.DeleteLabelValues(ts.id)
		} else if h.types[ts.id] == ts {
			h.m.streams.WithLabelValues(ts.id).Set(float64(n))
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

// wire is an event as a stream sends it: the engine's event plus isOwnHold.
type wire struct {
	Event
	IsOwnHold bool `json:"isOwnHold"`
}

func encode(e Event, own bool) []byte {
	b, _ := json.Marshal(wire{Event: e, IsOwnHold: own}) // plain struct: cannot fail
	return b
}

// fanout decodes each event of a type once, encodes it twice (own, not
// own) and queues it to every local stream of the type: hold, release and
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
		own, other := encode(e, true), encode(e, false)
		h.mu.Lock()
		for s := range ts.streams {
			switch {
			case s.clientID == e.ClientID:
				s.deliver(own)
			case e.Type != TypeHeartbeat:
				s.deliver(other)
			}
		}
		h.mu.Unlock()
	}
}

// run serves s on w (the stream's goroutine) and cleans up.
func (h *Hub) run(s *stream, w *sse.Writer) {
	defer h.running.Done()
	defer h.detach(s)
	reason := h.serve(s, w)
	h.m.ended.WithLabelValues(reason).Inc()
	h.cfg.Logger.Debug("holds stream ended", "connection_id", s.id, "client_id", s.clientID,
		"appointment_type_id", s.typeID, "reason", reason)
}

// system is a system event: init, connected, ping, end.
type system struct {
	Type              string `json:"type"`
	ConnectionID      string `json:"connectionId"`
	ClientID          string `json:"clientId,omitempty"`
	AppointmentTypeID string `json:"appointmentTypeId,omitempty"`
	LeaseMs           int64  `json:"leaseMs,omitempty"`
	PingMs            int64  `json:"pingMs,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Time              string `json:"time,omitempty"`
}

func (h *Hub) sendSystem(w *sse.Writer, e system) error {
	b, _ := json.Marshal(e) // plain struct: cannot fail
	return w.Send(sse.Event{Data: b})
}

// finish writes the end event (best effort: the client may be gone) and
// returns reason.
func (h *Hub) finish(s *stream, w *sse.Writer, reason string) string {
	_ = h.sendSystem(w, system{Type: "end", ConnectionID: s.id, Reason: reason})
	return reason
}

// writeReason names a failed write: stalled → send-failed, otherwise the
// connection was closed under it → client-abort.
func writeReason(err error) string {
	if errors.Is(err, sse.ErrStalled) {
		return ReasonSendFailed
	}
	return ReasonClientAbort
}

// serve is the seed's lifecycle after deduplication: retry hint, init,
// subscribe, snapshot, connected, then pings, lease and events.
func (h *Hub) serve(s *stream, w *sse.Writer) (reason string) {
	defer func() {
		if r := recover(); r != nil {
			h.cfg.Logger.Error("holds stream panicked", "connection_id", s.id, "panic", r)
			reason = h.finish(s, w, ReasonUnknown)
		}
	}()
	if err := w.Retry(h.cfg.Retry); err != nil {
		return writeReason(err)
	}
	if err := h.sendSystem(w, system{Type: "init", ConnectionID: s.id, ClientID: s.clientID, AppointmentTypeID: s.typeID,
		LeaseMs: s.lease.Milliseconds(), PingMs: h.cfg.Ping.Milliseconds()}); err != nil {
		return writeReason(err)
	}
	if err := h.initialize(s, w); err != nil {
		if errors.Is(err, errWrite) {
			return writeReason(err)
		}
		h.cfg.Logger.Warn("holds stream init failed", "connection_id", s.id, "appointment_type_id", s.typeID, "err", err)
		return h.finish(s, w, ReasonInitFailed)
	}
	return h.loop(s, w)
}

// errWrite marks a failed write during initialize.
var errWrite = errors.New("write failed")

// initialize subscribes (events from now on queue up), sends the snapshot
// of active holds (an already expired one as release) and "connected".
func (h *Hub) initialize(s *stream, w *sse.Writer) error {
	if err := h.attach(s); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	active, err := h.cfg.Source.Active(ctx, s.typeID)
	if err != nil {
		return fmt.Errorf("holdstream snapshot: %w", err)
	}
	now := h.cfg.Now()
	for _, hd := range active {
		e := Event{Type: TypeHold, Hold: hd}
		if !hd.HoldExpiresAt.After(now) {
			e.Type = TypeRelease
		}
		if err := w.Send(sse.Event{Data: encode(e, hd.ClientID == s.clientID)}); err != nil {
			return fmt.Errorf("%w: %w", errWrite, err)
		}
	}
	if err := h.sendSystem(w, system{Type: "connected", ConnectionID: s.id}); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	return nil
}

// loop forwards events and pings (a nil in the queue, put there by the
// hub's ping loop) until the lease, a failed write or an end request. It
// waits on two channels only and keeps no timer goroutine or ticker of its
// own: an idle stream is a small parked goroutine.
func (h *Hub) loop(s *stream, w *sse.Writer) string {
	lease := time.AfterFunc(s.lease, func() { s.end(ReasonLeaseExpired) })
	defer lease.Stop()
	for {
		select {
		case <-s.ended:
			return h.finish(s, w, s.reason)
		case b := <-s.events:
			if err := h.write(s, w, b); err != nil {
				return writeReason(err)
			}
		}
	}
}

// write sends one queued item: an event, or a ping for nil.
func (h *Hub) write(s *stream, w *sse.Writer, b []byte) error {
	if b == nil {
		return h.sendSystem(w, system{Type: "ping", ConnectionID: s.id, Time: h.cfg.Now().UTC().Format(time.RFC3339)})
	}
	return w.Send(sse.Event{Data: b})
}

// pingLoop queues a ping to every attached stream each Ping interval (one
// ticker for the instance). A stream whose queue is full has writes
// pending anyway and skips this ping.
func (h *Hub) pingLoop() {
	t := time.NewTicker(h.cfg.Ping)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		for _, ts := range h.types {
			for s := range ts.streams {
				select {
				case s.events <- nil:
				default:
				}
			}
		}
		h.mu.Unlock()
	}
}

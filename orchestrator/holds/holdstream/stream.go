package holdstream

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2/utils"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// errClosed: the hub is shutting down.
var errClosed = errors.New("holdstream: shutting down")

// stream is one client's open stream on this instance. Once initialised it
// has no goroutine: the fan-out, the ping ticker, the lease timer and the
// control loop write to its connection directly, one at a time (mu), each
// with one non-blocking write. Writes that cannot go out at once (the
// connection is still being initialised, or the client's socket buffer is
// full) queue in pending, in order, for the one goroutine that owns the
// connection's writes meanwhile (the initialising hijack goroutine, or a
// drain goroutine started for a slow client).
type stream struct {
	id, clientID, typeID string
	// token is the stream's secret, sent in its init event only: DELETE
	// /v1/holds/stream must name it (a clientId proves nothing).
	token    string
	seq      int64
	lease    time.Duration
	ts       *typeSub // set by attach (under Hub.mu)
	shard    *shard   // set by attach (under Hub.mu)
	pingSlot int      // the ping group (set by attach)

	mu      sync.Mutex
	conn    *sse.Conn   // nil until the connection is hijacked
	owned   bool        // a goroutine writes; others queue in pending
	pending []byte      // chunk frames waiting for the owner, in order
	queued  int         // frames in pending
	reason  string      // why the stream ends; "" while it runs (set once)
	endSent bool        // the end event is in pending or written
	closed  bool        // the connection is closed (release runs once)
	timer   *time.Timer // the lease
}

// open numbers a new stream of clientID (the open script), registers it and
// ends an older local stream of the client with "replaced"; other
// instances do the same on the control message. The stream is owned by
// the request (its writes queue) until serve initialises it.
func (h *Hub) open(ctx context.Context, clientID, typeID string, lease time.Duration) (*stream, error) {
	s := &stream{id: utils.UUIDv4(), token: newToken(), clientID: clientID, typeID: typeID, lease: lease, owned: true}
	if h.isClosed() {
		return nil, errClosed
	}
	ttl := (h.cfg.MaxLease + time.Minute).Milliseconds()
	seq, err := openScript.Run(ctx, h.cfg.Redis, []string{seqKey(h.cfg.KeyPrefix, clientID)},
		ttl, controlChannel(h.cfg.KeyPrefix), clientID, s.id).Int64()
	if err != nil {
		return nil, fmt.Errorf("holdstream open: %w", err)
	}
	s.seq = seq
	h.burst.opened(h.cfg.Now())
	if err := h.register(s); err != nil {
		return nil, err
	}
	// A newer stream whose control message arrived before s was registered
	// has already counted past s: s is the older one. (One opened after
	// this read announces itself after s was registered and ends it then.)
	if cur, err := h.cfg.Redis.Get(ctx, seqKey(h.cfg.KeyPrefix, clientID)).Int64(); err == nil && cur > seq {
		h.end(s, ReasonReplaced)
	}
	return s, nil
}

// tokenBytes is the entropy of a stream's token: 128 bits.
const tokenBytes = 16

// newToken is a stream token: 32 hex digits from crypto/rand.
func newToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// owns reports whether h is the stream's client's own web hold (its
// isOwnHold; heartbeats go to the owner only). Informational: a clientId
// proves nothing, and no event carries a credential either way.
func (s *stream) owns(h Hold) bool {
	return h.Face == holds.FaceWeb && h.ClientID == s.clientID
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
		h.end(s, ReasonReplaced) // a newer stream of this client got here first
	} else {
		if old != nil {
			h.end(old, ReasonReplaced)
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
	Token        string `json:"token,omitempty"` // cancel: the stream's token
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
				h.end(s, ReasonReplaced)
			case c.Op == "cancel" && subtle.ConstantTimeCompare([]byte(s.token), []byte(c.Token)) == 1:
				h.end(s, ReasonClientCancel)
			}
		}
		h.mu.Unlock()
	}
}

// Cancel ends clientID's stream whose token (its init event's
// streamToken) is token, on whichever instance serves it, with
// "client-cancel"; any other stream is left alone.
func (h *Hub) Cancel(ctx context.Context, clientID, token string) error {
	b, _ := json.Marshal(controlMsg{Op: "cancel", ClientID: clientID, Token: token})
	if err := h.cfg.Redis.Publish(ctx, controlChannel(h.cfg.KeyPrefix), b).Err(); err != nil {
		return fmt.Errorf("holdstream cancel: %w", err)
	}
	return nil
}

// system is a system event: init, connected, ping, end.
type system struct {
	Type              string `json:"type"`
	ConnectionID      string `json:"connectionId"`
	ClientID          string `json:"clientId,omitempty"`
	AppointmentTypeID string `json:"appointmentTypeId,omitempty"`
	StreamToken       string `json:"streamToken,omitempty"` // init: the secret DELETE /v1/holds/stream names
	LeaseMs           int64  `json:"leaseMs,omitempty"`
	PingMs            int64  `json:"pingMs,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Time              string `json:"time,omitempty"`
}

// appendSystem appends e as a chunk frame.
func appendSystem(dst []byte, e system) []byte {
	b, _ := json.Marshal(e) // plain struct: cannot fail
	return sse.AppendChunk(dst, sse.Event{Data: b})
}

// endFrame is the end event of s.
func endFrame(s *stream, reason string) []byte {
	return appendSystem(nil, system{Type: "end", ConnectionID: s.id, Reason: reason})
}

// writesEnd: the end event is written for every reason but a failed
// write (the client is gone or does not read).
func writesEnd(reason string) bool {
	return reason != ReasonSendFailed && reason != ReasonClientAbort
}

// writeReason names a failed write: stalled → send-failed, otherwise the
// connection was closed under it → client-abort.
func writeReason(err error) string {
	if errors.Is(err, sse.ErrStalled) {
		return ReasonSendFailed
	}
	return ReasonClientAbort
}

// serve initialises s on conn, on fasthttp's hijack goroutine, and returns
// once s is live (or over): the retry hint, init, subscribe, snapshot,
// connected, then the events that arrived meanwhile, in order.
func (h *Hub) serve(s *stream, conn *sse.Conn) {
	s.mu.Lock()
	s.conn = conn
	over := s.reason != ""
	if s.reason == ReasonSendFailed {
		conn.Abort()
	}
	s.mu.Unlock()
	if !over {
		if reason := h.initialize(s, conn); reason != "" {
			h.fail(s, reason)
			return
		}
		s.mu.Lock()
		s.timer = time.AfterFunc(s.lease, func() { h.end(s, ReasonLeaseExpired) })
		s.mu.Unlock()
	}
	h.drain(s)
}

// initialize writes the retry hint and init, subscribes (events from now
// on queue up), and writes the snapshot of active holds (an already expired
// one as release) and "connected". It answers the reason to end with, or ""
// (a panic ends the stream with "unknown").
func (h *Hub) initialize(s *stream, conn *sse.Conn) (reason string) {
	defer func() {
		if r := recover(); r != nil {
			h.cfg.Logger.Error("holds stream panicked", "connection_id", s.id, "panic", r)
			reason = ReasonUnknown
		}
	}()
	b := sse.AppendRetry(nil, h.cfg.Retry)
	b = appendSystem(b, system{Type: "init", ConnectionID: s.id, ClientID: s.clientID, AppointmentTypeID: s.typeID,
		StreamToken: s.token, LeaseMs: s.lease.Milliseconds(), PingMs: h.cfg.Ping.Milliseconds()})
	if err := conn.Flush(b); err != nil {
		return writeReason(err)
	}
	active, err := h.snapshot(s)
	if err != nil {
		h.cfg.Logger.Warn("holds stream init failed", "connection_id", s.id, "appointment_type_id", s.typeID, "err", err)
		return ReasonInitFailed
	}
	b = b[:0]
	now := h.cfg.Now()
	for _, hd := range active {
		e := Event{Type: TypeHold, Hold: hd}
		if !hd.HoldExpiresAt.After(now) {
			e.Type = TypeRelease
		}
		b = sse.AppendChunk(b, sse.Event{Data: encode(public(e), s.owns(hd))})
	}
	b = appendSystem(b, system{Type: "connected", ConnectionID: s.id})
	if err := conn.Flush(b); err != nil {
		return writeReason(err)
	}
	return ""
}

// snapshot subscribes s to its type's events and reads the active holds.
func (h *Hub) snapshot(s *stream) ([]Hold, error) {
	if err := h.attach(s); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	active, err := h.cfg.Source.Active(ctx, s.typeID)
	if err != nil {
		return nil, fmt.Errorf("holdstream snapshot: %w", err)
	}
	return active, nil
}

// fail ends s, whose owner failed with reason, dropping what is queued: a
// failed write closes at once, init-failed and unknown first write the end
// event (best effort, without waiting), which names the stream's first
// reason.
func (h *Hub) fail(s *stream, reason string) {
	s.mu.Lock()
	if s.reason == "" {
		s.reason = reason
	}
	// A stream replaced or shut down during its init says so even if the
	// init then failed: a client told "init-failed" would reconnect.
	var tail []byte
	if writesEnd(reason) {
		tail = endFrame(s, s.reason)
	}
	s.pending, s.queued = nil, 0
	s.closeLocked(tail)
	s.mu.Unlock()
	h.release(s)
}

// closeLocked closes the connection (tail, then the last chunk, best
// effort) and marks s closed; s.mu is held.
func (s *stream) closeLocked(tail []byte) {
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.conn != nil {
		s.conn.Close(tail)
	}
}

// drain writes what is queued, as the owner of the connection's writes,
// until nothing is: then s is live again (no owner), or, when it is
// ending, its end event is written and the connection closed.
func (h *Hub) drain(s *stream) {
	for {
		s.mu.Lock()
		b, reason := s.pending, s.reason
		s.pending, s.queued = nil, 0
		if reason == "" && len(b) == 0 {
			s.owned = false
			s.mu.Unlock()
			return
		}
		if reason != "" && !s.endSent && writesEnd(reason) {
			s.endSent = true
			b = append(b, endFrame(s, reason)...)
		}
		s.mu.Unlock()
		if err := s.conn.Flush(b); err != nil {
			h.fail(s, writeReason(err))
			return
		}
		if reason != "" {
			s.mu.Lock()
			s.closeLocked(nil)
			s.mu.Unlock()
			h.release(s)
			return
		}
	}
}

// send writes frame (a chunk frame) to s now if nobody owns its writes,
// or queues it. A client whose socket buffer is full gets a drain goroutine;
// one whose queue is over Buffer fell behind and ends with send-failed
// (it reconnects and gets a fresh snapshot rather than a stale board); a
// failed write ends it with client-abort. It may run under Hub.mu or a
// shard's lock: the cleanup that needs them runs on its own goroutine.
func (h *Hub) send(s *stream, frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reason != "":
	case s.owned:
		h.queue(s, frame)
	default:
		n, err := s.conn.TryWrite(frame)
		switch {
		case errors.Is(err, sse.ErrWouldBlock):
			s.pending, s.queued, s.owned = append(s.pending, frame[n:]...), 1, true
			go h.drain(s)
		case err != nil:
			s.reason = ReasonClientAbort
			s.closeLocked(nil)
			go h.release(s)
		}
	}
}

// queue adds frame to s's pending frames (s.mu held), or ends s with
// send-failed when Buffer frames are waiting already: the owner's write
// is aborted, so it stops waiting for a client that does not read.
func (h *Hub) queue(s *stream, frame []byte) {
	if s.queued >= h.cfg.Buffer {
		s.reason = ReasonSendFailed
		if s.conn != nil {
			s.conn.Abort()
		}
		return
	}
	s.pending = append(s.pending, frame...)
	s.queued++
}

// end asks s to end with reason (the first reason wins). A live stream
// writes its end event and closes here; an owned one (initialising, or
// draining to a slow client) is ended by its owner after what is queued.
// It may run under Hub.mu or a shard's lock (see send).
func (h *Hub) end(s *stream, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason != "" {
		return
	}
	s.reason = reason
	if s.owned {
		return
	}
	frame := endFrame(s, reason)
	s.endSent = true
	n, err := s.conn.TryWrite(frame)
	if errors.Is(err, sse.ErrWouldBlock) {
		s.pending, s.owned = append(s.pending, frame[n:]...), true
		go h.drain(s)
		return
	}
	s.closeLocked(nil)
	go h.release(s)
}

// release forgets a closed stream: fan-out, client index, gauge, metric.
func (h *Hub) release(s *stream) {
	// Counted as ended before it stops being counted as open: whoever sees
	// the stream gone (Streams, the gauge) sees its end reason counted.
	h.m.ended.WithLabelValues(s.reason).Inc()
	h.detach(s)
	h.cfg.Logger.Debug("holds stream ended", "connection_id", s.id, "client_id", s.clientID,
		"appointment_type_id", s.typeID, "reason", s.reason)
	h.running.Done()
}

package bookingtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
)

// The fakes of the booking state: tokens, sessions, reservations and the rest.

type Tokens struct {
	Secret []byte
	TTL    time.Duration
	Now    func() time.Time
}

type tokenPayload struct {
	SessionID   string `json:"sessionId"`
	PatientGUID string `json:"patientGUID"`
	CreatedAt   int64  `json:"createdAt"`
	ExpiresAt   int64  `json:"expiresAt"`
	Nonce       string `json:"nonce"`
}

// Issue implements booking.AuthTokens.
func (t Tokens) Issue(sessionID, patientGUID string) (string, error) {
	now := t.Now()
	ttl := t.TTL
	if ttl == 0 {
		ttl = 15 * time.Minute
	}
	return t.sign(tokenPayload{SessionID: sessionID, PatientGUID: patientGUID, CreatedAt: now.UnixMilli(),
		ExpiresAt: now.Add(ttl).UnixMilli(), Nonce: "5b0b1d22ff73"}), nil
}

func (t Tokens) sign(p tokenPayload) string {
	b, _ := json.Marshal(p)
	payload := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, t.Secret)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Forge returns a token for patientGUID signed with another secret.
func (t Tokens) Forge(patientGUID string) string {
	return Tokens{Secret: []byte("not-the-secret"), Now: t.Now}.mustIssue(patientGUID)
}

// Expired returns a token for patientGUID that expired a minute ago.
func (t Tokens) Expired(patientGUID string) string {
	now := t.Now()
	return t.sign(tokenPayload{SessionID: "s", PatientGUID: patientGUID, CreatedAt: now.Add(-16 * time.Minute).UnixMilli(),
		ExpiresAt: now.Add(-time.Minute).UnixMilli(), Nonce: "5b0b1d22ff73"})
}

func (t Tokens) mustIssue(guid string) string {
	s, _ := t.Issue("s", guid)
	return s
}

// Validate implements booking.AuthTokens (checks 2–5 of seed §4.2).
func (t Tokens) Validate(token, patientGUID string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return &booking.AuthError{Code: contracts.BookingAuthMalformed}
	}
	m := hmac.New(sha256.New, t.Secret)
	m.Write([]byte(parts[0]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || !hmac.Equal(sig, m.Sum(nil)) {
		return &booking.AuthError{Code: contracts.BookingAuthSignatureInvalid}
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	var p tokenPayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return &booking.AuthError{Code: contracts.BookingAuthMalformed}
	}
	if t.Now().UnixMilli() > p.ExpiresAt {
		return &booking.AuthError{Code: contracts.BookingAuthExpired}
	}
	if !strings.EqualFold(p.PatientGUID, patientGUID) {
		return &booking.AuthError{Code: contracts.BookingAuthGUIDMismatch, TokenPatientGUID: p.PatientGUID}
	}
	return nil
}

// Sessions is an in-memory session cache (no expiry).
type Sessions struct {
	mu  sync.Mutex
	m   map[string]booking.Session
	Err error
}

// NewSessions returns an empty cache.
func NewSessions() *Sessions { return &Sessions{m: map[string]booking.Session{}} }

// Put implements booking.Sessions.
func (s *Sessions) Put(_ context.Context, sess booking.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return s.Err
	}
	s.m["guid:"+strings.ToUpper(sess.PatientGUID)] = sess
	if sess.UUI != "" {
		s.m["uui:"+sess.UUI] = sess
	}
	return nil
}

// Lookup implements booking.Sessions.
func (s *Sessions) Lookup(_ context.Context, patientGUID, uui string) (booking.Session, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return booking.Session{}, false, s.Err
	}
	if patientGUID != "" {
		if v, ok := s.m["guid:"+strings.ToUpper(patientGUID)]; ok {
			return v, true, nil
		}
	}
	if uui != "" {
		if v, ok := s.m["uui:"+uui]; ok {
			return v, true, nil
		}
	}
	return booking.Session{}, false, nil
}

// Reservations are in-memory slot holds; State tells what a slot is in.
type Reservations struct {
	mu       sync.Mutex
	holds    map[string]hold
	confirms map[string]int
	Err      error
}

type hold struct {
	session string
	state   string // reserved (90 s) | confirmed (300 s)
}

// NewReservations returns no holds.
func NewReservations() *Reservations { return &Reservations{holds: map[string]hold{}} }

func holdKey(h booking.SlotHold) string {
	start := h.StartTime
	if t, ok := contracts.ParseStartTime(start); ok {
		start = t.Format("20060102:1504")
	}
	return strings.ToLower(h.LocationGUID) + ":" + start + ":" + strings.ToLower(h.ScheduleColumnGUID)
}

// State returns "", "reserved" or "confirmed" and the holder.
func (r *Reservations) State(h booking.SlotHold) (state, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.holds[holdKey(h)]
	return v.state, v.session
}

// Reserve implements booking.Reservations.
func (r *Reservations) Reserve(_ context.Context, h booking.SlotHold) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	k := holdKey(h)
	if v, ok := r.holds[k]; ok && v.session != h.SessionID {
		return fmt.Errorf("reserve %s: %w", k, booking.ErrSlotReserved)
	}
	if v, ok := r.holds[k]; ok && v.state == "confirmed" {
		return nil
	}
	r.holds[k] = hold{session: h.SessionID, state: "reserved"}
	return nil
}

// Confirm implements booking.Reservations.
func (r *Reservations) Confirm(_ context.Context, h booking.SlotHold) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	r.holds[holdKey(h)] = hold{session: h.SessionID, state: "confirmed"}
	if r.confirms == nil {
		r.confirms = map[string]int{}
	}
	r.confirms[holdKey(h)]++
	return nil
}

// Confirms counts the Confirm calls of h's slot.
func (r *Reservations) Confirms(h booking.SlotHold) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.confirms[holdKey(h)]
}

// Release implements booking.Reservations.
func (r *Reservations) Release(_ context.Context, h booking.SlotHold) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	k := holdKey(h)
	if v, ok := r.holds[k]; ok && v.session == h.SessionID {
		delete(r.holds, k)
	}
	return nil
}

// HeldByOthers implements booking.Reservations.
func (r *Reservations) HeldByOthers(_ context.Context, session string, slots []booking.SlotHold) ([]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return nil, r.Err
	}
	out := make([]bool, len(slots))
	for i, h := range slots {
		v, ok := r.holds[holdKey(h)]
		out[i] = ok && v.session != session
	}
	return out, nil
}

// BookingTokens is the old unsigned design: base64url of JSON {st, sv, sc, at, mn}.
// With Slots set, Decode refuses a token whose slot the service has
// invalidated (as the real codec refuses a slot no longer in the slot cache).
type BookingTokens struct{ Slots *Slots }

type bookingTokenJSON struct {
	ST string `json:"st"`
	SV string `json:"sv"`
	SC string `json:"sc"`
	AT string `json:"at"`
	MN int    `json:"mn"`
}

// Encode implements booking.BookingTokens.
func (BookingTokens) Encode(s booking.SlotRef) (string, error) {
	b, err := json.Marshal(bookingTokenJSON{ST: s.StartTime, SV: s.ScheduleViewGUID, SC: s.ScheduleColumnGUID,
		AT: s.AppointmentTypeGUID, MN: s.Minutes})
	return base64.RawURLEncoding.EncodeToString(b), err
}

// Decode implements booking.BookingTokens.
func (b BookingTokens) Decode(_ context.Context, tok string) (booking.SlotRef, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return booking.SlotRef{}, err
	}
	var j bookingTokenJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return booking.SlotRef{}, err
	}
	if j.ST == "" {
		return booking.SlotRef{}, errors.New("bookingToken without a start time")
	}
	ref := booking.SlotRef{StartTime: j.ST, ScheduleViewGUID: j.SV, ScheduleColumnGUID: j.SC, AppointmentTypeGUID: j.AT, Minutes: j.MN}
	if b.Slots != nil && b.Slots.IsInvalidated(ref) {
		return booking.SlotRef{}, ErrSlotNotOffered
	}
	return ref, nil
}

// ErrSlotNotOffered is Decode's refusal of an invalidated slot's token.
var ErrSlotNotOffered = errors.New("bookingToken names a slot that is not offered")

// Slots is a fixed slot source.
type Slots struct {
	mu      sync.Mutex
	List    []contracts.ApptSlot
	Groups  [][]contracts.ApptSlot
	Err     error
	Queries []booking.SlotQuery
	// Retries is what a search answers as its Cloud9 tries after the
	// first (0: none).
	Retries int
	// Invalidated records the slots the service stopped offering.
	Invalidated []booking.SlotRef
	// BookedSlots records the slots confirmed bookings took out of the
	// lists (their bookingTokens still decode, as the real cache's do).
	BookedSlots []booking.SlotRef
}

// Booked implements booking.SlotBooker.
func (s *Slots) Booked(_ context.Context, r booking.SlotRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.BookedSlots = append(s.BookedSlots, r)
	return nil
}

// Booking returns a copy of BookedSlots.
func (s *Slots) Booking() []booking.SlotRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]booking.SlotRef(nil), s.BookedSlots...)
}

// Invalidate implements booking.SlotInvalidator.
func (s *Slots) Invalidate(_ context.Context, r booking.SlotRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Invalidated = append(s.Invalidated, r)
	return nil
}

// IsInvalidated reports whether the service stopped offering r.
func (s *Slots) IsInvalidated(r booking.SlotRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, got := range s.Invalidated {
		if got == r {
			return true
		}
	}
	return false
}

// Slots implements booking.SlotSource.
func (s *Slots) Slots(_ context.Context, q booking.SlotQuery) (booking.SlotSearch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Queries = append(s.Queries, q)
	if s.Err != nil {
		return booking.SlotSearch{}, s.Err
	}
	return booking.SlotSearch{Slots: s.List, Attempts: 1 + s.Retries, Retries: s.Retries,
		SearchRange: contracts.SearchRange{StartDate: q.StartDate + " 7:00:00 AM", EndDate: "02/20/2026 5:00:00 PM"}}, nil
}

// GroupedSlots implements booking.SlotSource.
func (s *Slots) GroupedSlots(_ context.Context, q booking.GroupQuery) (booking.GroupSearch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Queries = append(s.Queries, q.SlotQuery)
	if s.Err != nil {
		return booking.GroupSearch{CacheDecision: &contracts.CacheDecision{Checked: true, FallbackReason: "api_error",
			Tiers: map[string]contracts.TierCheck{}}}, s.Err
	}
	one := 1
	return booking.GroupSearch{Slots: s.List, Groups: s.Groups, Tier: 1, TiersSearched: []int{1}, FromCache: true,
		CacheSource: "flat-slots", CacheDecision: &contracts.CacheDecision{Checked: true, UsedTier: &one,
			Tiers: map[string]contracts.TierCheck{"1": {Found: true, Slots: len(s.List), Age: "0s", Status: "fresh", Checked: true}}},
		CacheInfo: &contracts.CacheInfo{Source: "flat-slots", Tier: 1}}, nil
}

// Queue records what the sync path queues.
type Queue struct {
	mu           sync.Mutex
	Appointments []booking.AppointmentTask
	Patients     []booking.PatientTask
	Notes        []booking.NoteTask
	Err          error
	StatusResp   contracts.QueueStatusResponse
	StatusErr    error
	// StatusQueries are the queries Status was asked, in order.
	StatusQueries []contracts.QueueStatusQuery
}

// EnqueueAppointment implements booking.Queue.
func (q *Queue) EnqueueAppointment(ctx context.Context, t booking.AppointmentTask) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	if err := ctx.Err(); err != nil { // as Redis would
		return err
	}
	q.Appointments = append(q.Appointments, t)
	return nil
}

// EnqueuePatient implements booking.Queue.
func (q *Queue) EnqueuePatient(_ context.Context, t booking.PatientTask) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	q.Patients = append(q.Patients, t)
	return nil
}

// EnqueueNote implements booking.Queue.
func (q *Queue) EnqueueNote(ctx context.Context, t booking.NoteTask) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return q.Err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q.Notes = append(q.Notes, t)
	return nil
}

// Status implements booking.Queue: StatusResp as it is (whatever the
// query; the service must hide what the caller may not see), or StatusErr.
func (q *Queue) Status(_ context.Context, query contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.StatusQueries = append(q.StatusQueries, query)
	return q.StatusResp, q.StatusErr
}

// Queries returns the queries Status was asked so far.
func (q *Queue) Queries() []contracts.QueueStatusQuery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]contracts.QueueStatusQuery(nil), q.StatusQueries...)
}

// Events records published events.
type Events struct {
	mu  sync.Mutex
	evs []contracts.BookingCompletedEvent
}

// Publish implements booking.Events. A context that has ended fails it,
// as it fails go-redis' PUBLISH and the webhook's POST.
func (e *Events) Publish(ctx context.Context, ev contracts.BookingCompletedEvent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

// All returns the events so far.
func (e *Events) All() []contracts.BookingCompletedEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]contracts.BookingCompletedEvent(nil), e.evs...)
}

// OffersAt implements booking.SlotOffers: the listed slots on column
// starting at startTime. With List empty (and no Err) every time is
// offered, as a slot of slots' default length (45 min), so the tests that
// do not exercise the offer check book any time they name; a test of the
// check sets List.
func (s *Slots) OffersAt(_ context.Context, column, startTime, _ string) ([]contracts.ApptSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	if len(s.List) == 0 {
		return []contracts.ApptSlot{{StartTime: startTime, ScheduleColumnGUID: column, Minutes: "45"}}, nil
	}
	start, ok := contracts.ParseStartTime(startTime)
	var out []contracts.ApptSlot
	for _, sl := range s.List {
		t, tok := contracts.ParseStartTime(sl.StartTime)
		if ok && tok && t.Equal(start) && strings.EqualFold(sl.ScheduleColumnGUID, column) {
			out = append(out, sl)
		}
	}
	return out, nil
}

var _ booking.SlotOffers = (*Slots)(nil)

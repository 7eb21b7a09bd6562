package bookingsvc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Marks remember, per booking identity (patient, start time, column), that
// a SetAppointment is or was in flight and that the booking completed.
// They are what makes "no duplicate appointment, ever" hold across the sync
// path, the async retries, crashes and repeated createAppt calls:
//
//   - Begin is written before every SetAppointment; Clear after an outcome
//     that certainly created nothing (a Cloud9 error answer); Done after a
//     success (it also clears the in-flight mark).
//   - Whoever finds an in-flight mark (left by a timeout, a dropped
//     connection or a crash mid-call, in any process) asks Cloud9
//     (GetAppointmentListByPatient) before sending the booking again.
//   - Whoever finds a Done mark answers the booking as made without calling
//     Cloud9: a repeated createAppt of the same slot, or a queued task run
//     again after the process died between the call and the acknowledgement.
type Marks interface {
	Begin(ctx context.Context, key string) error
	InFlight(ctx context.Context, key string) (bool, error)
	Clear(ctx context.Context, key string) error
	Done(ctx context.Context, key, appointmentGUID string) error
	Completed(ctx context.Context, key string) (appointmentGUID string, ok bool, err error)
}

// IdentityKey is a booking's identity: patient, start (to the minute) and
// column, case-folded, so the same booking spelled differently is the same.
func IdentityKey(patientGUID, startTime, columnGUID string) string {
	start := strings.TrimSpace(startTime)
	if t, ok := contracts.ParseStartTime(start); ok {
		start = t.Format("2006-01-02T15:04")
	}
	return strings.ToLower(strings.TrimSpace(patientGUID)) + "|" + start + "|" + strings.ToLower(strings.TrimSpace(columnGUID))
}

// RedisMarks keeps the marks in Redis:
//
//	<prefix>{<identity>}:inflight  "1"               TTL InFlightTTL
//	<prefix>{<identity>}:done      appointmentGUID   TTL DoneTTL
//
// The hash tag keeps both keys of one booking in one Cluster slot, so Done
// sets one and deletes the other in one MULTI.
type RedisMarks struct {
	Client      redis.UniversalClient
	Prefix      string        // default "flowgate:booking:"
	InFlightTTL time.Duration // default 24h: longer than any retry schedule
	DoneTTL     time.Duration // default 24h (the completed-task retention)
}

func (m *RedisMarks) key(id, kind string) string {
	p := m.Prefix
	if p == "" {
		p = "flowgate:booking:"
	}
	return p + "{" + id + "}:" + kind
}

func ttlOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Begin implements Marks.
func (m *RedisMarks) Begin(ctx context.Context, key string) error {
	return m.Client.Set(ctx, m.key(key, "inflight"), "1", ttlOr(m.InFlightTTL, 24*time.Hour)).Err()
}

// InFlight implements Marks.
func (m *RedisMarks) InFlight(ctx context.Context, key string) (bool, error) {
	n, err := m.Client.Exists(ctx, m.key(key, "inflight")).Result()
	return n == 1, err
}

// Clear implements Marks.
func (m *RedisMarks) Clear(ctx context.Context, key string) error {
	return m.Client.Del(ctx, m.key(key, "inflight")).Err()
}

// Done implements Marks.
func (m *RedisMarks) Done(ctx context.Context, key, appointmentGUID string) error {
	_, err := m.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, m.key(key, "done"), appointmentGUID, ttlOr(m.DoneTTL, 24*time.Hour))
		p.Del(ctx, m.key(key, "inflight"))
		return nil
	})
	return err
}

// Completed implements Marks.
func (m *RedisMarks) Completed(ctx context.Context, key string) (string, bool, error) {
	v, err := m.Client.Get(ctx, m.key(key, "done")).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

// MemoryMarks keeps the marks in this process (tests, single process
// without Redis). Entries never expire.
type MemoryMarks struct {
	mu       sync.Mutex
	inflight map[string]bool
	done     map[string]string
}

// NewMemoryMarks returns empty in-memory marks.
func NewMemoryMarks() *MemoryMarks {
	return &MemoryMarks{inflight: map[string]bool{}, done: map[string]string{}}
}

// Begin implements Marks.
func (m *MemoryMarks) Begin(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[key] = true
	return nil
}

// InFlight implements Marks.
func (m *MemoryMarks) InFlight(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inflight[key], nil
}

// Clear implements Marks.
func (m *MemoryMarks) Clear(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, key)
	return nil
}

// Done implements Marks.
func (m *MemoryMarks) Done(_ context.Context, key, guid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, key)
	m.done[key] = guid
	return nil
}

// Completed implements Marks.
func (m *MemoryMarks) Completed(_ context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.done[key]
	return g, ok, nil
}

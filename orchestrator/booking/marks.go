package booking

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Marks keep, per booking identity (patient, start time, column), who is
// booking it right now, that a SetAppointment is or was in flight, and that
// the booking completed. They are what makes "no duplicate appointment,
// ever" hold across the sync path, the async retries, crashes, repeated
// createAppt calls and several instances:
//
//   - The lease is a lock: Claim takes it atomically (SET NX PX) for one
//     attempt (an owner token) for about the write timeout plus a margin;
//     only its holder may check Cloud9, write the in-flight mark, send
//     SetAppointment, clear the mark or release the lease (compare-and-
//     delete). Whoever cannot claim it does not send: the sync path
//     answers queued (CheckFirst), a task defers.
//   - Begin (lease held) writes the in-flight mark before every
//     SetAppointment; Clear removes it after an outcome that certainly
//     created nothing; Done records the appointment (and removes it).
//   - Whoever holds the lease and finds an in-flight mark (left by a
//     timeout, a dropped connection or a crash mid-call) asks Cloud9
//     (GetAppointmentListByPatient) before sending the booking again.
//   - A Done mark answers the booking as made — for the same child only: a
//     Done mark or lease naming another child is a duplicate slot.
type Marks interface {
	// Claim takes the lease for l.Owner for ttl. ok false: another attempt
	// holds it (holder says who).
	Claim(ctx context.Context, key string, l Lease, ttl time.Duration) (ok bool, holder Lease, err error)
	// Extend resets the lease's TTL if owner still holds it.
	Extend(ctx context.Context, key, owner string, ttl time.Duration) (held bool, err error)
	// Release deletes the lease if owner holds it; held says whether it did.
	Release(ctx context.Context, key, owner string) (held bool, err error)
	// Begin writes the in-flight mark and resets the lease's TTL to
	// leaseTTL, if owner holds the lease (held false: it does not — do not
	// send).
	Begin(ctx context.Context, key, owner string, leaseTTL time.Duration) (held bool, err error)
	// InFlight reports an in-flight mark.
	InFlight(ctx context.Context, key string) (bool, error)
	// Clear deletes the in-flight mark if owner holds the lease (the lease
	// stays).
	Clear(ctx context.Context, key, owner string) error
	// Done records the completed booking, deletes the in-flight mark and
	// releases the lease if owner holds it.
	Done(ctx context.Context, key, owner string, rec DoneRecord) error
	// Completed returns the Done mark.
	Completed(ctx context.Context, key string) (rec DoneRecord, ok bool, err error)
	// Forget deletes the Done mark if it still records appointmentGUID (the
	// appointment was cancelled).
	Forget(ctx context.Context, key, appointmentGUID string) error
}

// Lease names the attempt holding a booking identity.
type Lease struct {
	Owner     string
	ChildName string
}

// DoneRecord is what a Done mark records.
type DoneRecord struct {
	AppointmentGUID string `json:"appointmentGUID"`
	ChildName       string `json:"childName,omitempty"`
	// A consultation's patient step (consultation_patient.go) records the
	// patient it created instead of an appointment.
	PatientGUID string `json:"patientGUID,omitempty"`
	FamilyID    string `json:"familyId,omitempty"`
	// Refused records a consultation child Cloud9 refused for good (the
	// failure's text), under the task's own key (refusedChildKey).
	Refused string `json:"refused,omitempty"`
}

// sameChild reports whether two child names name the same child: the first
// names, case-folded. An empty name matches anything (cannot tell; the
// identity is already the same patient and slot).
func sameChild(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == "" || b == "" {
		return true
	}
	return strings.EqualFold(contracts.FirstName(a), contracts.FirstName(b))
}

// newOwner returns a fresh lease owner token: prefix-<16 hex>.
func newOwner(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// IdentityKey is a booking's identity: patient, start (to the minute) and
// column, case-folded, so the same booking spelled differently is the same.
func IdentityKey(patientGUID, startTime, columnGUID string) string {
	return strings.ToLower(strings.TrimSpace(patientGUID)) + "|" + slotKey(startTime, columnGUID)
}

// slotKey is a slot's identity: start (to the minute) and column.
func slotKey(startTime, columnGUID string) string {
	start := strings.TrimSpace(startTime)
	if t, ok := contracts.ParseStartTime(start); ok {
		start = t.Format("2006-01-02T15:04")
	}
	return start + "|" + strings.ToLower(strings.TrimSpace(columnGUID))
}

// RedisMarks keeps the marks in Redis, under the keys RedisKeys lists (a
// lease, an in-flight mark and a done record per booking identity).
type RedisMarks struct {
	Client      redis.UniversalClient
	KeyPrefix   string        // default "flowgate:booking:"
	InFlightTTL time.Duration // default 24h: longer than any retry schedule
	DoneTTL     time.Duration // default DefaultDoneTTL; the service sets Config.MarksDoneTTL
}

// DefaultDoneTTL is the least a Done mark lives: about the retry horizon
// of a queued booking (Config.RetryHorizon: 74 min with the defaults,
// whose runs may each take TaskTimeout), not a day — an appointment
// cancelled and booked again later must not be answered from it.
const DefaultDoneTTL = time.Hour

func (m *RedisMarks) key(id, kind string) string {
	return valutil.ValOrDefault(m.KeyPrefix, keyspace.DefaultKeyPrefix+":booking:") + "{" + id + "}:" + kind
}

func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// ownsLua: KEYS[1] the lease; ARGV[1] the owner. The lease's value is
// "<owner>|<childName>".
const ownsLua = `local v = redis.call('GET', KEYS[1])
local function owns() return v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' end
`

// Replies of the lease scripts (extendScript, releaseScript, beginScript,
// clearScript): whether the lease was this owner's, so the step was done.
const (
	leaseNotOwned = 0 // another owner's lease, or none: nothing changed
	leaseOwned    = 1
)

var (
	extendScript = redis.NewScript(ownsLua + `if owns() then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end return 0`)
	// The lease may be held by this owner, else it is left alone.
	releaseScript = redis.NewScript(ownsLua + `if owns() then redis.call('DEL', KEYS[1]) return 1 end return 0`)
	// KEYS[2] in-flight mark; ARGV[2] lease TTL, ARGV[3] mark TTL (ms).
	beginScript = redis.NewScript(ownsLua + `if not owns() then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return 1`)
	clearScript = redis.NewScript(ownsLua + `if owns() then redis.call('DEL', KEYS[2]) return 1 end return 0`)
	// KEYS[2] in-flight, KEYS[3] done; ARGV[2] record, ARGV[3] done TTL.
	doneScript = redis.NewScript(ownsLua + `redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
if owns() then redis.call('DEL', KEYS[1]) end
return 1`)
	// KEYS[1] done; ARGV[1] appointment GUID.
	forgetScript = redis.NewScript(`local v = redis.call('GET', KEYS[1])
if v and string.find(string.lower(v), string.lower(ARGV[1]), 1, true) then return redis.call('DEL', KEYS[1]) end
return 0`)
)

// Claim implements Marks.
func (m *RedisMarks) Claim(ctx context.Context, key string, l Lease, ttl time.Duration) (bool, Lease, error) {
	ok, err := m.Client.SetNX(ctx, m.key(key, "lease"), l.Owner+"|"+l.ChildName, ttl).Result()
	if err != nil || ok {
		return ok, Lease{}, err
	}
	v, err := m.Client.Get(ctx, m.key(key, "lease")).Result()
	if errors.Is(err, redis.Nil) { // released in between: say so, the caller tries later
		return false, Lease{}, nil
	}
	owner, child, _ := strings.Cut(v, "|")
	return false, Lease{Owner: owner, ChildName: child}, err
}

// Extend implements Marks.
func (m *RedisMarks) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	n, err := extendScript.Run(ctx, m.Client, []string{m.key(key, "lease")}, owner, ms(ttl)).Int()
	return n == leaseOwned, err
}

// Release implements Marks.
func (m *RedisMarks) Release(ctx context.Context, key, owner string) (bool, error) {
	n, err := releaseScript.Run(ctx, m.Client, []string{m.key(key, "lease")}, owner).Int()
	return n == leaseOwned, err
}

// Begin implements Marks.
func (m *RedisMarks) Begin(ctx context.Context, key, owner string, leaseTTL time.Duration) (bool, error) {
	n, err := beginScript.Run(ctx, m.Client, []string{m.key(key, "lease"), m.key(key, "inflight")}, owner,
		ms(leaseTTL), ms(valutil.PositiveOrDefault(m.InFlightTTL, 24*time.Hour))).Int()
	return n == leaseOwned, err
}

// InFlight implements Marks.
func (m *RedisMarks) InFlight(ctx context.Context, key string) (bool, error) {
	n, err := m.Client.Exists(ctx, m.key(key, "inflight")).Result()
	return n == 1, err
}

// Clear implements Marks.
func (m *RedisMarks) Clear(ctx context.Context, key, owner string) error {
	return clearScript.Run(ctx, m.Client, []string{m.key(key, "lease"), m.key(key, "inflight")}, owner).Err()
}

// Done implements Marks.
func (m *RedisMarks) Done(ctx context.Context, key, owner string, rec DoneRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return doneScript.Run(ctx, m.Client, []string{m.key(key, "lease"), m.key(key, "inflight"), m.key(key, "done")},
		owner, string(b), ms(valutil.PositiveOrDefault(m.DoneTTL, DefaultDoneTTL))).Err()
}

// Completed implements Marks.
func (m *RedisMarks) Completed(ctx context.Context, key string) (DoneRecord, bool, error) {
	v, err := m.Client.Get(ctx, m.key(key, "done")).Result()
	if errors.Is(err, redis.Nil) {
		return DoneRecord{}, false, nil
	}
	if err != nil {
		return DoneRecord{}, false, err
	}
	return parseDone(v), true, nil
}

// Forget implements Marks.
func (m *RedisMarks) Forget(ctx context.Context, key, appointmentGUID string) error {
	if appointmentGUID == "" {
		return nil
	}
	return forgetScript.Run(ctx, m.Client, []string{m.key(key, "done")}, appointmentGUID).Err()
}

func parseDone(v string) DoneRecord {
	var rec DoneRecord
	if strings.HasPrefix(v, "{") && json.Unmarshal([]byte(v), &rec) == nil {
		return rec
	}
	return DoneRecord{AppointmentGUID: v}
}

// MemoryMarks keeps the marks in this process (tests, single process
// without Redis). Leases expire on Now (default time.Now); the in-flight
// and Done marks never expire.
type MemoryMarks struct {
	Now func() time.Time

	mu       sync.Mutex
	leases   map[string]memLease
	inflight map[string]bool
	done     map[string]DoneRecord
}

type memLease struct {
	Lease
	until time.Time
}

// NewMemoryMarks returns empty in-memory marks.
func NewMemoryMarks() *MemoryMarks {
	return &MemoryMarks{leases: map[string]memLease{}, inflight: map[string]bool{}, done: map[string]DoneRecord{}}
}

func (m *MemoryMarks) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// owns reports whether owner holds key's lease (m.mu held).
func (m *MemoryMarks) owns(key, owner string) bool {
	l, ok := m.leases[key]
	return ok && l.Owner == owner && m.now().Before(l.until)
}

// Claim implements Marks.
func (m *MemoryMarks) Claim(_ context.Context, key string, l Lease, ttl time.Duration) (bool, Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.leases[key]; ok && m.now().Before(cur.until) {
		return false, cur.Lease, nil
	}
	m.leases[key] = memLease{Lease: l, until: m.now().Add(ttl)}
	return true, Lease{}, nil
}

// Extend implements Marks.
func (m *MemoryMarks) Extend(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.owns(key, owner) {
		return false, nil
	}
	l := m.leases[key]
	l.until = m.now().Add(ttl)
	m.leases[key] = l
	return true, nil
}

// Release implements Marks.
func (m *MemoryMarks) Release(_ context.Context, key, owner string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.owns(key, owner) {
		return false, nil
	}
	delete(m.leases, key)
	return true, nil
}

// Begin implements Marks.
func (m *MemoryMarks) Begin(_ context.Context, key, owner string, leaseTTL time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.owns(key, owner) {
		return false, nil
	}
	l := m.leases[key]
	l.until = m.now().Add(leaseTTL)
	m.leases[key] = l
	m.inflight[key] = true
	return true, nil
}

// Mark writes an in-flight mark without a lease (tests: a crash mid-call
// left it).
func (m *MemoryMarks) Mark(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[key] = true
}

// InFlight implements Marks.
func (m *MemoryMarks) InFlight(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inflight[key], nil
}

// Clear implements Marks.
func (m *MemoryMarks) Clear(_ context.Context, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owns(key, owner) {
		delete(m.inflight, key)
	}
	return nil
}

// Done implements Marks.
func (m *MemoryMarks) Done(_ context.Context, key, owner string, rec DoneRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, key)
	if m.owns(key, owner) {
		delete(m.leases, key)
	}
	m.done[key] = rec
	return nil
}

// Completed implements Marks.
func (m *MemoryMarks) Completed(_ context.Context, key string) (DoneRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.done[key]
	return r, ok, nil
}

// Forget implements Marks.
func (m *MemoryMarks) Forget(_ context.Context, key, appointmentGUID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.done[key]; ok && strings.EqualFold(r.AppointmentGUID, appointmentGUID) {
		delete(m.done, key)
	}
	return nil
}

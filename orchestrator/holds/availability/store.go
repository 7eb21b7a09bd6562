package availability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Defaults of StoreConfig.
const (
	// DefaultCacheTTL is the seed's timeslot cache TTL (TIMESLOTS_CACHE_TTL_SECONDS).
	DefaultCacheTTL = 300 * time.Second
	// DefaultRetention is how long an appointment is kept after it ended
	// (it no longer blocks a slot; CancelBooking still finds it).
	DefaultRetention = 30 * 24 * time.Hour
	// casAttempts bounds the read–check–write retries of one change.
	casAttempts = 50
)

// StoreConfig configures a Store. Zero values take the defaults.
type StoreConfig struct {
	KeyPrefix string        // before every key (tests); no braces. Default "".
	CacheTTL  time.Duration // of cached timeslots. Default DefaultCacheTTL.
	Retention time.Duration // of ended appointments. Default DefaultRetention.
	Now       func() time.Time
}

func (c StoreConfig) withDefaults() StoreConfig {
	c.CacheTTL = valutil.ValOrDefault(c.CacheTTL, DefaultCacheTTL)
	c.Retention = valutil.ValOrDefault(c.Retention, DefaultRetention)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	return c
}

func (c StoreConfig) validate() error {
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("availability: KeyPrefix %q must not contain braces", c.KeyPrefix)
	case c.CacheTTL < time.Millisecond:
		return fmt.Errorf("availability: CacheTTL %s must be at least 1ms", c.CacheTTL)
	case c.Retention < time.Hour:
		return fmt.Errorf("availability: Retention %s must be at least 1h", c.Retention)
	}
	return nil
}

// Store is the Redis side of the package: the schedule (schedule-file
// source), the appointments booked through /v1, and the timeslot cache
// with its invalidation index. Safe for concurrent use by any number of
// instances.
type Store struct {
	rdb  redis.UniversalClient
	cfg  StoreConfig
	keys keys

	mu        sync.Mutex
	restoring *restoreFlight // RestoreSchedule's call in flight, nil when none

	// view is the stored schedule last decoded for reading: every read
	// still fetches the document, and decodes it again only when it is
	// not byte for byte the one decoded before.
	view atomic.Pointer[scheduleView]
}

// scheduleView is one stored schedule document decoded, shared read-only
// by every Snapshot built from it.
type scheduleView struct {
	doc         string
	sched       Schedule
	specialists []Specialist
	loc         *time.Location
	locErr      error
}

// restoreFlight is one RestoreSchedule call that concurrent callers wait on.
type restoreFlight struct {
	done   chan struct{}
	stored bool
	err    error
}

// NewStore checks cfg and returns a Store on rdb.
func NewStore(rdb redis.UniversalClient, cfg StoreConfig) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, cfg: cfg, keys: newKeys(cfg.KeyPrefix)}, nil
}

// CacheTTL is the configured timeslot cache TTL.
func (s *Store) CacheTTL() time.Duration { return s.cfg.CacheTTL }

// Schedule reads the stored schedule and its version; found is false when
// none was ever stored.
func (s *Store) Schedule(ctx context.Context) (sched Schedule, version string, found bool, err error) {
	const op = "availability.Store.Schedule"
	vals, err := s.rdb.HMGet(ctx, s.keys.schedule(), "version", "doc").Result()
	if err != nil {
		return Schedule{}, "", false, unavailableErr(op, err)
	}
	v, _ := vals[0].(string)
	doc, _ := vals[1].(string)
	if v == "" || doc == "" {
		return Schedule{}, "0", false, nil
	}
	if err := json.Unmarshal([]byte(doc), &sched); err != nil {
		return Schedule{}, "", false, fmt.Errorf("%s: corrupt stored schedule: %w", op, err)
	}
	return sched, v, true, nil
}

// scheduleView reads the stored schedule for a read-only use (snapshots,
// openings); nil when none was ever stored. The document is read every
// time, so a change made by any instance is seen at once; it is decoded
// only when it differs from the one decoded last (a schedule of dozens of
// specialists took most of a hold create's CPU to decode). Callers must
// not change what it returns: Schedule gives a copy of one's own to
// change.
func (s *Store) scheduleView(ctx context.Context) (*scheduleView, error) {
	const op = "availability.Store.Schedule"
	doc, err := s.rdb.HGet(ctx, s.keys.schedule(), "doc").Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailableErr(op, err)
	}
	if doc == "" {
		return nil, nil
	}
	if v := s.view.Load(); v != nil && v.doc == doc {
		return v, nil
	}
	v := &scheduleView{doc: doc}
	if err := json.Unmarshal([]byte(doc), &v.sched); err != nil {
		return nil, fmt.Errorf("%s: corrupt stored schedule: %w", op, err)
	}
	v.loc, v.locErr = v.sched.Location()
	v.specialists = make([]Specialist, len(v.sched.Specialists))
	for i, sp := range v.sched.Specialists {
		v.specialists[i] = sp.Specialist
	}
	s.view.Store(v)
	return v, nil
}

// SeedSchedule stores the schedule file's content (hash from
// LoadScheduleFile) unless the stored copy came from the same content, so
// admin changes survive a restart and an edited file replaces them.
// Every type of the old and new schedule is invalidated when it is stored.
func (s *Store) SeedSchedule(ctx context.Context, sched Schedule, hash string) (stored bool, err error) {
	const op = "availability.Store.SeedSchedule"
	doc, err := json.Marshal(sched)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	for range casAttempts {
		old, v, _, err := s.Schedule(ctx)
		if err != nil {
			return false, err
		}
		types := append(old.allTypeIDs(), sched.allTypeIDs()...)
		keys := append([]string{s.keys.schedule()}, s.keys.invalidation(types)...)
		n, err := seedScheduleScript.Run(ctx, s.rdb, keys, v, doc, hash).Int()
		if err != nil {
			return false, unavailableErr(op, err)
		}
		if n != scheduleMoved {
			return n == scheduleStored, nil
		}
	}
	return false, unavailableErr(op, errors.New("the schedule kept changing"))
}

// RestoreSchedule stores the schedule file's content (hash from
// LoadScheduleFile) only where no schedule is stored: the heal of a
// schedule Redis lost (a FLUSHDB, a failover to an empty replica), which
// SeedSchedule at start would otherwise be the only writer of. Admin
// changes made since the file was loaded are lost with it. The write is
// conditional in one script, so of the instances that find the schedule
// missing exactly one stores it (stored true) and the rest keep it;
// within this Store, concurrent calls share one call in flight (the
// callers after the first get stored false).
func (s *Store) RestoreSchedule(ctx context.Context, sched Schedule, hash string) (stored bool, err error) {
	const op = "availability.Store.RestoreSchedule"
	s.mu.Lock()
	if f := s.restoring; f != nil {
		s.mu.Unlock()
		select {
		case <-f.done:
			return false, f.err
		case <-ctx.Done():
			return false, unavailableErr(op, ctx.Err())
		}
	}
	f := &restoreFlight{done: make(chan struct{})}
	s.restoring = f
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.restoring = nil
		s.mu.Unlock()
		close(f.done)
	}()
	f.stored, f.err = s.restoreSchedule(ctx, sched, hash)
	return f.stored, f.err
}

func (s *Store) restoreSchedule(ctx context.Context, sched Schedule, hash string) (bool, error) {
	const op = "availability.Store.RestoreSchedule"
	doc, err := json.Marshal(sched)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	keys := append([]string{s.keys.schedule()}, s.keys.invalidation(sched.allTypeIDs())...)
	n, err := restoreScheduleScript.Run(ctx, s.rdb, keys, doc, hash).Int()
	if err != nil {
		return false, unavailableErr(op, err)
	}
	return n == scheduleStored, nil
}

// Update applies change to the stored schedule and stores the result if
// it is valid and nobody changed the schedule meanwhile (else it reads
// again), invalidating the affected types' timeslots in the same script.
// A change that does not apply stores nothing and touches no key.
func (s *Store) Update(ctx context.Context, change Change) (Schedule, error) {
	const op = "availability.Store.Update"
	for range casAttempts {
		cur, v, found, err := s.Schedule(ctx)
		if err != nil {
			return Schedule{}, err
		}
		if !found {
			return Schedule{}, conflict(op, "no schedule is stored (the schedule-file source is not in use)")
		}
		next := cur.clone()
		affected, err := change(&next)
		if err != nil {
			return Schedule{}, err
		}
		next.normalize()
		if err := next.Validate(); err != nil {
			return Schedule{}, invalidField(op, "schedule", "the change leaves an invalid schedule: %v", err)
		}
		doc, err := json.Marshal(next)
		if err != nil {
			return Schedule{}, fmt.Errorf("%s: %w", op, err)
		}
		keys := append([]string{s.keys.schedule()}, s.keys.invalidation(affected)...)
		n, err := updateScheduleScript.Run(ctx, s.rdb, keys, v, doc).Int()
		if err != nil {
			return Schedule{}, unavailableErr(op, err)
		}
		if n != scheduleMoved { // the count of cache keys invalidated
			return next, nil
		}
	}
	return Schedule{}, unavailableErr(op, errors.New("the schedule kept changing"))
}

// Invalidate deletes the cached timeslots of the given types.
func (s *Store) Invalidate(ctx context.Context, typeIDs ...string) (int, error) {
	n, err := invalidateScript.Run(ctx, s.rdb, s.keys.invalidation(typeIDs)).Int()
	if err != nil {
		return 0, unavailableErr("availability.Store.Invalidate", err)
	}
	return n, nil
}

func (s *Store) appointmentKeys(typeID string) []string {
	return append([]string{s.keys.appointments(), s.keys.appointmentsByEnd()}, s.keys.invalidation([]string{typeID})...)
}

// Record stores a new appointment and invalidates its type's timeslots
// (seed table: "Appointment created"). Recording the same appointment
// twice (bookedAt aside: a retried /book) is a no-op; another appointment
// with its id, or one of the same specialist (any type) overlapping it
// widened by buffer on both sides, is ErrConflict.
func (s *Store) Record(ctx context.Context, a Appointment, buffer time.Duration) error {
	const op = "availability.Store.Record"
	raw, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	prune := s.cfg.Now().Add(-s.cfg.Retention).UnixMilli()
	n, err := recordScript.Run(ctx, s.rdb, s.appointmentKeys(a.AppointmentTypeID),
		a.AppointmentID, raw, a.SlotEndDate.UnixMilli(), prune, a.SlotStartDate.Add(-buffer).UnixMilli(),
		a.SlotEndDate.Add(buffer).UTC().Format("2006-01-02T15:04:05")).Int()
	if err != nil {
		return unavailableErr(op, err)
	}
	switch n {
	case recordOverlap:
		return conflict(op, "specialist %q has another appointment overlapping %s", a.SpecialistID, a.SlotStartDate.Format(time.RFC3339))
	case recordIDTaken:
		return conflict(op, "appointment %q is already recorded with other details", a.AppointmentID)
	}
	return nil // recordStored or recordSame
}

// Appointment reads one appointment and its stored JSON.
func (s *Store) Appointment(ctx context.Context, id string) (Appointment, string, error) {
	const op = "availability.Store.Appointment"
	raw, err := s.rdb.HGet(ctx, s.keys.appointments(), id).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return Appointment{}, "", notFound(op, "no appointment %q", id)
	case err != nil:
		return Appointment{}, "", unavailableErr(op, err)
	}
	var a Appointment
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return Appointment{}, "", fmt.Errorf("%s: corrupt appointment %q: %w", op, id, err)
	}
	return a, raw, nil
}

// Cancel deletes an appointment and invalidates its type's timeslots
// (seed table: "Appointment cancelled"); ErrNotFound when there is none.
func (s *Store) Cancel(ctx context.Context, id string) (Appointment, error) {
	return s.replace(ctx, "availability.Store.Cancel", id, nil)
}

// Reschedule moves an appointment to another start, end and specialist
// (same type) and invalidates its type's timeslots (seed table:
// "Appointment rescheduled").
func (s *Store) Reschedule(ctx context.Context, id string, start, end time.Time, specialistID string) (Appointment, error) {
	return s.replace(ctx, "availability.Store.Reschedule", id, func(a *Appointment) {
		a.SlotStartDate, a.SlotEndDate, a.SpecialistID = start.UTC(), end.UTC(), specialistID
	})
}

// replace cancels (edit nil) or edits an appointment, read–check–write.
func (s *Store) replace(ctx context.Context, op, id string, edit func(*Appointment)) (Appointment, error) {
	for range casAttempts {
		a, raw, err := s.Appointment(ctx, id)
		if err != nil {
			return Appointment{}, err
		}
		next, end := "", int64(0)
		if edit != nil {
			edit(&a)
			b, err := json.Marshal(a)
			if err != nil {
				return Appointment{}, fmt.Errorf("%s: %w", op, err)
			}
			next, end = string(b), a.SlotEndDate.UnixMilli()
		}
		n, err := replaceScript.Run(ctx, s.rdb, s.appointmentKeys(a.AppointmentTypeID), id, raw, next, end).Int()
		if err != nil {
			return Appointment{}, unavailableErr(op, err)
		}
		if n == replaceDone {
			return a, nil
		}
	}
	return Appointment{}, unavailableErr(op, errors.New("the appointment kept changing"))
}

// Appointments lists the appointments that end after from and start
// before to.
func (s *Store) Appointments(ctx context.Context, from, to time.Time) ([]Appointment, error) {
	const op = "availability.Store.Appointments"
	raws, err := rangeScript.Run(ctx, s.rdb, []string{s.keys.appointments(), s.keys.appointmentsByEnd()}, from.UnixMilli()).StringSlice()
	if err != nil {
		return nil, unavailableErr(op, err)
	}
	out := make([]Appointment, 0, len(raws))
	for _, raw := range raws {
		var a Appointment
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			return nil, fmt.Errorf("%s: corrupt appointment: %w", op, err)
		}
		if a.SlotStartDate.Before(to) {
			out = append(out, a)
		}
	}
	return out, nil
}

// cachedDays reads the cached dates of a type's timeslots for scope (nil
// where a date is not cached) and the type's generation (for fillDays),
// in one round trip.
func (s *Store) cachedDays(ctx context.Context, typeID, scope string, dates []string) (fields []any, gen string, err error) {
	var hm *redis.SliceCmd
	var g *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		hm = p.HMGet(ctx, s.keys.timeslots(typeID, scope), dates...)
		g = p.Get(ctx, s.keys.gen(typeID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", unavailableErr("availability.Store.cachedDays", err)
	}
	gen = g.Val()
	if gen == "" {
		gen = "0"
	}
	return hm.Val(), gen, nil
}

// fillDays caches dates of a type's timeslots (date → encodeDay) unless
// the type was invalidated since gen was read.
func (s *Store) fillDays(ctx context.Context, typeID, scope, gen string, days map[string]string) (bool, error) {
	k := s.keys.timeslots(typeID, scope)
	args := make([]any, 0, 2+2*len(days))
	args = append(args, gen, strconv.FormatInt(s.cfg.CacheTTL.Milliseconds(), 10))
	for d, v := range days {
		args = append(args, d, v)
	}
	n, err := fillScript.Run(ctx, s.rdb, []string{k, s.keys.index(typeID), s.keys.gen(typeID)}, args...).Int()
	if err != nil {
		return false, unavailableErr("availability.Store.fillDays", err)
	}
	return n == fillCached, nil
}

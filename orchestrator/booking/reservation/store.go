package reservation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/slots"
)

// The seed's TTLs.
const (
	DefaultReserveTTL = 90 * time.Second  // enough to confirm and book
	DefaultConfirmTTL = 300 * time.Second // keeps a booked slot from being re-offered
)

// Config configures a Store. Zero values take the defaults.
type Config struct {
	// Prefix, when set, goes before the seed's key: "<Prefix>:SlotReservation:…".
	// Default "" (the seed's key exactly).
	Prefix string
	// ReserveTTL is how long Reserve holds a slot. Default 90 s.
	ReserveTTL time.Duration
	// ConfirmTTL is how long Confirm holds a booked slot. Default 300 s.
	ConfirmTTL time.Duration
	// Now stamps reservedAt. Default time.Now.
	Now func() time.Time
	// Logger receives the warning when Filter fails open. Default
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.ReserveTTL == 0 {
		c.ReserveTTL = DefaultReserveTTL
	}
	if c.ConfirmTTL == 0 {
		c.ConfirmTTL = DefaultConfirmTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case strings.ContainsAny(c.Prefix, "{}"):
		return fmt.Errorf("reservation: Prefix %q must not contain '{' or '}'", c.Prefix)
	case c.ReserveTTL < time.Millisecond:
		return fmt.Errorf("reservation: ReserveTTL %s must be at least 1ms", c.ReserveTTL)
	case c.ConfirmTTL < time.Millisecond:
		return fmt.Errorf("reservation: ConfirmTTL %s must be at least 1ms", c.ConfirmTTL)
	}
	return nil
}

// Store keeps slot reservations in Redis. It is safe for concurrent use by
// any number of instances.
type Store struct {
	rdb redis.UniversalClient
	cfg Config
}

// New checks cfg and returns a Store on rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, cfg: cfg}, nil
}

// Outcome says how Reserve or Confirm succeeded.
type Outcome string

// The outcomes.
const (
	Reserved  Outcome = "reserved"  // Reserve took a free slot
	Refreshed Outcome = "refreshed" // Reserve: this session held it already (idempotent)
	Confirmed Outcome = "confirmed" // Confirm extended this session's hold
	Retaken   Outcome = "retaken"   // Confirm: the hold had expired and nobody else took it; taken again
)

// Result is a successful Reserve or Confirm.
type Result struct {
	Outcome     Outcome
	Reservation Reservation   // the value now stored (an earlier Reserve's, when Refreshed)
	ExpiresIn   time.Duration // the hold's remaining TTL
}

// Reserve holds s for sessionID (seed 003 Phase 1). It fails with a
// *HeldError when another session holds s, with an error matching
// ErrUnavailable when Redis is down (proceed: fail open), and with
// CodeInvalid when s cannot be keyed.
func (st *Store) Reserve(ctx context.Context, s slots.Slot, sessionID, patientName string) (Result, error) {
	return st.take(ctx, "reservation.Reserve", reserveScript, st.cfg.ReserveTTL, s, sessionID, patientName,
		map[int64]Outcome{1: Reserved, 2: Refreshed})
}

// Confirm holds s for ConfirmTTL after sessionID booked it, if sessionID
// still holds it or nobody does; a *HeldError says another session took it
// meanwhile (the booking stands; log it). patientName is used only when the
// hold is taken again.
func (st *Store) Confirm(ctx context.Context, s slots.Slot, sessionID, patientName string) (Result, error) {
	return st.take(ctx, "reservation.Confirm", confirmScript, st.cfg.ConfirmTTL, s, sessionID, patientName,
		map[int64]Outcome{1: Confirmed, 2: Retaken})
}

func (st *Store) take(ctx context.Context, op string, script *redis.Script, ttl time.Duration,
	s slots.Slot, sessionID, patientName string, outcomes map[int64]Outcome) (Result, error) {
	if sessionID == "" {
		return Result{}, invalid(op, errors.New("reservation: a sessionId is required"))
	}
	key, err := st.key(s)
	if err != nil {
		return Result{}, invalid(op, err)
	}
	value, err := json.Marshal(Reservation{SessionID: sessionID, ReservedAt: st.cfg.Now(),
		PatientName: patientName, SlotStartTime: s.StartTime})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", op, err)
	}
	reply, err := script.Run(ctx, st.rdb, []string{key}, sessionID, value, ttl.Milliseconds()).Slice()
	if err != nil {
		return Result{}, unavailable(op, err)
	}
	code, raw, pttl, err := parseReply(reply)
	if err != nil {
		return Result{}, contracts.Wrap(contracts.CodeInternal, op, err, "unexpected reservation script reply")
	}
	var r Reservation
	_ = json.Unmarshal([]byte(raw), &r) // not the seed's JSON: zero fields
	if o, ok := outcomes[code]; ok {
		return Result{Outcome: o, Reservation: r, ExpiresIn: pttl}, nil
	}
	return Result{}, &HeldError{Key: key, ReservedAt: r.ReservedAt, SlotStartTime: r.SlotStartTime, ExpiresIn: pttl}
}

func parseReply(reply []any) (code int64, value string, pttl time.Duration, err error) {
	if len(reply) != 3 {
		return 0, "", 0, fmt.Errorf("want 3 elements, got %d", len(reply))
	}
	code, ok1 := reply[0].(int64)
	value, ok2 := reply[1].(string)
	ms, ok3 := reply[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return 0, "", 0, fmt.Errorf("reply %v has the wrong types", reply)
	}
	return code, value, time.Duration(ms) * time.Millisecond, nil
}

// Release deletes sessionID's hold on s (seed 003: after a failed
// booking). It reports whether a hold was deleted; a hold of another
// session is left alone (false, nil).
func (st *Store) Release(ctx context.Context, s slots.Slot, sessionID string) (bool, error) {
	const op = "reservation.Release"
	if sessionID == "" {
		return false, invalid(op, errors.New("reservation: a sessionId is required"))
	}
	key, err := st.key(s)
	if err != nil {
		return false, invalid(op, err)
	}
	n, err := releaseScript.Run(ctx, st.rdb, []string{key}, sessionID).Int()
	if err != nil {
		return false, unavailable(op, err)
	}
	return n == 1, nil
}

// Get returns the hold on s, if any, and its remaining TTL.
func (st *Store) Get(ctx context.Context, s slots.Slot) (r Reservation, ttl time.Duration, found bool, err error) {
	const op = "reservation.Get"
	key, err := st.key(s)
	if err != nil {
		return Reservation{}, 0, false, invalid(op, err)
	}
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err = st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	switch {
	case errors.Is(err, redis.Nil):
		return Reservation{}, 0, false, nil
	case err != nil:
		return Reservation{}, 0, false, unavailable(op, err)
	}
	_ = json.Unmarshal([]byte(get.Val()), &r)
	return r, pttl.Val(), true, nil
}

// HeldByOthers reports for each slot whether a session other than sessionID
// holds it, in one pipeline of GETs. A slot that cannot be keyed is not
// held. When Redis fails it logs a warning and answers all false with an
// error matching ErrUnavailable (fail open).
func (st *Store) HeldByOthers(ctx context.Context, sessionID string, list []slots.Slot) ([]bool, error) {
	const op = "reservation.HeldByOthers"
	held := make([]bool, len(list))
	cmds := make([]*redis.StringCmd, len(list))
	_, err := st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range list {
			if key, err := st.key(s); err == nil {
				cmds[i] = p.Get(ctx, key)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		st.cfg.Logger.Warn("slot reservations unavailable: not filtering (fail open)", "op", op,
			"slots", len(list), "err", err)
		return make([]bool, len(list)), unavailable(op, err)
	}
	for i, cmd := range cmds {
		if cmd == nil || cmd.Err() != nil { // unkeyable, or redis.Nil: free
			continue
		}
		var r Reservation
		if json.Unmarshal([]byte(cmd.Val()), &r) != nil || r.SessionID != sessionID || sessionID == "" {
			held[i] = true
		}
	}
	return held, nil
}

// Filter returns list without the slots other sessions hold (seed 003
// Phase 2), keeping order; sessionID's own holds stay visible. When Redis
// fails it logs a warning and returns list unchanged, with an error
// matching ErrUnavailable the caller may count; the slots are usable.
func (st *Store) Filter(ctx context.Context, list []slots.Slot, sessionID string) ([]slots.Slot, error) {
	if len(list) == 0 {
		return list, nil
	}
	held, err := st.HeldByOthers(ctx, sessionID, list)
	if err != nil {
		return list, err
	}
	out := make([]slots.Slot, 0, len(list))
	for i, s := range list {
		if !held[i] {
			out = append(out, s)
		}
	}
	return out, nil
}

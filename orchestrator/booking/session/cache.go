package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// DefaultTTL is the seed's session lifetime (the token's, 15 minutes).
const DefaultTTL = 15 * time.Minute

// maxKeyValue bounds a uui or phone number used in a key.
const maxKeyValue = 512

// Config configures a Cache. Zero values take the defaults.
type Config struct {
	// KeyPrefix starts every key: "<KeyPrefix>:{bookingSessions}:…". Default
	// "flowgate". It must not contain '{' or '}'.
	KeyPrefix string
	// TTL of a session put without ExpiresAt. Default DefaultTTL.
	TTL time.Duration
	// Now is the clock of CreatedAt and of the expiry check on Lookup.
	// Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix)
	c.TTL = valutil.ValOrDefault(c.TTL, DefaultTTL)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	return c
}

func (c Config) validate() error {
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("session: KeyPrefix %q must not contain '{' or '}'", c.KeyPrefix)
	case c.TTL < time.Millisecond:
		return fmt.Errorf("session: TTL %s must be at least 1ms", c.TTL)
	}
	return nil
}

// Session is one bookingSessions entry.
type Session struct {
	PatientGUID      string
	FamilyID         string
	BookingAuthToken string
	PhoneNumber      string
	PatientName      string
	UUI              string
	SessionID        string
	CreatedAt        time.Time
	ExpiresAt        time.Time
}

// jsISO is JavaScript's Date.prototype.toISOString layout.
const jsISO = "2006-01-02T15:04:05.000Z"

type wire struct {
	PatientGUID      string `json:"patientGUID"`
	FamilyID         string `json:"familyId,omitempty"`
	BookingAuthToken string `json:"bookingAuthToken,omitempty"`
	PhoneNumber      string `json:"phoneNumber,omitempty"`
	PatientName      string `json:"patientName,omitempty"`
	UUI              string `json:"uui,omitempty"`
	SessionID        string `json:"sessionId,omitempty"`
	CreatedAt        string `json:"createdAt"`
	ExpiresAt        string `json:"expiresAt"`
}

// MarshalJSON writes the session as it is stored (see keys.go).
func (s Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(wire{
		PatientGUID: s.PatientGUID, FamilyID: s.FamilyID, BookingAuthToken: s.BookingAuthToken,
		PhoneNumber: s.PhoneNumber, PatientName: s.PatientName, UUI: s.UUI, SessionID: s.SessionID,
		CreatedAt: s.CreatedAt.UTC().Format(jsISO), ExpiresAt: s.ExpiresAt.UTC().Format(jsISO),
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Session) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	created, err := time.Parse(time.RFC3339Nano, w.CreatedAt)
	if err != nil {
		return fmt.Errorf("session: createdAt: %w", err)
	}
	expires, err := time.Parse(time.RFC3339Nano, w.ExpiresAt)
	if err != nil {
		return fmt.Errorf("session: expiresAt: %w", err)
	}
	*s = Session{
		PatientGUID: w.PatientGUID, FamilyID: w.FamilyID, BookingAuthToken: w.BookingAuthToken,
		PhoneNumber: w.PhoneNumber, PatientName: w.PatientName, UUI: w.UUI, SessionID: w.SessionID,
		CreatedAt: created, ExpiresAt: expires,
	}
	return nil
}

// Cache is the shared bookingSessions cache. It is safe for concurrent use
// by any number of instances.
type Cache struct {
	rdb  redis.UniversalClient
	cfg  Config
	keys keys
}

// New checks cfg and returns a Cache on rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Cache, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Cache{rdb: rdb, cfg: cfg, keys: newKeys(cfg.KeyPrefix)}, nil
}

// Put stores s under its patientGUID (required), its uui and its phone
// number (when they are set), in one MULTI/EXEC, and returns it as stored.
// CreatedAt defaults to now and ExpiresAt to CreatedAt + TTL (pass the
// token's expiry to make the entry live exactly as long as the token); the
// keys expire at ExpiresAt. A newer Put for the same key replaces the entry.
func (c *Cache) Put(ctx context.Context, s Session) (Session, error) {
	const op = "session.Cache.Put"
	s.PatientGUID = strings.TrimSpace(s.PatientGUID)
	now := c.cfg.Now()
	switch {
	case s.PatientGUID == "":
		return Session{}, invalid(op, "a session needs a patientGUID")
	case len(s.UUI) > maxKeyValue || len(s.PhoneNumber) > maxKeyValue || len(s.PatientGUID) > maxKeyValue:
		return Session{}, invalid(op, "uui, phone number and patientGUID must be at most %d bytes", maxKeyValue)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.ExpiresAt.IsZero() {
		s.ExpiresAt = s.CreatedAt.Add(c.cfg.TTL)
	}
	ttl := s.ExpiresAt.Sub(now).Truncate(time.Millisecond)
	if ttl <= 0 {
		return Session{}, invalid(op, "the session expired at %s", s.ExpiresAt.UTC().Format(jsISO))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", op, err)
	}
	targets := []string{c.keys.guid(s.PatientGUID)}
	if s.UUI != "" {
		targets = append(targets, c.keys.uui(s.UUI))
	}
	if d := phoneDigits(s.PhoneNumber); d != "" {
		targets = append(targets, c.keys.phone(d))
	}
	_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range targets {
			p.Set(ctx, k, raw, ttl)
		}
		return nil
	})
	if err != nil {
		return Session{}, unavailable(op, err)
	}
	// Return what a Lookup will read (times at millisecond precision, UTC).
	var stored Session
	if err := json.Unmarshal(raw, &stored); err != nil {
		return Session{}, fmt.Errorf("%s: %w", op, err)
	}
	return stored, nil
}

// Lookup finds the session of a createAppt request: by patientGUID first,
// then by uui (docs/booking.md#createappt-step-by-step, step 1); either may be empty. Both keys are read
// in one round trip. found is false when neither has a live session.
func (c *Cache) Lookup(ctx context.Context, patientGUID, uui string) (s Session, found bool, err error) {
	const op = "session.Cache.Lookup"
	var keys []string
	if g := strings.TrimSpace(patientGUID); g != "" && len(g) <= maxKeyValue {
		keys = append(keys, c.keys.guid(g))
	}
	if uui != "" && len(uui) <= maxKeyValue {
		keys = append(keys, c.keys.uui(uui))
	}
	return c.first(ctx, op, keys)
}

// LookupPhone finds the session created for a phone number (createPatient's
// parent dedup). A number without digits finds nothing.
func (c *Cache) LookupPhone(ctx context.Context, phone string) (Session, bool, error) {
	const op = "session.Cache.LookupPhone"
	d := phoneDigits(phone)
	if d == "" || len(d) > maxKeyValue {
		return Session{}, false, nil
	}
	return c.first(ctx, op, []string{c.keys.phone(d)})
}

// first reads keys in one pipeline and returns the first live session.
func (c *Cache) first(ctx context.Context, op string, keys []string) (Session, bool, error) {
	if len(keys) == 0 {
		return Session{}, false, nil
	}
	cmds := make([]*redis.StringCmd, len(keys))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Session{}, false, unavailable(op, err)
	}
	now := c.cfg.Now()
	for _, cmd := range cmds {
		raw, err := cmd.Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			return Session{}, false, unavailable(op, err)
		}
		var s Session
		if err := json.Unmarshal(raw, &s); err != nil {
			return Session{}, false, contracts.Wrap(contracts.CodeInternal, op, err, "corrupt booking session")
		}
		if now.After(s.ExpiresAt) {
			continue // Redis time and our clock disagree by a hair: ours decides
		}
		return s, true, nil
	}
	return Session{}, false, nil
}

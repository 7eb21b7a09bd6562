package holds

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/autopipe"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// The seeds' timings (every one a setting).
const (
	DefaultHoldTTL  = 30 * time.Second   // docs/holds.md: a web hold, extended by heartbeat
	DefaultCooldown = 1440 * time.Minute // docs/holds.md: per appointment type after a booking
	DefaultMaxHolds = 3                  // holds one client may have at once
	DefaultSweepMax = 1000               // expired holds announced per sweep
	FaceWeb         = "web"              // Hold.Face of /v1/holds
	FaceIVA         = "iva"              // Hold.Face of createAppt reservations
	maxTTL          = 24 * time.Hour     // sanity bound on any TTL
	idBytes         = 16                 // holdId entropy: 128 random bits (a bearer secret, see Ref)
	rfc3339Milli    = "2006-01-02T15:04:05.000Z07:00"
)

// Hold is one exclusive claim on (resource = specialist / Cloud9 schedule
// column, slot start).
type Hold struct {
	HoldID            string    `json:"holdId"`
	ClientID          string    `json:"clientId"`          // web clientId, or the IVA sessionId
	AppointmentTypeID string    `json:"appointmentTypeId"` // Cloud9 appointment type GUID on the IVA face
	SpecialistID      string    `json:"specialistId"`      // Cloud9: schedule column GUID
	SlotStartDate     time.Time `json:"slotStartDate"`     // UTC, RFC 3339 on the wire
	SlotEndDate       time.Time `json:"slotEndDate"`
	HoldExpiresAt     time.Time `json:"holdExpiresAt"`
	Face              string    `json:"face,omitempty"` // "web" | "iva"
}

// Event is what the engine PUBLISHes on EventChannel(appointmentTypeID) as
// JSON: {"type":"hold"|"release"|"confirm"|"heartbeat", ...the Hold fields...}.
type Event struct {
	Type string `json:"type"`
	Hold
}

// The event types.
const (
	EventHold      = "hold"
	EventRelease   = "release"
	EventConfirm   = "confirm"
	EventHeartbeat = "heartbeat"
)

// Candidate is a specialist free at a slot (before holds are considered).
type Candidate struct {
	SpecialistID string
	Priority     int
}

// ClaimRequest asks for a hold. See Engine.Claim.
type ClaimRequest struct {
	AppointmentTypeID  string
	ClientID           string
	SlotStart, SlotEnd time.Time
	SpecialistID       string        // set: claim exactly this one; empty: assign from Candidates
	Candidates         []Candidate   // available at the slot; used when SpecialistID == ""
	MaxHolds           int           // client quota (0 = Config.MaxHolds; < 0 = none)
	Cooldown           time.Duration // the type's cooldown (0 = Config.Cooldown; < 0 = not checked)

	// For faces other than the web's (zero values: the web face).
	Face    string        // "" = FaceWeb
	TTL     time.Duration // 0 = Config.HoldTTL
	FaceKey string        // the face's own key without prefix ("" = hold:<type>:<start>:<specialist>)
	// FaceValue is stored under FaceKey ("" = the Hold JSON).
	FaceValue string
	// Refresh: when this client already holds the slot on this face, raise
	// the hold's TTL to TTL (never shorten). Without it the hold is returned
	// unchanged.
	Refresh bool
}

// Config configures an Engine. Zero values take the defaults.
type Config struct {
	// KeyPrefix goes before every key and channel, raw ("test:" gives
	// "test:hold:…"). Default "" (the seeds' keys).
	KeyPrefix string
	// HashTag is put after KeyPrefix in every key when Shards is 1. Default:
	// ClusterTag on a *redis.ClusterClient, none otherwise. Must be "" or
	// "{…}"; must be "" with more shards (each has its own tag).
	HashTag string
	// Shards is the number of hash tags the keys spread over (REDIS_SHARDS,
	// 1..shard.MaxShards; keys.go): 1, the default, keeps today's keys.
	Shards int
	// HoldTTL is a web hold's life, renewed by each heartbeat. Default 30 s.
	HoldTTL time.Duration
	// MaxHolds is the default quota of live holds per client. Default 3.
	MaxHolds int
	// Cooldown is the default cooldown after a booking. Default 1440 min.
	Cooldown time.Duration
	// SweepMax bounds the expired holds one Sweep announces. Default 1000.
	SweepMax int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// NewID makes hold ids. Default 32 random hex digits (128 bits from
	// crypto/rand): a hold id is the bearer secret of its hold (see Ref).
	NewID func() string
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// PlainRedis sends each script and single read on its own round trip.
	// By default they go through go-redis's AutoPipeliner (when the client
	// has one; package autopipe bounds each call by its context), so the
	// scripts of concurrent requests share one write and one read on a
	// connection: create + release over HTTP went from 9.3k to 13k
	// requests/s here (docs/performance.md). The pipeliner is an
	// experimental go-redis API; this is the way back.
	PlainRedis bool
}

func (c Config) withDefaults(rdb redis.UniversalClient) Config {
	c.Shards = valutil.ValOrDefault(c.Shards, 1)
	if _, cluster := rdb.(*redis.ClusterClient); cluster && c.Shards == 1 {
		c.HashTag = valutil.ValOrDefault(c.HashTag, ClusterTag)
	}
	c.HoldTTL = valutil.ValOrDefault(c.HoldTTL, DefaultHoldTTL)
	c.MaxHolds = valutil.ValOrDefault(c.MaxHolds, DefaultMaxHolds)
	c.Cooldown = valutil.ValOrDefault(c.Cooldown, DefaultCooldown)
	c.SweepMax = valutil.ValOrDefault(c.SweepMax, DefaultSweepMax)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.NewID = valutil.FuncOrDefault(c.NewID, randomID)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	tagOK := c.HashTag == "" || (strings.HasPrefix(c.HashTag, "{") && strings.HasSuffix(c.HashTag, "}") &&
		len(c.HashTag) > 2 && strings.Count(c.HashTag, "{") == 1 && strings.Count(c.HashTag, "}") == 1)
	switch {
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("holds: KeyPrefix %q must not contain '{' or '}'", c.KeyPrefix)
	case !tagOK:
		return fmt.Errorf("holds: HashTag %q must be empty or one {tag}", c.HashTag)
	case c.Shards < 1 || c.Shards > shard.MaxShards:
		return fmt.Errorf("holds: Shards %d must be 1..%d", c.Shards, shard.MaxShards)
	case c.Shards > 1 && c.HashTag != "":
		return fmt.Errorf("holds: HashTag %q must be empty with %d shards (each has its own tag)", c.HashTag, c.Shards)
	case c.HoldTTL < time.Millisecond || c.HoldTTL > maxTTL:
		return fmt.Errorf("holds: HoldTTL %s must be between 1ms and %s", c.HoldTTL, maxTTL)
	case c.MaxHolds < 0:
		return fmt.Errorf("holds: MaxHolds %d must not be negative", c.MaxHolds)
	case c.Cooldown < 0:
		return fmt.Errorf("holds: Cooldown %s must not be negative", c.Cooldown)
	case c.SweepMax < 0:
		return fmt.Errorf("holds: SweepMax %d must not be negative", c.SweepMax)
	}
	return nil
}

func randomID() string {
	b := make([]byte, idBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// RefPrefix starts every Ref.
const RefPrefix = "ref-"

// Ref is the public reference of the hold holdID: what the live stream
// shows in an event's "holdId" field and what POST /v1/holds answers as
// holdRef, so an owner can tell its own holds' events. A hold id is the
// bearer secret of its hold — with the clientId, the only credential of
// PATCH /v1/holds, DELETE /v1/holds/{holdId} and /book, and, as the
// appointment id of a /v1 booking, of DELETE /v1/appointments/{id} — so it
// is answered only to the client that made the hold, and never published.
// Ref is one-way (SHA-256 of a 128-bit random id, domain-separated), so no
// event reveals the id, and it is no credential of any route. "" for "".
func Ref(holdID string) string {
	if holdID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("flowgate holds: public ref\x00" + holdID))
	return RefPrefix + hex.EncodeToString(sum[:16])
}

// Engine is the one exclusive hold engine. Safe for concurrent use by any
// number of instances sharing the Redis.
type Engine struct {
	rdb redis.UniversalClient // multi-command pipelines, scans
	hot redis.Cmdable         // scripts and single reads: auto-pipelined unless Config.PlainRedis
	cfg Config
	r   ring           // every shard's keys (one with Shards 1)
	rot shard.Rotation // Sweep's starting shard
}

// Check reports whether New would accept c, without a Redis: the
// configuration checked before anything starts.
func (c Config) Check() error { return c.withDefaults(nil).validate() }

// New checks cfg and returns an Engine on rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults(rdb)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r, err := newRing(cfg.KeyPrefix, cfg.HashTag, cfg.Shards)
	if err != nil {
		return nil, fmt.Errorf("holds: %w", err)
	}
	return &Engine{rdb: rdb, hot: hotClient(rdb, cfg), cfg: cfg, r: r}, nil
}

// hotClient is rdb's AutoPipeliner behind the callers' contexts (package
// autopipe) unless cfg.PlainRedis or rdb has none.
func hotClient(rdb redis.UniversalClient, cfg Config) redis.Cmdable {
	if cfg.PlainRedis {
		return rdb
	}
	if p := autopipe.Prefer(rdb, cfg.Logger, "holds", "one round trip per script"); p != nil {
		return p
	}
	return rdb
}

// Config returns the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// EventChannel is Config.KeyPrefix + "holds:events:" + appointmentTypeID.
func (e *Engine) EventChannel(appointmentTypeID string) string {
	return e.r.ks[0].channel(appointmentTypeID)
}

// channel is EventChannel.
func (e *Engine) channel(appointmentTypeID string) string {
	return e.r.ks[0].channel(appointmentTypeID)
}

// SlotKey is the canonical key of (specialistID, start), for tests and tooling.
func (e *Engine) SlotKey(specialistID string, start time.Time) string {
	return e.kRes(specialistID).slot(specialistID, start)
}

// FaceKey is a face's readable key (name without prefix, e.g.
// "SlotReservation:…") with the engine's prefix and tag: with several
// shards, the tag of the resource shard of the name's last ':' field (the
// specialist / schedule column), where the claim wrote it.
func (e *Engine) FaceKey(name string) string { return e.r.ks[e.r.faceShard(name)].face(name) }

// Shards is the number of shards the keys spread over (Config.Shards).
func (e *Engine) Shards() int { return e.r.set.N() }

// kRes is the key builder of a specialist's resource shard.
func (e *Engine) kRes(specialistID string) keys { return e.r.ks[e.r.res(specialistID)] }

// kCli is the key builder of a client's shard.
func (e *Engine) kCli(clientID string) keys { return e.r.ks[e.r.cli(clientID)] }

// kHold is the key builder of a hold id's shard (its record's).
func (e *Engine) kHold(holdID string) keys { return e.r.ks[e.r.hold(holdID)] }

// record is the value in holds:records.
type record struct {
	Hold      Hold   `json:"hold"`
	SlotKey   string `json:"slotKey"`
	FaceKey   string `json:"faceKey"`
	Confirmed bool   `json:"confirmed,omitempty"`
}

// ownedBy reports whether the hold is clientID's on face. A hold id is
// minted once and its record's face and client never change, so this
// check, made on the record read before a script, holds for the script.
func (r record) ownedBy(face, clientID string) bool {
	return r.Hold.Face == face && r.Hold.ClientID == clientID
}

// keysOf is the keys of a hold's scripts, KEYS[1..6]: slot, face, client
// index, records, expiry, active — all in the hold's resource shard. When
// the client's index lives in another shard, KEYS[3] repeats KEYS[4]
// (records): the scripts then leave the index alone and the caller updates
// it in the client's shard (split.go); split is true then.
func (e *Engine) keysOf(r record) (keys []string, split bool) {
	k := e.kRes(r.Hold.SpecialistID)
	client, split := e.clientKey(k, r.Hold.ClientID)
	return []string{r.SlotKey, r.FaceKey, client, k.records(), k.expiry(), k.active(r.Hold.AppointmentTypeID)}, split
}

// clientKey is clientID's index when it lives in k's shard, else the
// placeholder k.records() and split true.
func (e *Engine) clientKey(k keys, clientID string) (string, bool) {
	if c := e.kCli(clientID); c.p != k.p {
		return k.records(), true
	}
	return k.client(clientID), false
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // only plain structs are marshalled here
		panic(fmt.Sprintf("holds: marshal %T: %v", v, err))
	}
	return string(b)
}

func event(typ string, h Hold) string { return mustJSON(Event{Type: typ, Hold: h}) }

func decodeHoldJSON(s string) (Hold, error) {
	var h Hold
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return Hold{}, fmt.Errorf("holds: bad hold value: %w", err)
	}
	return h, nil
}

// loadRecord reads a hold's record: found false when there is none.
func (e *Engine) loadRecord(ctx context.Context, op, holdID string) (record, bool, error) {
	raw, err := e.hot.HGet(ctx, e.kHold(holdID).records(), holdID).Result()
	if errors.Is(err, redis.Nil) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, unavailable(op, err)
	}
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		e.cfg.Logger.Warn("holds: unreadable hold record", "holdRef", Ref(holdID), "err", err)
		return record{}, false, nil
	}
	return r, true, nil
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func fromMS(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

package phoneindex

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Source is the part of the Cloud9 client a search uses;
// *cloud9.Client implements it.
type Source interface {
	GetPatientList(ctx context.Context, locationGUIDs []string) ([]cloud9.Record, error)
	GetPatientInformation(ctx context.Context, patGUID string) (cloud9.Record, error)
}

// Config configures an Index.
type Config struct {
	// ReadsPerSearch bounds the GetPatientInformation one search sends.
	// Default 200 (the original's).
	ReadsPerSearch int
	// ReadsPerMinute bounds them across every instance in one minute
	// (Now's). Default 600.
	ReadsPerMinute int
	// Concurrency is the most GetPatientInformation calls in flight for
	// one search. Default 10 (the original's batch).
	Concurrency int
	// RecordMaxAge: a listed patient's record older than this is read
	// again (after the patients with none). Default 1 h.
	RecordMaxAge time.Duration
	// Keep: the records are forgotten this long after the last search
	// wrote one. Default 24 h.
	Keep time.Duration
	// KeyPrefix starts every key. Default "flowgate:phoneidx:".
	KeyPrefix string
	// MinDigits is the shortest phone query accepted. Default 4.
	MinDigits int
	Now       func() time.Time
	Logger    *slog.Logger
}

func (c Config) withDefaults() Config {
	c.ReadsPerSearch = valutil.ValOrDefault(c.ReadsPerSearch, DefaultReadsPerSearch)
	c.ReadsPerMinute = valutil.ValOrDefault(c.ReadsPerMinute, DefaultReadsPerMinute)
	c.Concurrency = valutil.ValOrDefault(c.Concurrency, DefaultConcurrency)
	c.RecordMaxAge = valutil.ValOrDefault(c.RecordMaxAge, DefaultRecordMaxAge)
	c.Keep = valutil.ValOrDefault(c.Keep, DefaultKeep)
	c.KeyPrefix = valutil.ValOrDefault(c.KeyPrefix, keyspace.DefaultKeyPrefix+":phoneidx:")
	c.MinDigits = valutil.ValOrDefault(c.MinDigits, 4)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.ReadsPerSearch < 1, c.ReadsPerMinute < 1, c.Concurrency < 1, c.MinDigits < 1:
		return errors.New("phoneindex: ReadsPerSearch, ReadsPerMinute, Concurrency and MinDigits must be positive")
	case c.RecordMaxAge <= 0, c.Keep <= 0:
		return errors.New("phoneindex: RecordMaxAge and Keep must be positive")
	}
	return nil
}

// ErrTooShort is Lookup's answer to a query with fewer than MinDigits
// digits.
var ErrTooShort = errors.New("phoneindex: phone number has too few digits")

// Entry is one patient's record: GetPatientInformation's record plus the
// original's added keys (patientGUID, phones, Email).
type Entry struct {
	Record    map[string]string `json:"record"`
	GUID      string            `json:"patientGUID"`
	Phones    []string          `json:"phones"`
	Email     string            `json:"email"`
	Digits    []string          `json:"digits"`
	FetchedAt int64             `json:"fetchedAt"` // unix ms
}

// Stats describe one search.
type Stats struct {
	Total    int // patients GetPatientList listed
	Searched int // listed patients whose record was matched
	Read     int // GetPatientInformation this search sent
	Failed   int // of those, records Cloud9 did not give
	// Deferred: listed patients left unread by ReadsPerSearch,
	// ReadsPerMinute or the request's deadline (missing ones are absent
	// from this answer; stale ones were matched as they were).
	Deferred int
}

// Index is the phone search over Cloud9 with its record cache in Redis.
type Index struct {
	rdb redis.UniversalClient
	src Source
	cfg Config
	k   keys
}

// New validates cfg. An Index starts nothing: every Cloud9 read it makes
// is a Lookup's.
func New(rdb redis.UniversalClient, src Source, cfg Config) (*Index, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rdb == nil || src == nil {
		return nil, errors.New("phoneindex: Redis client and Source are required")
	}
	return &Index{rdb: rdb, src: src, cfg: cfg, k: newKeys(cfg.KeyPrefix)}, nil
}

// newEntry is one patient's entry: its GetPatientInformation record, plus
// the fields of its GetPatientList record the information lacks (PatientID,
// PatientStatus: the original's element kept them). Every field named
// like a phone is searched (Cloud9 answers PatientPhone; any other is
// searched too should it appear).
func newEntry(guid string, listed, info cloud9.Record, now time.Time) Entry {
	e := Entry{Record: make(map[string]string, len(info)+2), GUID: guid, Phones: []string{}, FetchedAt: now.UnixMilli()}
	for _, f := range info {
		e.Record[f.Name] = f.Value
	}
	for _, f := range listed {
		if _, ok := e.Record[f.Name]; !ok {
			e.Record[f.Name] = f.Value
		}
	}
	for _, f := range append(append(cloud9.Record{}, info...), listed...) {
		if strings.Contains(strings.ToLower(f.Name), "phone") && strings.TrimSpace(f.Value) != "" &&
			!slices.Contains(e.Phones, f.Value) {
			e.Phones = append(e.Phones, f.Value)
			e.Digits = append(e.Digits, Digits(f.Value))
		}
		if e.Email == "" && (strings.EqualFold(f.Name, "PatientEmail") || strings.EqualFold(f.Name, "Email")) {
			e.Email = f.Value
		}
	}
	return e
}

// Digits keeps the digits of s.
func Digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

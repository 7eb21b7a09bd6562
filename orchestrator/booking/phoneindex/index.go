package phoneindex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Source is the part of the Cloud9 client a refresh uses;
// *cloud9.Client implements it.
type Source interface {
	GetPatientList(ctx context.Context, locationGUIDs []string) ([]cloud9.Record, error)
	GetPatientInformation(ctx context.Context, patGUID string) (cloud9.Record, error)
}

// Config configures an Index. LocationGUID is required.
type Config struct {
	// LocationGUID is the practice location whose patients are indexed
	// (GetPatientList's LocGUIDs).
	LocationGUID string
	// MaxPatients bounds one crawl (the original stopped at 200). Default 5000.
	MaxPatients int
	// Concurrency is the most GetPatientInformation calls in flight.
	// Default 4 (the original sent batches of 10 at once).
	Concurrency int
	// Deadline bounds one refresh. Default 2 min.
	Deadline time.Duration
	// RefreshEvery is how often Start refreshes, and the age past which a
	// Lookup triggers a background refresh. Default 10 min.
	RefreshEvery time.Duration
	// LockTTL bounds the cross-instance refresh lock should its holder
	// die. Default Deadline + 30 s.
	LockTTL time.Duration
	// Prefix starts every key. Default "flowgate:phoneidx:".
	Prefix string
	// MissRefreshAge: a lookup that matches nothing in an index at least
	// this old refreshes it in the request (a patient created since).
	// Default 1 min; negative: never. The refresh runs in the background;
	// the lookup waits for it at most MissRefreshWait (default 2 s), then
	// answers from the index as it is.
	MissRefreshAge  time.Duration
	MissRefreshWait time.Duration
	// MinDigits is the shortest phone query accepted. Default 4.
	MinDigits int
	Now       func() time.Time
	Logger    *slog.Logger
}

func (c Config) withDefaults() Config {
	c.MaxPatients = valutil.ValOrDefault(c.MaxPatients, DefaultMaxPatients)
	c.Concurrency = valutil.ValOrDefault(c.Concurrency, DefaultConcurrency)
	c.Deadline = valutil.ValOrDefault(c.Deadline, DefaultDeadline)
	c.RefreshEvery = valutil.ValOrDefault(c.RefreshEvery, DefaultRefreshEvery)
	c.LockTTL = valutil.ValOrDefault(c.LockTTL, c.Deadline+30*time.Second)
	c.Prefix = valutil.ValOrDefault(c.Prefix, "flowgate:phoneidx:")
	c.MissRefreshAge = valutil.ValOrDefault(c.MissRefreshAge, DefaultMissRefreshAge)
	c.MissRefreshWait = valutil.PositiveOrDefault(c.MissRefreshWait, 2*time.Second)
	c.MinDigits = valutil.ValOrDefault(c.MinDigits, 4)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case strings.TrimSpace(c.LocationGUID) == "":
		return errors.New("phoneindex: LocationGUID is required")
	case c.MaxPatients < 1, c.Concurrency < 1, c.MinDigits < 1:
		return errors.New("phoneindex: MaxPatients, Concurrency and MinDigits must be positive")
	case c.Deadline <= 0, c.RefreshEvery <= 0, c.LockTTL < c.Deadline:
		return errors.New("phoneindex: Deadline and RefreshEvery must be positive, LockTTL at least Deadline")
	}
	return nil
}

// ErrRefreshing is Refresh's answer when another refresh (this process or
// another instance) holds the lock.
var ErrRefreshing = errors.New("phoneindex: a refresh is already running")

// ErrTooShort is Lookup's answer to a query with fewer than MinDigits
// digits.
var ErrTooShort = errors.New("phoneindex: phone number has too few digits")

// Entry is one indexed patient: GetPatientInformation's record plus the
// original's added keys (patientGUID, phones, Email).
type Entry struct {
	Record map[string]string `json:"record"`
	GUID   string            `json:"patientGUID"`
	Phones []string          `json:"phones"`
	Email  string            `json:"email"`
	Digits []string          `json:"digits"`
}

// Stats describe the index a Lookup read, or a Refresh built.
type Stats struct {
	RefreshedAt time.Time // the last crawl, complete or not
	// LastComplete is the last crawl that indexed every patient (zero if
	// none): staleness (RefreshEvery) is measured from it, so cut crawls
	// do not hide that a complete one is due.
	LastComplete time.Time
	Total        int // patients GetPatientList listed
	Indexed      int // patients in the index
	Failed       int // records the crawl could not fetch
	// Partial: the crawl did not index every patient (deadline,
	// MaxPatients, failed records) and was merged into the index.
	Partial bool
}

// Index is one location's phone index.
type Index struct {
	rdb     redis.UniversalClient
	src     Source
	cfg     Config
	k       keys
	running atomic.Bool // a refresh of this process is under way
	wg      sync.WaitGroup
	bg      context.Context
	stop    context.CancelFunc
}

// New validates cfg. Close stops background refreshes.
func New(rdb redis.UniversalClient, src Source, cfg Config) (*Index, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rdb == nil || src == nil {
		return nil, errors.New("phoneindex: Redis client and Source are required")
	}
	bg, stop := context.WithCancel(context.Background())
	return &Index{rdb: rdb, src: src, cfg: cfg, k: newKeys(cfg.Prefix, strings.ToLower(cfg.LocationGUID)), bg: bg, stop: stop}, nil
}

// Start refreshes the index now and every RefreshEvery until Close.
func (x *Index) Start() {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		t := time.NewTicker(x.cfg.RefreshEvery)
		defer t.Stop()
		for {
			x.refreshIfStale()
			select {
			case <-x.bg.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops Start's loop and any background refresh, and waits for them.
func (x *Index) Close() {
	x.stop()
	x.wg.Wait()
}

// refreshIfStale is Start's tick: another instance may have refreshed
// since (its ticker runs too), so an index younger than RefreshEvery is
// left alone — N instances refresh about once per RefreshEvery, not N
// times.
func (x *Index) refreshIfStale() {
	st, found, err := x.stats(x.bg)
	if err == nil && found && x.cfg.Now().Sub(st.LastComplete) < x.cfg.RefreshEvery {
		return
	}
	x.refreshLogged()
}

func (x *Index) refreshLogged() {
	st, err := x.Refresh(x.bg)
	switch {
	case errors.Is(err, ErrRefreshing), errors.Is(err, context.Canceled):
	case err != nil:
		x.cfg.Logger.Warn("phone index refresh failed", "location", x.cfg.LocationGUID, "err", err)
	default:
		x.cfg.Logger.Debug("phone index refreshed", "location", x.cfg.LocationGUID, "total", st.Total,
			"indexed", st.Indexed, "failed", st.Failed, "partial", st.Partial)
	}
}

// triggerBackground starts one background refresh unless one of this
// process is running (Refresh's lock covers other instances); the channel
// it returns (nil when none started) is closed when the refresh ends.
func (x *Index) triggerBackground() <-chan struct{} {
	if x.bg.Err() != nil || x.running.Load() {
		return nil
	}
	done := make(chan struct{})
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		defer close(done)
		x.refreshLogged()
	}()
	return done
}

// Refresh crawls the location's patients and writes the index. It answers
// ErrRefreshing when another refresh holds the lock.
func (x *Index) Refresh(ctx context.Context) (Stats, error) {
	if !x.running.CompareAndSwap(false, true) {
		return Stats{}, ErrRefreshing
	}
	defer x.running.Store(false)
	token := newToken()
	got, err := x.rdb.SetArgs(ctx, x.k.lock, token, redis.SetArgs{Mode: "NX", TTL: x.cfg.LockTTL}).Result()
	if errors.Is(err, redis.Nil) || err == nil && got != "OK" {
		return Stats{}, ErrRefreshing
	}
	if err != nil {
		return Stats{}, fmt.Errorf("phoneindex: take the refresh lock: %w", err)
	}
	defer func() {
		// Released with a context of its own: the refresh's may be spent.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := releaseLock.Run(rctx, x.rdb, []string{x.k.lock}, token).Err(); err != nil {
			x.cfg.Logger.Warn("phone index lock not released; it expires by itself", "err", err)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, x.cfg.Deadline)
	defer cancel()
	list, err := x.src.GetPatientList(cctx, []string{x.cfg.LocationGUID})
	if err != nil {
		return Stats{}, fmt.Errorf("phoneindex: GetPatientList: %w", err)
	}
	st := Stats{Total: len(list)}
	if len(list) > x.cfg.MaxPatients {
		list = list[:x.cfg.MaxPatients]
		st.Partial = true
	}
	entries, failed, cut := x.crawl(cctx, list)
	// Failed records are missing from entries: such a crawl merges too,
	// so a patient whose record failed keeps its entry.
	st.Failed, st.Partial = failed, st.Partial || cut || failed > 0
	st.RefreshedAt = x.cfg.Now()
	if !st.Partial {
		st.LastComplete = st.RefreshedAt
	}
	if err := x.write(ctx, entries, st); err != nil {
		return st, err
	}
	n, err := x.rdb.HLen(ctx, x.k.entries).Result()
	if err != nil {
		return st, fmt.Errorf("phoneindex: count entries: %w", err)
	}
	st.Indexed = int(n)
	return st, nil
}

// crawl fetches the records of list with at most Concurrency calls in
// flight until ctx ends; cut says the deadline stopped it.
func (x *Index) crawl(ctx context.Context, list []cloud9.Record) (entries []Entry, failed int, cut bool) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, x.cfg.Concurrency)
	)
	for _, rec := range list {
		guid := rec.Get("PatientGUID")
		if guid == "" {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			cut = true
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			info, err := x.src.GetPatientInformation(ctx, guid)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			entries = append(entries, newEntry(guid, rec, info))
		}()
	}
	wg.Wait()
	return entries, failed, cut || ctx.Err() != nil
}

// newEntry is one patient's entry: its GetPatientInformation record, plus
// the fields of its GetPatientList record the information lacks (PatientID,
// PatientStatus: the original's element kept them). Every field named
// like a phone is searched (Cloud9 answers PatientPhone; any other is
// searched too should it appear).
func newEntry(guid string, listed, info cloud9.Record) Entry {
	e := Entry{Record: make(map[string]string, len(info)+2), GUID: guid, Phones: []string{}}
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

// write stores a crawl: a complete one replaces the entries and sets
// lastComplete, a partial one merges into them; both in one MULTI with the
// meta.
func (x *Index) write(ctx context.Context, entries []Entry, st Stats) error {
	fields := make([]any, 0, 2*len(entries))
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("phoneindex: encode entry: %w", err)
		}
		fields = append(fields, e.GUID, string(b))
	}
	_, err := x.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if !st.Partial {
			p.Del(ctx, x.k.entries)
		}
		if len(fields) > 0 {
			p.HSet(ctx, x.k.entries, fields...)
		}
		p.HSet(ctx, x.k.meta, fieldRefreshedAt, st.RefreshedAt.UnixMilli(), fieldTotal, st.Total,
			fieldFailed, st.Failed, fieldPartial, strconv.FormatBool(st.Partial))
		if !st.Partial {
			p.HSet(ctx, x.k.meta, fieldLastComplete, st.LastComplete.UnixMilli())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("phoneindex: write the index: %w", err)
	}
	return nil
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

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b)
}

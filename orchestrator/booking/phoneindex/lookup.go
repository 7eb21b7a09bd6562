package phoneindex

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// Result is a Lookup's answer: the matching entries (by patient GUID) and
// what the search read.
type Result struct {
	Matches []Entry
	Stats   Stats
}

// Lookup finds the patients one of whose phones contains phone's digits
// (a leading US country code 1 of an 11-digit query is dropped) among the
// patients of locationGUID, or of every location of the client when it
// is "" (the original's GetPatientList without LocGUIDs). It lists them,
// reads the records it lacks or holds too old (within ReadsPerSearch,
// ReadsPerMinute and ctx), keeps them, and matches.
func (x *Index) Lookup(ctx context.Context, phone, locationGUID string) (Result, error) {
	q := Digits(phone)
	if len(q) == 11 && q[0] == '1' {
		q = q[1:]
	}
	if len(q) < x.cfg.MinDigits {
		return Result{}, fmt.Errorf("%w: %d digits, at least %d", ErrTooShort, len(q), x.cfg.MinDigits)
	}
	// Redis first: a search with nowhere to keep what it reads asks Cloud9
	// nothing.
	known, err := x.load(ctx)
	if err != nil {
		return Result{}, err
	}
	var locs []string
	if loc := strings.TrimSpace(locationGUID); loc != "" {
		locs = []string{loc}
	}
	list, err := x.src.GetPatientList(ctx, locs)
	if err != nil {
		return Result{}, fmt.Errorf("phoneindex: GetPatientList: %w", err)
	}
	due := x.due(list, known)
	st := Stats{Total: len(list)}
	want := min(len(due), x.cfg.ReadsPerSearch)
	granted := 0
	if want > 0 {
		if granted, err = x.take(ctx, want); err != nil {
			return Result{}, err
		}
	}
	fresh, read, failed := x.fetch(ctx, due[:granted])
	st.Read, st.Failed, st.Deferred = read, failed, len(due)-read
	if st.Deferred > 0 {
		x.cfg.Logger.Info("phone search deferred records to later searches", "listed", len(list), "due", len(due),
			"read", read, "perSearch", x.cfg.ReadsPerSearch, "perMinute", x.cfg.ReadsPerMinute)
	}
	x.store(ctx, fresh)
	for _, e := range fresh {
		known[e.GUID] = e
	}
	return x.match(q, list, known, st), nil
}

// load reads every kept record.
func (x *Index) load(ctx context.Context) (map[string]Entry, error) {
	all, err := x.rdb.HGetAll(ctx, x.k.entries).Result()
	if err != nil {
		return nil, fmt.Errorf("phoneindex: read the records: %w", err)
	}
	out := make(map[string]Entry, len(all))
	for guid, raw := range all {
		var e Entry
		if json.Unmarshal([]byte(raw), &e) == nil {
			out[guid] = e
		}
	}
	return out, nil
}

// listed is one patient GetPatientList named, with the age of its kept
// record (-1: none).
type listed struct {
	guid    string
	rec     cloud9.Record
	fetched int64
}

// due are the listed patients to read, in order: those without a record
// (in list order, as the original read them), then those whose record is
// older than RecordMaxAge, oldest first.
func (x *Index) due(list []cloud9.Record, known map[string]Entry) []listed {
	var missing, stale []listed
	oldest := x.cfg.Now().Add(-x.cfg.RecordMaxAge).UnixMilli()
	for _, rec := range list {
		guid := rec.Get("PatientGUID")
		if guid == "" {
			continue
		}
		e, ok := known[guid]
		switch {
		case !ok:
			missing = append(missing, listed{guid: guid, rec: rec, fetched: -1})
		case e.FetchedAt < oldest:
			stale = append(stale, listed{guid: guid, rec: rec, fetched: e.FetchedAt})
		}
	}
	sort.SliceStable(stale, func(i, j int) bool { return stale[i].fetched < stale[j].fetched })
	return append(missing, stale...)
}

// take grants up to want reads from this minute's budget.
func (x *Index) take(ctx context.Context, want int) (int, error) {
	minute := x.cfg.Now().Unix() / 60
	n, err := takeReads.Run(ctx, x.rdb, []string{x.k.reads(minute)}, want, x.cfg.ReadsPerMinute,
		(2 * time.Minute).Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("phoneindex: take the read budget: %w", err)
	}
	return n, nil
}

// fetch reads the records of due with at most Concurrency calls in
// flight until ctx ends; read counts the calls sent.
func (x *Index) fetch(ctx context.Context, due []listed) (entries []Entry, read, failed int) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, x.cfg.Concurrency)
	)
	for _, p := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		read++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			info, err := x.src.GetPatientInformation(ctx, p.guid)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			entries = append(entries, newEntry(p.guid, p.rec, info, x.cfg.Now()))
		}()
	}
	wg.Wait()
	return entries, read, failed
}

// store keeps what a search read, with a context of its own (the
// request's may be spent). A failure costs only re-reading them later.
func (x *Index) store(ctx context.Context, entries []Entry) {
	if len(entries) == 0 {
		return
	}
	fields := make([]any, 0, 2*len(entries))
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			continue
		}
		fields = append(fields, e.GUID, string(b))
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := x.rdb.TxPipelined(sctx, func(p redis.Pipeliner) error {
		p.HSet(sctx, x.k.entries, fields...)
		p.PExpire(sctx, x.k.entries, x.cfg.Keep)
		return nil
	})
	if err != nil {
		x.cfg.Logger.Warn("phone search records not kept; the next search reads them again", "err", err)
	}
}

// match keeps the listed patients one of whose phones contains the
// digits q.
func (x *Index) match(q string, list []cloud9.Record, known map[string]Entry, st Stats) Result {
	res := Result{Matches: []Entry{}}
	seen := make(map[string]bool, len(list))
	for _, rec := range list {
		guid := rec.Get("PatientGUID")
		e, ok := known[guid]
		if !ok || seen[guid] {
			continue
		}
		seen[guid] = true
		st.Searched++
		for _, d := range e.Digits {
			if strings.Contains(d, q) {
				res.Matches = append(res.Matches, e)
				break
			}
		}
	}
	sort.Slice(res.Matches, func(i, j int) bool { return res.Matches[i].GUID < res.Matches[j].GUID })
	res.Stats = st
	return res
}

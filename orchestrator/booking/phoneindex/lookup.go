package phoneindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/timeutil"
)

// Result is a Lookup's answer: the matching entries (by full name) and the
// index they were read from.
type Result struct {
	Matches []Entry
	Stats   Stats
}

// Lookup finds the patients one of whose phones contains phone's digits
// (a leading US country code 1 of an 11-digit query is dropped). It reads
// the index; an index whose last complete crawl is older than
// RefreshEvery triggers one background refresh, and a missing one is built
// first, bounded by ctx. A lookup that finds nothing in an index crawled
// longer than MissRefreshAge ago triggers a background refresh and waits
// for it at most MissRefreshWait (and ctx).
func (x *Index) Lookup(ctx context.Context, phone string) (Result, error) {
	q := Digits(phone)
	if len(q) == 11 && q[0] == '1' {
		q = q[1:]
	}
	if len(q) < x.cfg.MinDigits {
		return Result{}, fmt.Errorf("%w: %d digits, at least %d", ErrTooShort, len(q), x.cfg.MinDigits)
	}
	st, found, err := x.stats(ctx)
	if err != nil {
		return Result{}, err
	}
	var done <-chan struct{} // a background refresh this lookup started
	if !found {
		if st, err = x.build(ctx); err != nil {
			return Result{}, err
		}
	} else if x.cfg.Now().Sub(st.LastComplete) > x.cfg.RefreshEvery {
		done = x.triggerBackground()
	}
	res, err := x.match(ctx, q, st)
	if err != nil || len(res.Matches) > 0 || x.cfg.MissRefreshAge < 0 || x.cfg.Now().Sub(st.RefreshedAt) < x.cfg.MissRefreshAge {
		return res, err
	}
	// A miss on an index older than MissRefreshAge (a patient created
	// since?) starts a background refresh (the age check and the lock keep
	// that to one crawl per MissRefreshAge) and waits for it a little: the
	// crawl itself is bounded by Deadline, not by this request.
	if done == nil {
		done = x.triggerBackground()
	}
	if done == nil {
		return res, nil
	}
	wait := time.NewTimer(x.cfg.MissRefreshWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		return res, nil
	case <-ctx.Done():
		return res, nil
	}
	if fresh, found, serr := x.stats(ctx); serr == nil && found {
		return x.match(ctx, q, fresh)
	}
	return res, nil
}

// match reads the index and keeps the entries one of whose phones contains
// the digits q.
func (x *Index) match(ctx context.Context, q string, st Stats) (Result, error) {
	all, err := x.rdb.HVals(ctx, x.k.entries).Result()
	if err != nil {
		return Result{}, fmt.Errorf("phoneindex: read the index: %w", err)
	}
	st.Indexed = len(all)
	res := Result{Matches: []Entry{}, Stats: st}
	for _, raw := range all {
		var e Entry
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		for _, d := range e.Digits {
			if strings.Contains(d, q) {
				res.Matches = append(res.Matches, e)
				break
			}
		}
	}
	sort.Slice(res.Matches, func(i, j int) bool { return res.Matches[i].GUID < res.Matches[j].GUID })
	return res, nil
}

// build makes the first index in the request; if another refresh holds
// the lock it waits for that one's meta, as long as ctx allows.
func (x *Index) build(ctx context.Context) (Stats, error) {
	for {
		st, err := x.Refresh(ctx)
		if !errors.Is(err, ErrRefreshing) {
			return st, err
		}
		if err := timeutil.Sleep(ctx, 50*time.Millisecond); err != nil {
			return Stats{}, fmt.Errorf("phoneindex: waiting for the first index: %w", err)
		}
		st, found, err := x.stats(ctx)
		if err != nil || found {
			return st, err
		}
	}
}

// stats reads the meta hash; found is false when no index was ever built.
func (x *Index) stats(ctx context.Context) (Stats, bool, error) {
	m, err := x.rdb.HGetAll(ctx, x.k.meta).Result()
	if errors.Is(err, redis.Nil) || err == nil && len(m) == 0 {
		return Stats{}, false, nil
	}
	if err != nil {
		return Stats{}, false, fmt.Errorf("phoneindex: read the index meta: %w", err)
	}
	ms, _ := strconv.ParseInt(m[fieldRefreshedAt], 10, 64)
	total, _ := strconv.Atoi(m[fieldTotal])
	failed, _ := strconv.Atoi(m[fieldFailed])
	st := Stats{RefreshedAt: time.UnixMilli(ms).UTC(), Total: total, Failed: failed, Partial: m[fieldPartial] == "true"}
	if lc, err := strconv.ParseInt(m[fieldLastComplete], 10, 64); err == nil {
		st.LastComplete = time.UnixMilli(lc).UTC()
	}
	return st, true, nil
}

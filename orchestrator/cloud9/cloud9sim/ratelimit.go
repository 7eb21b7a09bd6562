package cloud9sim

import "time"

// limiter counts each procedure's admitted calls, in a sliding-window log
// (the default: a call is admitted when fewer than N calls were admitted in
// the Per before it, simulated time) or in fixed windows (at most N calls
// in each [k·Per, (k+1)·Per) since the Unix epoch). Refused calls are not
// counted, so a client that keeps knocking is admitted again as soon as the
// oldest admitted call leaves the sliding window, or the fixed window
// turns. Cloud9's own algorithm is not published: a client must stay under
// both. Guarded by Sim.mu.
type limiter struct {
	window   Window
	admitted map[string][]time.Time
	fixed    map[string]fixedCount
}

// fixedCount is one procedure's current fixed window and its calls.
type fixedCount struct {
	index int64
	n     int
}

func newLimiter(w Window) *limiter {
	return &limiter{window: w, admitted: map[string][]time.Time{}, fixed: map[string]fixedCount{}}
}

// allow admits or refuses one call of proc at now under r.
func (l *limiter) allow(proc string, r Rate, now time.Time) bool {
	if r.unlimited() {
		return true
	}
	if l.window == WindowFixed {
		if r.Per <= 0 {
			return false
		}
		i := now.UnixNano() / int64(r.Per)
		c := l.fixed[proc]
		if c.index != i {
			c = fixedCount{index: i}
		}
		if c.n >= r.N {
			l.fixed[proc] = c
			return false
		}
		c.n++
		l.fixed[proc] = c
		return true
	}
	log := l.admitted[proc]
	cut := 0
	for cut < len(log) && !log[cut].After(now.Add(-r.Per)) {
		cut++
	}
	log = log[cut:]
	if len(log) >= r.N {
		l.admitted[proc] = log
		return false
	}
	l.admitted[proc] = append(log, now)
	return true
}

// rateFor answers the limit of a procedure.
func (s *Sim) rateFor(proc string, write bool) Rate {
	if r, ok := s.cfg.Limits[proc]; ok {
		return r
	}
	if write {
		return s.cfg.WriteLimit
	}
	return s.cfg.ReadLimit
}

package cloud9sim

import "time"

// limiter is a sliding-window log per procedure: a call is admitted when
// fewer than N calls were admitted in the Per before it (simulated time).
// Refused calls are not logged, so a client that keeps knocking is admitted
// again as soon as the oldest admitted call leaves the window. Cloud9's own
// algorithm is not published; a sliding window is the strictest reading of
// "about 5 per minute". Guarded by Sim.mu.
type limiter struct {
	admitted map[string][]time.Time
}

func newLimiter() *limiter { return &limiter{admitted: map[string][]time.Time{}} }

// allow admits or refuses one call of proc at now under r.
func (l *limiter) allow(proc string, r Rate, now time.Time) bool {
	if r.unlimited() {
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

package cloud9sim

import (
	"math/rand/v2"
	"time"
)

// Faults are injected failures. The zero value injects none.
type Faults struct {
	// Latency delays every answer (real time, not scaled). The call has
	// already run, so a client that times out sooner faces an uncertain
	// outcome too.
	Latency time.Duration
	// ErrorRate is the probability that a call admitted by the rate limit
	// answers error code 0 "An unknown error occurred." without running.
	ErrorRate float64
	// EmptyRecordsRate is the probability that a read procedure answers
	// Success with an empty <Records /> without running (seen under load).
	EmptyRecordsRate float64
	// DropAfterCommit: the next n calls of the procedure run (and commit,
	// whatever their Result), then the connection is closed without an
	// answer — the uncertain outcome a client must resolve by reading.
	DropAfterCommit map[string]int
	// Procedures limits Latency, ErrorRate and EmptyRecordsRate to the
	// procedures named; empty means all.
	Procedures []string
}

// faultState is the Faults in effect plus their random source; guarded by
// Sim.mu.
type faultState struct {
	f    Faults
	only map[string]bool
	rng  *rand.Rand
}

func newFaultState(seed int64) faultState {
	return faultState{rng: rand.New(rand.NewPCG(uint64(seed), 0x636c6f756439))}
}

// applies reports whether the rate-style faults apply to proc.
func (fs *faultState) applies(proc string) bool { return len(fs.only) == 0 || fs.only[proc] }

// draw answers true with probability p (drawing only when 0 < p < 1, so a
// fault that is off does not move the sequence).
func (fs *faultState) draw(p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return fs.rng.Float64() < p
}

// SetFaults replaces the faults in effect; it is safe while serving.
func (s *Sim) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.DropAfterCommit = copyCounts(f.DropAfterCommit)
	f.Procedures = append([]string(nil), f.Procedures...)
	s.faults.f = f
	s.faults.only = nil
	if len(f.Procedures) > 0 {
		s.faults.only = map[string]bool{}
		for _, p := range f.Procedures {
			s.faults.only[p] = true
		}
	}
}

// Faults answers the faults in effect (DropAfterCommit counts what is left).
func (s *Sim) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults.f
	f.DropAfterCommit = copyCounts(f.DropAfterCommit)
	f.Procedures = append([]string(nil), f.Procedures...)
	return f
}

func copyCounts(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

package cloud9sim

import "time"

// Request is one well-formed request the simulator received, as sent:
// its procedure and its parameters in document order (credentials left
// out). Kept only with Config.RecordRequests.
type Request struct {
	Procedure string
	Params    []Param
	At        time.Time // the simulator's clock
}

// Param is one element of <Parameters>.
type Param struct {
	Name, Value string
	Nil         bool // xsi:nil="true"
}

// Get answers the first parameter called name.
func (r Request) Get(name string) (Param, bool) {
	for _, p := range r.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Requests answers the requests recorded so far, oldest first.
func (s *Sim) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// TakeRequests answers the requests recorded so far and forgets them.
func (s *Sim) TakeRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.requests
	s.requests = nil
	return out
}

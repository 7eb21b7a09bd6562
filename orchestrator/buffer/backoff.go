package buffer

import (
	"time"

	"github.com/hibiken/asynq"
)

// Backoff is the seed's retry delay min(Base·Multiplier^n, Max), n being
// the failures so far minus one (asynq passes the retries done: 0 before
// the first retry), so the first retry waits Base.
type Backoff struct {
	Base       time.Duration
	Multiplier float64
	Max        time.Duration
}

// The seed's defaults.
const (
	DefaultBackoffBase       = time.Second
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffMax        = 60 * time.Second
)

// Delay is the wait before retry n+1.
func (b Backoff) Delay(n int) time.Duration {
	if n < 0 {
		n = 0
	}
	d := float64(b.Base)
	for i := 0; i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	if d > float64(b.Max) {
		return b.Max
	}
	return time.Duration(d)
}

// RetryDelay implements asynqrt.RetryPolicy.
func (b Backoff) RetryDelay(n int, _ error, _ *asynq.Task) time.Duration { return b.Delay(n) }

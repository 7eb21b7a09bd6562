package declared

import "time"

// RetryAfterFor exposes retryAfter: -1 when v is not a delay.
func RetryAfterFor(v string, now time.Time) time.Duration {
	d, ok := retryAfter(v, now)
	if !ok {
		return -1
	}
	return d
}

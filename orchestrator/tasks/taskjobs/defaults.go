package taskjobs

import "time"

// The requeue backoff after a FAIL (Config.Backoff's default): the first
// retry after DefaultRequeueBackoffBase, doubling per attempt, capped at
// DefaultRequeueBackoffMax.
const (
	DefaultRequeueBackoffBase = 10 * time.Second
	DefaultRequeueBackoffMax  = 5 * time.Minute
)

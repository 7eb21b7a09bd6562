package phoneindex

import "time"

// Config's defaults.
const (
	DefaultMaxPatients    = 5000
	DefaultConcurrency    = 4
	DefaultDeadline       = 2 * time.Minute
	DefaultRefreshEvery   = 10 * time.Minute
	DefaultMissRefreshAge = time.Minute
)

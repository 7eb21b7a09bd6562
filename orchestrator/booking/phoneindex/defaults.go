package phoneindex

import "time"

// Config's defaults.
const (
	// DefaultReadsPerSearch is the original's bound: 200 records per call.
	DefaultReadsPerSearch = 200
	// DefaultReadsPerMinute bounds GetPatientInformation across instances:
	// three searches a minute that each read the original's 200.
	DefaultReadsPerMinute = 600
	// DefaultConcurrency is the original's batch of 10 calls at once.
	DefaultConcurrency  = 10
	DefaultRecordMaxAge = time.Hour
	DefaultKeep         = 24 * time.Hour
)

package buffer

import "time"

// CircuitConfig's defaults.
const (
	DefaultCircuitThreshold = 5                // consecutive failures that open a breaker
	DefaultCircuitTimeout   = 30 * time.Second // open → half-open after
)

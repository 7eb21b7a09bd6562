package orchestrator

// Queue names. Weights are documented in the package comment.
const (
	QueueCritical = "critical"
	QueueHigh     = "high"
	QueueDefault  = "default"
	QueueLow      = "low"
)

// DefaultQueues maps each queue to its weight.
func DefaultQueues() map[string]int {
	return map[string]int{QueueCritical: 6, QueueHigh: 4, QueueDefault: 2, QueueLow: 1}
}

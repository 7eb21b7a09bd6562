package asynqrt

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

// maxQueueNameLen bounds ValidQueueName.
const maxQueueNameLen = 128

// ValidQueueName reports whether name can be one of flowgate's Asynq
// queues: 1–128 ASCII letters, digits, '.', '_' and '-', the first a
// letter or digit ("critical", "buffer.low"). Where a queue name comes
// from outside (Asynqmon's routes) anything else is refused before Asynq
// sees it: a path segment ("..", "."), a Redis hash tag ("{low}"), an
// Asynqmon action separator (':'), blanks — names Asynq would accept and
// turn into keys of a queue that does not exist.
func ValidQueueName(name string) bool {
	if name == "" || len(name) > maxQueueNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

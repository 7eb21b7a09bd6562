package contracts

import (
	"encoding/json"
	"net/http"
	"time"
)

// The work buffer's error codes (docs/buffer.md), spelled as the
// original buffer spells them. Their HTTP statuses are in bufferStatus, which
// Code.HTTPStatus consults: still one code → status map.
const (
	CodeBufferQueueFull    Code = "QUEUE_FULL"           // 429 with Retry-After: backpressure
	CodeMessageTimeout     Code = "MESSAGE_TIMEOUT"      // a handler exceeded its Timeout (recorded on the message)
	CodeInvalidMessage     Code = "INVALID_MESSAGE"      // 400: the message or its payload failed validation
	CodeHandlerNotFound    Code = "HANDLER_NOT_FOUND"    // 400: no handler registered for the type
	CodePersistenceFailure Code = "PERSISTENCE_FAILURE"  // 503: Redis failed
	CodeMaxRetriesExceeded Code = "MAX_RETRIES_EXCEEDED" // recorded on a dead letter; 409 if ever answered
	CodeCircuitOpen        Code = "CIRCUIT_OPEN"         // 503: the type's breaker is open
	CodeShutdownInProgress Code = "SHUTDOWN_IN_PROGRESS" // 503: the buffer is draining
	CodeDuplicateMessage   Code = "DUPLICATE_MESSAGE"    // 409 with the original messageId
)

// bufferStatus is the buffer codes' part of the code → status map.
var bufferStatus = map[Code]int{
	CodeBufferQueueFull:    http.StatusTooManyRequests,
	CodeMessageTimeout:     http.StatusGatewayTimeout,
	CodeInvalidMessage:     http.StatusBadRequest,
	CodeHandlerNotFound:    http.StatusBadRequest,
	CodePersistenceFailure: http.StatusServiceUnavailable,
	CodeMaxRetriesExceeded: http.StatusConflict,
	CodeCircuitOpen:        http.StatusServiceUnavailable,
	CodeShutdownInProgress: http.StatusServiceUnavailable,
	CodeDuplicateMessage:   http.StatusConflict,
}

// BufferPriority is a message's priority: 0 = CRITICAL … 3 = LOW (docs/buffer.md).
type BufferPriority int

// The four priorities.
const (
	BufferPriorityCritical BufferPriority = 0
	BufferPriorityHigh     BufferPriority = 1
	BufferPriorityNormal   BufferPriority = 2
	BufferPriorityLow      BufferPriority = 3
)

// Valid reports whether p is one of the four priorities.
func (p BufferPriority) Valid() bool { return p >= BufferPriorityCritical && p <= BufferPriorityLow }

// BufferState is a message's lifecycle state.
type BufferState string

// The states of a BufferMessage (docs/buffer.md).
const (
	BufferPending    BufferState = "pending"
	BufferProcessing BufferState = "processing"
	BufferCompleted  BufferState = "completed"
	BufferFailed     BufferState = "failed"
	BufferDLQ        BufferState = "dlq"
)

// BufferMetadata is the message's metadata object.
type BufferMetadata struct {
	CorrelationID string          `json:"correlationId,omitempty"`
	Source        string          `json:"source,omitempty"`
	UserID        string          `json:"userId,omitempty"`
	CompanyID     string          `json:"companyId,omitempty"`
	TraceID       string          `json:"traceId,omitempty"`
	Custom        json.RawMessage `json:"custom,omitempty"`
}

// BufferError is one entry of a message's errors array.
type BufferError struct {
	Message       string    `json:"message"`
	Code          string    `json:"code"`
	Stack         string    `json:"stack,omitempty"`
	Timestamp     time.Time `json:"timestamp"`
	AttemptNumber int       `json:"attemptNumber"`
}

// BufferLastError is the message's lastError object.
type BufferLastError struct {
	Message   string    `json:"message"`
	Code      string    `json:"code"`
	Timestamp time.Time `json:"timestamp"`
}

// BufferMessage is the original buffer's message (docs/buffer.md), field
// for field. Times not yet
// reached are null.
type BufferMessage struct {
	MessageID           string           `json:"messageId"`
	Type                string           `json:"type"`
	Priority            BufferPriority   `json:"priority"`
	State               BufferState      `json:"state"`
	Payload             json.RawMessage  `json:"payload"`
	Metadata            BufferMetadata   `json:"metadata"`
	AttemptCount        int              `json:"attemptCount"`
	MaxRetries          int              `json:"maxRetries"`
	ProcessingStartedAt *time.Time       `json:"processingStartedAt"`
	LastProcessedAt     *time.Time       `json:"lastProcessedAt"`
	CompletedAt         *time.Time       `json:"completedAt"`
	VisibleAt           *time.Time       `json:"visibleAt"`
	WorkerID            string           `json:"workerId,omitempty"`
	Errors              []BufferError    `json:"errors"`
	LastError           *BufferLastError `json:"lastError"`
	IdempotencyKey      string           `json:"idempotencyKey,omitempty"`
	Result              json.RawMessage  `json:"result,omitempty"`
	// ResultTruncated: the handler's result was over its bound and Result
	// holds its beginning only (flowgate's addition).
	ResultTruncated bool       `json:"resultTruncated,omitempty"`
	ExpiresAt       *time.Time `json:"expiresAt"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
}

// BufferEnqueueRequest is one message to enqueue. Priority defaults to
// NORMAL; MaxRetries to the handler's; MessageID to a new UUID.
type BufferEnqueueRequest struct {
	MessageID      string          `json:"messageId,omitempty"`
	Type           string          `json:"type"`
	Priority       *BufferPriority `json:"priority,omitempty"`
	Payload        json.RawMessage `json:"payload"`
	Metadata       BufferMetadata  `json:"metadata"`
	MaxRetries     *int            `json:"maxRetries,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}

// BufferBatchRequest is POST /api/buffer/enqueue with several messages.
type BufferBatchRequest struct {
	Messages []json.RawMessage `json:"messages"`
}

// BufferEnqueueResponse answers a single enqueue.
type BufferEnqueueResponse struct {
	Success   bool           `json:"success"`
	MessageID string         `json:"messageId"`
	State     BufferState    `json:"state"`
	Priority  BufferPriority `json:"priority"`
	Queue     string         `json:"queue"`
}

// BufferItemResult is one message's result in a batch answer.
type BufferItemResult struct {
	Index     int        `json:"index"`
	Success   bool       `json:"success"`
	MessageID string     `json:"messageId,omitempty"`
	Queue     string     `json:"queue,omitempty"`
	Error     *ErrorBody `json:"error,omitempty"`
}

// BufferBatchResponse answers a batch enqueue: per-item results in request
// order; success is true only when every item was enqueued.
type BufferBatchResponse struct {
	Success  bool               `json:"success"`
	Enqueued int                `json:"enqueued"`
	Failed   int                `json:"failed"`
	Results  []BufferItemResult `json:"results"`
}

// BufferQueueStats counts one priority queue's tasks by asynq state.
type BufferQueueStats struct {
	Priority  BufferPriority `json:"priority"`
	Pending   int            `json:"pending"`
	Active    int            `json:"active"`
	Scheduled int            `json:"scheduled"`
	Retry     int            `json:"retry"`
	Completed int            `json:"completed"`
	Archived  int            `json:"archived"`
}

// BufferStats answers GET /api/buffer/stats.
type BufferStats struct {
	State        string                      `json:"state"`
	Depth        int64                       `json:"depth"`
	Level        string                      `json:"level"`
	MaxQueueSize int64                       `json:"maxQueueSize"`
	Queues       map[string]BufferQueueStats `json:"queues"`
	DLQ          int64                       `json:"dlq"`
	Handlers     []string                    `json:"handlers"`
	Circuits     []BufferCircuit             `json:"circuits"`
}

// BufferCircuit is one handler type's breaker.
type BufferCircuit struct {
	Type                 string `json:"type"`
	State                string `json:"state"`
	Requests             uint32 `json:"requests"`
	TotalFailures        uint32 `json:"totalFailures"`
	ConsecutiveFailures  uint32 `json:"consecutiveFailures"`
	ConsecutiveSuccesses uint32 `json:"consecutiveSuccesses"`
}

// BufferCircuitsResponse answers GET /api/buffer/circuits.
type BufferCircuitsResponse struct {
	Circuits []BufferCircuit `json:"circuits"`
}

// BufferDLQItem is one dead letter.
type BufferDLQItem struct {
	MessageID string         `json:"messageId"`
	Type      string         `json:"type"`
	Queue     string         `json:"queue"`
	Error     string         `json:"error"`
	Retried   int            `json:"retried"`
	MaxRetry  int            `json:"maxRetry"`
	FailedAt  time.Time      `json:"failedAt"`
	Message   *BufferMessage `json:"message,omitempty"`
}

// BufferDLQList answers GET /api/buffer/dlq; nextCursor is empty on the
// last page.
type BufferDLQList struct {
	Items      []BufferDLQItem `json:"items"`
	NextCursor string          `json:"nextCursor"`
}

// BufferDLQCount answers GET /api/buffer/dlq/count.
type BufferDLQCount struct {
	Count int64 `json:"count"`
}

// BufferDLQStats answers GET /api/buffer/dlq/stats.
type BufferDLQStats struct {
	Count          int64            `json:"count"`
	ByQueue        map[string]int64 `json:"byQueue"`
	ByType         map[string]int64 `json:"byType"`
	Oldest         *time.Time       `json:"oldest"`
	Newest         *time.Time       `json:"newest"`
	AlertThreshold int64            `json:"alertThreshold"`
	Alerting       bool             `json:"alerting"`
}

// BufferActionResponse answers replay, delete and circuit reset.
type BufferActionResponse struct {
	Success   bool   `json:"success"`
	MessageID string `json:"messageId,omitempty"`
	Type      string `json:"type,omitempty"`
	State     string `json:"state,omitempty"`
}

// BufferEvent is one buffer event (metrics, the Redis channel, SSE).
type BufferEvent struct {
	Event     string          `json:"event"` // enqueued|completed|failed|dlq|circuit
	MessageID string          `json:"messageId,omitempty"`
	Type      string          `json:"type"`
	Priority  BufferPriority  `json:"priority"`
	Attempt   int             `json:"attempt,omitempty"`
	WillRetry *bool           `json:"willRetry,omitempty"`
	Code      string          `json:"code,omitempty"`
	Error     string          `json:"error,omitempty"`
	State     string          `json:"state,omitempty"`   // circuit: the new breaker state
	Channel   string          `json:"channel,omitempty"` // emit: the sse.emit channel
	Name      string          `json:"name,omitempty"`    // emit: the event name
	Data      json.RawMessage `json:"data,omitempty"`
	At        time.Time       `json:"at"`
}

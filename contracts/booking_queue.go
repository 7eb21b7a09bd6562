package contracts

// GET queue-status (seed 000 §4.6): the queued booking operations. The
// seed's fields come first and keep their meaning; pagination and a few
// fields the production flow added are new.

// Operation statuses.
const (
	OpPending    = "pending"
	OpProcessing = "processing"
	OpCompleted  = "completed"
	OpFailed     = "failed"
)

// Queue-status pagination limits.
const (
	DefaultQueuePageSize = 50
	MaxQueuePageSize     = 500
)

// QueueStatusQuery is queue-status' query string: page (1-based) and
// pageSize, or cursor (the nextCursor of the previous page).
type QueueStatusQuery struct {
	Page     int    `json:"page,omitempty"`
	PageSize int    `json:"pageSize,omitempty"`
	Cursor   string `json:"cursor,omitempty"`
}

// QueueStatusResponse is queue-status' answer. The counts cover every
// operation; operations is one page, newest first.
type QueueStatusResponse struct {
	Total      int              `json:"total"`
	Pending    int              `json:"pending"`
	Processing int              `json:"processing"`
	Completed  int              `json:"completed"`
	Failed     int              `json:"failed"`
	Operations []QueueOperation `json:"operations"`

	Page        int     `json:"page"`
	PageSize    int     `json:"pageSize"`
	TotalPages  int     `json:"totalPages"`
	NextCursor  *string `json:"nextCursor"`
	StorageType string  `json:"storageType"`
}

// QueueOperation is one queued operation.
type QueueOperation struct {
	ID          string  `json:"id"`
	Status      string  `json:"status"`
	Attempts    int     `json:"attempts"`
	MaxAttempts int     `json:"maxAttempts"`
	CreatedAt   string  `json:"createdAt"`
	NextRetryAt *string `json:"nextRetryAt"`
	LastError   *string `json:"lastError"`
	ChildName   string  `json:"childName"`
	StartTime   string  `json:"startTime"`

	OperationType string         `json:"operationType"`
	PatientName   string         `json:"patientName,omitempty"`
	CompletedAt   string         `json:"completedAt,omitempty"`
	Result        *QueueOpResult `json:"result,omitempty"`
}

// QueueOpResult is what a completed operation produced.
type QueueOpResult struct {
	AppointmentGUID string `json:"appointmentGUID,omitempty"`
	PatientGUID     string `json:"patientGUID,omitempty"`
}

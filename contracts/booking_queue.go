package contracts

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

// Queue-status scopes (QueueStatusResponse.Scope).
const (
	// QueueScopeAll: every operation of the queue, names included (the
	// operator's view: monitoring credentials, no lookup key).
	QueueScopeAll = "all"
	// QueueScopeLookup: only the operations the lookup keys name.
	QueueScopeLookup = "lookup"
)

// MaxQueueLookupKey bounds a sessionId or uui lookup key (bytes).
const MaxQueueLookupKey = 512

// QueueStatusQuery is queue-status' query string: page (1-based) and
// pageSize, or cursor (the nextCursor of the previous page); the lookup
// keys operationId, sessionId and uui; and Operator, which is not a
// parameter but what the HTTP layer found.
type QueueStatusQuery struct {
	Page     int    `json:"page,omitempty"`
	PageSize int    `json:"pageSize,omitempty"`
	Cursor   string `json:"cursor,omitempty"`

	// OperationID picks one operation (a queued answer's operationId).
	OperationID string `json:"operationId,omitempty"`
	// SessionID and UUI name a call: the operations it queued (the
	// sessionId / uui its createAppt, createPatient or bookConsultation
	// sent). With both, an operation of either matches. With OperationID
	// too, that operation only if it is the call's.
	SessionID string `json:"sessionId,omitempty"`
	UUI       string `json:"uui,omitempty"`

	// Operator: the request carries the operator's (monitoring)
	// credentials — the whole queue without a key, names included. Set
	// only by the HTTP layer after checking them; the zero value is the
	// anonymous caller's view.
	Operator bool `json:"-"`
}

// Lookup reports whether q names operations (any lookup key).
func (q QueueStatusQuery) Lookup() bool {
	return q.OperationID != "" || q.SessionID != "" || q.UUI != ""
}

// QueueStorageType is queue-status' storageType: "redis", the original's
// value (flowgate's queue is Asynq's, which lives in Redis too).
const QueueStorageType = "redis"

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
	// Scope is QueueScopeAll or QueueScopeLookup: what the counts and
	// operations cover.
	Scope string `json:"scope"`
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

	// A failed operation's class (when known), when it failed, and what
	// the practice should do about it (FailedNextStep).
	ErrorType string `json:"errorType,omitempty"`
	FailedAt  string `json:"failedAt,omitempty"`
	NextStep  string `json:"nextStep,omitempty"`
}

// WithoutNames is op without the patient's and the child's names: what a
// caller without the operator's credentials is shown (childName stays, "").
func (op QueueOperation) WithoutNames() QueueOperation {
	op.PatientName, op.ChildName = "", ""
	return op
}

// QueueOpResult is what a completed operation produced.
type QueueOpResult struct {
	AppointmentGUID string `json:"appointmentGUID,omitempty"`
	PatientGUID     string `json:"patientGUID,omitempty"`
}

// FailedNextStep is what the practice should do about a queued operation
// that failed for good — queue-status' nextStep and booking_failed's — by
// operation type and error type (empty when unknown). uncertain: the last
// attempt's outcome is unknown, so the appointment or patient may exist.
// The caller was told on the call that the booking would be confirmed
// shortly, so every step starts from calling the family back.
func FailedNextStep(operationType, errorType string, uncertain bool) string {
	if operationType == OpSetPatient {
		if uncertain {
			return "Look the family up in Cloud9 first (the last attempt's outcome is unknown), then call them back to finish the booking."
		}
		return "Call the family back: their patient record could not be created in Cloud9, so nothing was booked."
	}
	switch {
	case uncertain:
		return "Check the family's appointments in Cloud9 first (the last attempt's outcome is unknown); if it is not there, call the family back to rebook."
	case errorType == BookingErrSlotNotAvailable:
		return "Call the family back to book another time: Cloud9 refused the slot (taken, or not bookable)."
	case errorType == BookingErrDuplicateSlot:
		return "Call the family back to book this child another time: the slot is already booked for another child of the same patient."
	case errorType == BookingErrPatientNotFound:
		return "Check the patient in Cloud9, then call the family back to rebook: Cloud9 did not know the patient."
	}
	return "Call the family back to rebook: the appointment was not made in Cloud9."
}

package contracts

import (
	"encoding/json"
	"strings"
	"time"
)

// This file holds the wire shapes of the VM task queue that the n8n
// "Phase 2: Orchestration & Management" workflow managed (docs/tasks.md):
// POST/GET /queue, PATCH /queue/{id}/status, PATCH /queue/{id}/requeue,
// worker claim + heartbeat, and the /ack and /fail webhooks.

// Status is the state of a queue task.
type Status string

// The task states of the seed's diagram. A dead letter is not a state of its
// own: it is ERROR with parsed_payload.dlq = true.
const (
	StatusPending    Status = "PENDING"
	StatusProcessing Status = "PROCESSING"
	StatusDone       Status = "DONE"
	StatusError      Status = "ERROR"
)

// AllStatuses lists the states in diagram order.
func AllStatuses() []Status {
	return []Status{StatusPending, StatusProcessing, StatusDone, StatusError}
}

// Valid reports whether s is one of the four states (exact spelling).
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusDone, StatusError:
		return true
	}
	return false
}

// ParseStatus accepts a state name in any case, surrounded by any space.
// The error is an *Error with CodeInvalid and Details{"field": "status"}.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToUpper(strings.TrimSpace(s)))
	if !st.Valid() {
		return "", &Error{Code: CodeInvalid, Message: "status must be one of PENDING, PROCESSING, DONE, ERROR; got " + quote(s),
			Details: map[string]any{"field": "status"}}
	}
	return st, nil
}

// Priority orders pending tasks for claiming: HIGH before NORMAL before LOW.
type Priority string

// The seed's priority levels. NORMAL is the default of a new task; HIGH is
// given to requeued, recovered and SLA-escalated tasks.
const (
	PriorityHigh   Priority = "HIGH"
	PriorityNormal Priority = "NORMAL"
	PriorityLow    Priority = "LOW"
)

// AllPriorities lists the priorities in claim order.
func AllPriorities() []Priority {
	return []Priority{PriorityHigh, PriorityNormal, PriorityLow}
}

// Valid reports whether p is one of the three priorities (exact spelling).
func (p Priority) Valid() bool {
	switch p {
	case PriorityHigh, PriorityNormal, PriorityLow:
		return true
	}
	return false
}

// ParsePriority accepts a priority name in any case; empty gives def.
// The error is an *Error with CodeInvalid and Details{"field": "priority"}.
func ParsePriority(s string, def Priority) (Priority, error) {
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	p := Priority(strings.ToUpper(strings.TrimSpace(s)))
	if !p.Valid() {
		return "", &Error{Code: CodeInvalid, Message: "priority must be one of HIGH, NORMAL, LOW; got " + quote(s),
			Details: map[string]any{"field": "priority"}}
	}
	return p, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Limits of the task API.
const (
	MaxBatchCreate       = 500 // tasks in one POST /queue
	MaxClaimLimit        = 50  // tasks in one claim
	MaxClaimWaitMS       = 20_000
	DefaultListLimit     = 100
	MaxListLimit         = 1000
	DefaultMaxAttempts   = 3 // MAX_RETRY_ATTEMPTS
	MaxMaxAttempts       = 100
	MaxIDBytes           = 256  // encounter_id, worker_id
	MaxErrorMessageBytes = 4096 // longer error messages are truncated, not refused
)

// DLQErrorMessage is the seed's error_message of a task moved to the dead
// letter queue because it ran out of attempts.
const DLQErrorMessage = "Max retry attempts exceeded. Moved to Dead Letter Queue."

// DLQRecoveriesErrorMessage is the error_message of a task moved to the dead
// letter queue because a sweep recovered it MAX_RECOVERIES times: its
// worker went silent (no heartbeat) that often, without a FAIL. The sweep's
// reason and the worker are in its history.
const DLQRecoveriesErrorMessage = "Max recoveries exceeded: its worker stopped sending heartbeats too many times. Moved to Dead Letter Queue."

// Task is one queue entry as GET /queue and the other task endpoints show it.
//
// payload is stored exactly as Phase 1 gave it. parsed_payload is a JSON
// object (or null) holding what happened to the task: the ACK's
// experityActions under "experityActions" and "dlq": true while it is a dead
// letter. Unset timestamps, error_message and worker_id are null. history is
// present where it was asked for (a single task's view, or a list with
// history=true) and absent otherwise.
type Task struct {
	QueueID       string          `json:"queue_id"`
	EncounterID   string          `json:"encounter_id"`
	Status        Status          `json:"status"`
	Priority      Priority        `json:"priority"`
	Attempts      int             `json:"attempts"`
	MaxAttempts   int             `json:"max_attempts"`
	Recoveries    int             `json:"recoveries"` // sweep recoveries (worker silent), counted apart from attempts
	Payload       json.RawMessage `json:"payload"`
	ParsedPayload json.RawMessage `json:"parsed_payload"`
	ErrorMessage  string          `json:"error_message"` // "" is sent as null
	WorkerID      string          `json:"worker_id"`     // "" is sent as null
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	ClaimedAt     *time.Time      `json:"claimed_at"`
	HeartbeatAt   *time.Time      `json:"heartbeat_at"`
	History       []TaskEvent     `json:"history,omitempty"`
}

// MarshalJSON sends empty error_message and worker_id as null, like the
// database-backed API the workflow used.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	return json.Marshal(struct {
		plain
		ErrorMessage *string `json:"error_message"`
		WorkerID     *string `json:"worker_id"`
	}{plain(t), nullable(t.ErrorMessage), nullable(t.WorkerID)})
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// InDLQ reports whether parsed_payload carries "dlq": true.
func (t Task) InDLQ() bool {
	if t.Status != StatusError || len(t.ParsedPayload) == 0 {
		return false
	}
	var pp struct {
		DLQ bool `json:"dlq"`
	}
	return json.Unmarshal(t.ParsedPayload, &pp) == nil && pp.DLQ
}

// TaskEvent is one entry of a task's bounded history: when, from which state
// to which, who did it (a worker id, "api", "requeue", "sweep", "sla", …) and
// why. from is "" for the creation event; from == to for changes within a
// state (an SLA promotion, a move to the DLQ of an ERROR task).
type TaskEvent struct {
	At     time.Time `json:"at"`
	From   Status    `json:"from"`
	To     Status    `json:"to"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
}

// CreateTaskRequest is one task of POST /queue. queue_id is generated when
// absent; priority defaults to NORMAL and max_attempts to
// MAX_RETRY_ATTEMPTS.
type CreateTaskRequest struct {
	QueueID     string          `json:"queue_id,omitempty"`
	EncounterID string          `json:"encounter_id"`
	Priority    Priority        `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Payload     json.RawMessage `json:"payload"`
}

// BatchCreateRequest is POST /queue with several tasks (at most
// MaxBatchCreate), created all or nothing.
type BatchCreateRequest struct {
	Tasks []CreateTaskRequest `json:"tasks"`
}

// CreateResult is the outcome for one task of a create: duplicate is true
// when an existing task was returned instead (same queue_id, or an open task
// for the same encounter_id).
type CreateResult struct {
	Duplicate bool `json:"duplicate"`
	Task      Task `json:"task"`
}

// CreateResponse answers a single-task POST /queue.
type CreateResponse struct {
	Success   bool `json:"success"`
	Duplicate bool `json:"duplicate"`
	Task      Task `json:"task"`
}

// BatchCreateResponse answers a batch POST /queue, results in request order.
type BatchCreateResponse struct {
	Success    bool           `json:"success"`
	Created    int            `json:"created"`
	Duplicates int            `json:"duplicates"`
	Results    []CreateResult `json:"results"`
}

// ListQuery is GET /queue's query string. queue_id, encounter_id, status,
// priority and dlq filter (all given filters apply); limit is 1..1000
// (default 100); cursor is the next_cursor of the previous page.
type ListQuery struct {
	Status      Status   `json:"status,omitempty" query:"status"`
	QueueID     string   `json:"queue_id,omitempty" query:"queue_id"`
	EncounterID string   `json:"encounter_id,omitempty" query:"encounter_id"`
	Priority    Priority `json:"priority,omitempty" query:"priority"`
	DLQ         bool     `json:"dlq,omitempty" query:"dlq"`
	History     bool     `json:"history,omitempty" query:"history"`
	Limit       int      `json:"limit,omitempty" query:"limit"`
	Cursor      string   `json:"cursor,omitempty" query:"cursor"`
}

// ListResponse answers GET /queue. next_cursor is "" on the last page; a
// page may hold fewer than limit tasks and still have a next_cursor.
type ListResponse struct {
	Success    bool   `json:"success"`
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"next_cursor"`
}

// StatusUpdateRequest is PATCH /queue/{id}/status, the generic (admin and
// n8n-compatible) transition. error_message absent leaves it, "" clears it;
// parsed_payload, when present, replaces the whole parsed_payload (an object
// or null; "dlq": true in it with status ERROR moves the task to the DLQ).
// worker_id is used when the new status is PROCESSING.
type StatusUpdateRequest struct {
	Status            Status          `json:"status"`
	ErrorMessage      *string         `json:"error_message,omitempty"`
	IncrementAttempts bool            `json:"increment_attempts,omitempty"`
	ParsedPayload     json.RawMessage `json:"parsed_payload,omitempty"`
	WorkerID          string          `json:"worker_id,omitempty"`
}

// RequeueRequest is PATCH /queue/{id}/requeue (and a DLQ replay): the
// priority of the task once PENDING again, default HIGH.
type RequeueRequest struct {
	Priority Priority `json:"priority,omitempty"`
}

// TaskResponse answers the single-task endpoints (status, requeue, replay,
// heartbeat). noop is true when nothing changed (a replayed requeue of a
// task already PENDING or PROCESSING); message then says why.
type TaskResponse struct {
	Success bool   `json:"success"`
	Noop    bool   `json:"noop"`
	Message string `json:"message,omitempty"`
	Task    Task   `json:"task"`
}

// ClaimRequest asks for up to limit (1..50, default 1) pending tasks for
// worker_id, waiting up to wait_ms (≤ 20000, a long poll) for one to appear.
type ClaimRequest struct {
	WorkerID string `json:"worker_id"`
	Limit    int    `json:"limit,omitempty"`
	WaitMS   int    `json:"wait_ms,omitempty"`
}

// ClaimResponse answers a claim; tasks is empty (not null) when none was
// pending.
type ClaimResponse struct {
	Success bool   `json:"success"`
	Tasks   []Task `json:"tasks"`
}

// HeartbeatRequest extends the claim of a PROCESSING task; only the worker
// holding it may.
type HeartbeatRequest struct {
	WorkerID string `json:"worker_id"`
}

// AckRequest is the /ack webhook body of the seed. worker_id is optional;
// when given it must be the worker holding the task.
type AckRequest struct {
	QueueID         string          `json:"queue_id"`
	EncounterID     string          `json:"encounter_id"`
	ExperityActions json.RawMessage `json:"experityActions"`
	WorkerID        string          `json:"worker_id,omitempty"`
}

// FailRequest is the /fail webhook body of the seed. worker_id is optional;
// when given it must be the worker holding the task.
type FailRequest struct {
	QueueID      string `json:"queue_id"`
	EncounterID  string `json:"encounter_id"`
	ErrorMessage string `json:"error_message"`
	WorkerID     string `json:"worker_id,omitempty"`
}

// WebhookResponse answers /ack and /fail. requeued: a retry was scheduled;
// dlq: the task is now a dead letter; duplicate: a repeated ACK with the same
// experityActions changed nothing.
type WebhookResponse struct {
	Success   bool   `json:"success"`
	QueueID   string `json:"queue_id"`
	Status    Status `json:"status"`
	Attempts  int    `json:"attempts"`
	Requeued  bool   `json:"requeued"`
	DLQ       bool   `json:"dlq"`
	Duplicate bool   `json:"duplicate"`
	Message   string `json:"message"`
}

// StatsResponse is the ledger's size: tasks per status (every status
// present), pending tasks per priority (every priority present), dead
// letters (counted in ERROR too), ERROR tasks awaiting a retry (ERROR minus
// dlq) and the total.
type StatsResponse struct {
	Success           bool             `json:"success"`
	ByStatus          map[Status]int   `json:"by_status"`
	PendingByPriority map[Priority]int `json:"pending_by_priority"`
	DLQ               int              `json:"dlq"`
	RetryWaiting      int              `json:"retry_waiting"`
	Total             int              `json:"total"`
}

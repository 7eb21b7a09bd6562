package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
)

// pageOf is the page and page size asked for (a cursor is a page number).
func pageOf(q contracts.QueueStatusQuery) (page, size int, err error) {
	page, size = q.Page, q.PageSize
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 1 {
			return 0, 0, &contracts.Error{Code: contracts.CodeInvalid,
				Message: "cursor must be the nextCursor of an earlier page", Details: map[string]any{"field": "cursor"}}
		}
		page = n
	}
	if page < 1 {
		page = 1
	}
	if size < 1 {
		size = contracts.DefaultQueuePageSize
	}
	return page, min(size, contracts.MaxQueuePageSize), nil
}

// queueLookupKey checks a sessionId or uui lookup key: at most
// MaxQueueLookupKey bytes of UTF-8 without control characters.
func queueLookupKey(field, v string) error {
	bad := len(v) > contracts.MaxQueueLookupKey || !utf8.ValidString(v) ||
		strings.IndexFunc(v, unicode.IsControl) >= 0
	if !bad {
		return nil
	}
	return &contracts.Error{Code: contracts.CodeInvalid, Op: "booking.Status",
		Message: fmt.Sprintf("%s must be at most %d bytes of text without control characters", field, contracts.MaxQueueLookupKey),
		Details: map[string]any{"field": field}}
}

// CheckQueueQuery trims q's lookup keys and checks them and its page: an
// operationId must look like one (operationIDRE), a sessionId or uui must
// be text of at most MaxQueueLookupKey bytes. The error is CodeInvalid
// with details.field.
func CheckQueueQuery(q contracts.QueueStatusQuery) (contracts.QueueStatusQuery, error) {
	q.OperationID, q.SessionID, q.UUI = strings.TrimSpace(q.OperationID), strings.TrimSpace(q.SessionID), strings.TrimSpace(q.UUI)
	if q.OperationID != "" && !operationIDRE.MatchString(q.OperationID) {
		return q, &contracts.Error{Code: contracts.CodeInvalid, Op: "booking.Status",
			Message: "operationId is not an operation id (a queued answer's operationId, such as op-1705764600000-…)",
			Details: map[string]any{"field": "operationId"}}
	}
	if err := queueLookupKey("sessionId", q.SessionID); err != nil {
		return q, err
	}
	if err := queueLookupKey("uui", q.UUI); err != nil {
		return q, err
	}
	_, _, err := pageOf(q)
	return q, err
}

// matches reports whether the operation id with subject sub is one q
// names: its id is q's OperationID (when given), and it was queued by the
// call q's SessionID or UUI names (when given). Without a key everything
// matches (the operator's view; Status never asks for an anonymous one).
func matches(q contracts.QueueStatusQuery, id string, sub subject) bool {
	if q.OperationID != "" && id != q.OperationID {
		return false
	}
	if q.SessionID == "" && q.UUI == "" {
		return true
	}
	return (q.SessionID != "" && sub.callSessionID == q.SessionID) || (q.UUI != "" && sub.callUUI == q.UUI)
}

// Status implements Queue: GET queue-status from Asynq's view of the
// booking queue. Operations are the booking:set_appointment and
// booking:set_patient tasks (note follow-ups are left out); Asynq states
// map to the seed's: pending, scheduled and retry → pending, active →
// processing, completed → completed, archived → failed.
//
// Who sees what (contracts.QueueStatusQuery): the whole queue (scope
// "all") only for q.Operator without a lookup key; otherwise only the
// operations the keys name (scope "lookup": an operationId is read
// directly, a sessionId / uui scans the queue) — and without Operator,
// without the patients' and children's names. An anonymous query without
// a key is answered empty without reading Redis. The counts cover the
// operations in scope (at most StatusScanLimit per state); operations is
// one page, newest first.
func (w *Worker) Status(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	q, err := CheckQueueQuery(q)
	if err != nil {
		return contracts.QueueStatusResponse{}, err
	}
	page, size, _ := pageOf(q)
	resp := contracts.QueueStatusResponse{Operations: []contracts.QueueOperation{}, Page: page, PageSize: size,
		TotalPages: 1, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeLookup}
	var ops []contracts.QueueOperation
	switch {
	case !q.Lookup() && !q.Operator:
		return resp, nil // nothing named, nothing shown
	case q.OperationID != "":
		op, found, err := w.lookup(ctx, q)
		if err != nil {
			return contracts.QueueStatusResponse{}, err
		}
		if found {
			ops = append(ops, op)
			count(&resp, op.Status)
		}
	default:
		if !q.Lookup() {
			resp.Scope = contracts.QueueScopeAll
		}
		if ops, err = w.scanAll(ctx, q, &resp); err != nil {
			return contracts.QueueStatusResponse{}, err
		}
	}
	if !q.Operator {
		for i := range ops {
			ops[i] = ops[i].WithoutNames()
		}
	}
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].CreatedAt != ops[j].CreatedAt {
			return ops[i].CreatedAt > ops[j].CreatedAt
		}
		return ops[i].ID > ops[j].ID
	})
	resp.Total = len(ops)
	resp.TotalPages = max(1, (len(ops)+size-1)/size)
	from := (page - 1) * size
	if from < len(ops) {
		resp.Operations = ops[from:min(from+size, len(ops))]
	}
	if page < resp.TotalPages {
		next := strconv.Itoa(page + 1)
		resp.NextCursor = &next
	}
	return resp, nil
}

// count adds one operation in status to resp's counts.
func count(resp *contracts.QueueStatusResponse, status string) {
	switch status {
	case contracts.OpPending:
		resp.Pending++
	case contracts.OpProcessing:
		resp.Processing++
	case contracts.OpCompleted:
		resp.Completed++
	case contracts.OpFailed:
		resp.Failed++
	}
}

// lookup reads the one operation q.OperationID names (Asynq's task by
// id, no scan); found is false when there is none or it is not q's call's.
func (w *Worker) lookup(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueOperation, bool, error) {
	if err := ctx.Err(); err != nil {
		return contracts.QueueOperation{}, false, err
	}
	ti, err := w.rt.Inspector.GetTaskInfo(w.cfg.Queue, q.OperationID)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return contracts.QueueOperation{}, false, nil
	}
	if err != nil {
		return contracts.QueueOperation{}, false, &contracts.Error{Code: contracts.CodeUnavailable, Op: "booking.Status",
			Message: "queue status is unavailable", Err: err}
	}
	op, sub, ok := operation(ti, stateStatus(ti.State))
	if !ok || !matches(q, ti.ID, sub) {
		return contracts.QueueOperation{}, false, nil
	}
	return op, true, nil
}

// scanAll reads every state of the queue (at most StatusScanLimit tasks
// each) and returns the operations q names, counted into resp.
func (w *Worker) scanAll(ctx context.Context, q contracts.QueueStatusQuery, resp *contracts.QueueStatusResponse) ([]contracts.QueueOperation, error) {
	type lister func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error)
	in := w.rt.Inspector
	states := []struct {
		status string
		list   lister
	}{
		{contracts.OpPending, in.ListPendingTasks},
		{contracts.OpPending, in.ListScheduledTasks},
		{contracts.OpPending, in.ListRetryTasks},
		{contracts.OpProcessing, in.ListActiveTasks},
		{contracts.OpCompleted, in.ListCompletedTasks},
		{contracts.OpFailed, in.ListArchivedTasks},
	}
	var ops []contracts.QueueOperation
	seen := map[string]bool{}
	for _, st := range states {
		infos, err := w.scan(ctx, st.list)
		if err != nil {
			return nil, &contracts.Error{Code: contracts.CodeUnavailable, Op: "booking.Status",
				Message: "queue status is unavailable", Err: err}
		}
		for _, ti := range infos {
			if seen[ti.ID] { // a task moving between states while we read
				continue
			}
			op, sub, ok := operation(ti, st.status)
			if !ok {
				continue
			}
			seen[ti.ID] = true
			if !matches(q, ti.ID, sub) {
				continue
			}
			ops = append(ops, op)
			count(resp, st.status)
		}
	}
	return ops, nil
}

// scan reads up to StatusScanLimit tasks of one state of the queue.
func (w *Worker) scan(ctx context.Context, list func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error)) ([]*asynq.TaskInfo, error) {
	const pageSize = 1000
	var all []*asynq.TaskInfo
	for p := 1; len(all) < w.cfg.StatusScanLimit; p++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		infos, err := list(w.cfg.Queue, asynq.PageSize(pageSize), asynq.Page(p))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return nil, nil // nothing was ever queued
		}
		if err != nil {
			return nil, err
		}
		all = append(all, infos...)
		if len(infos) < pageSize {
			break
		}
	}
	if len(all) > w.cfg.StatusScanLimit {
		all = all[:w.cfg.StatusScanLimit]
	}
	return all, nil
}

// operation turns a task into a queue-status operation (and its subject,
// read from the payload); ok is false for tasks that are not booking
// operations.
func operation(ti *asynq.TaskInfo, status string) (contracts.QueueOperation, subject, bool) {
	op := contracts.QueueOperation{ID: ti.ID, Status: status, MaxAttempts: ti.MaxRetry + 1}
	sub, ok := subjectOf(ti.Type, ti.Payload)
	if !ok {
		return op, sub, false
	}
	op.OperationType, op.ChildName, op.StartTime = sub.opType, sub.childName, sub.startTime
	if sub.opType == contracts.OpSetPatient {
		op.PatientName = sub.patientName
	}
	op.CreatedAt = contracts.JSTime(sub.created)
	// Attempts made: a finished or running task's current attempt counts.
	switch status {
	case contracts.OpPending:
		op.Attempts = ti.Retried
		if !ti.NextProcessAt.IsZero() {
			at := contracts.JSTime(ti.NextProcessAt)
			op.NextRetryAt = &at
		}
	default:
		op.Attempts = ti.Retried + 1
	}
	if ti.LastErr != "" && !asynqrt.IsDeferral(ti.LastErr) { // a limiter deferral is not an error
		e := ti.LastErr
		op.LastError = &e
	}
	var r opResult
	hasResult := len(ti.Result) > 0 && json.Unmarshal(ti.Result, &r) == nil
	if status == contracts.OpFailed {
		failedStatus(&op, r, hasResult, ti.LastFailedAt)
	}
	if status == contracts.OpCompleted {
		if !ti.CompletedAt.IsZero() {
			op.CompletedAt = contracts.JSTime(ti.CompletedAt)
		}
		if hasResult {
			op.Result = &contracts.QueueOpResult{AppointmentGUID: r.AppointmentGUID, PatientGUID: r.PatientGUID}
			if r.CompletedAt > 0 {
				op.CompletedAt = contracts.JSTime(time.UnixMilli(r.CompletedAt))
			}
		}
	}
	return op, sub, true
}

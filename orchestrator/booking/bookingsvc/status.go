package bookingsvc

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator"
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

// Status implements Queue: GET queue-status from Asynq's view of the
// booking queue. Operations are the booking:set_appointment and
// booking:set_patient tasks (note follow-ups are left out); Asynq states
// map to the seed's: pending, scheduled and retry → pending, active →
// processing, completed → completed, archived → failed. The counts cover
// every operation found (at most StatusScanLimit per state); operations is
// one page, newest first.
func (w *Worker) Status(ctx context.Context, q contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	page, size, err := pageOf(q)
	if err != nil {
		return contracts.QueueStatusResponse{}, err
	}

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
	resp := contracts.QueueStatusResponse{Operations: []contracts.QueueOperation{}, Page: page, PageSize: size,
		StorageType: "asynq"}
	var ops []contracts.QueueOperation
	seen := map[string]bool{}
	for _, st := range states {
		infos, err := w.scan(ctx, st.list)
		if err != nil {
			return contracts.QueueStatusResponse{}, &contracts.Error{Code: contracts.CodeUnavailable, Op: "bookingsvc.Status",
				Message: "queue status is unavailable", Err: err}
		}
		for _, ti := range infos {
			if seen[ti.ID] { // a task moving between states while we read
				continue
			}
			op, ok := operation(ti, st.status)
			if !ok {
				continue
			}
			seen[ti.ID] = true
			ops = append(ops, op)
			switch st.status {
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

// operation turns a task into a queue-status operation; ok is false for
// tasks that are not booking operations.
func operation(ti *asynq.TaskInfo, status string) (contracts.QueueOperation, bool) {
	op := contracts.QueueOperation{ID: ti.ID, Status: status, MaxAttempts: ti.MaxRetry + 1}
	sub, ok := subjectOf(ti.Type, ti.Payload)
	if !ok {
		return op, false
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
	if ti.LastErr != "" && !orchestrator.IsDeferral(ti.LastErr) { // a limiter deferral is not an error
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
	return op, true
}

package booking

import (
	"context"
	"errors"
	"regexp"

	"github.com/hibiken/asynq"

	"github.com/flowgate/flowgate/contracts"
)

// Operation implements OperationLookup: the booking or patient operation
// whose Asynq task id is operationID (queued answers' operationId), in the
// queue-status form. found is false for an id Asynq does not hold (never
// queued, or deleted after its retention) and for tasks that are not
// booking operations.
func (w *Worker) Operation(ctx context.Context, operationID string) (contracts.QueueOperation, bool, error) {
	if err := ctx.Err(); err != nil {
		return contracts.QueueOperation{}, false, err
	}
	ti, err := w.rt.Inspector.GetTaskInfo(w.cfg.Queue, operationID)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return contracts.QueueOperation{}, false, nil
	}
	if err != nil {
		return contracts.QueueOperation{}, false, &contracts.Error{Code: contracts.CodeUnavailable, Op: "booking.Operation",
			Message: "operation status is unavailable", Err: err}
	}
	op, _, ok := operation(ti, stateStatus(ti.State))
	return op, ok, nil
}

// stateStatus maps an Asynq task state to the seed's operation status.
func stateStatus(s asynq.TaskState) string {
	switch s {
	case asynq.TaskStateActive:
		return contracts.OpProcessing
	case asynq.TaskStateCompleted:
		return contracts.OpCompleted
	case asynq.TaskStateArchived:
		return contracts.OpFailed
	default: // pending, scheduled, retry, aggregating
		return contracts.OpPending
	}
}

// operationIDRE bounds what an operation id can be (op-…, op-pat-…).
var operationIDRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// Operation guidance by status.
var opGuidance = map[string]contracts.OperationGuidance{
	contracts.OpPending: {CurrentState: "OPERATION_QUEUED", ActionRequired: "inform_caller_still_processing",
		VoiceResponse: "Your request is still being processed. We'll confirm it shortly."},
	contracts.OpProcessing: {CurrentState: "OPERATION_PROCESSING", ActionRequired: "inform_caller_still_processing",
		VoiceResponse: "Your request is being processed right now."},
	contracts.OpCompleted: {CurrentState: "OPERATION_COMPLETED", ActionRequired: "confirm_to_caller",
		VoiceResponse: "Good news: that's all set."},
	contracts.OpFailed: {CurrentState: "OPERATION_FAILED", ActionRequired: contracts.ActionTransferToAgent,
		VoiceResponse: "I wasn't able to complete that. Let me transfer you to someone who can help."},
}

// OperationStatus answers the operation status endpoint: one queued
// operation's status, attempts, last error and result — without the
// patient's and the child's names, as queue-status answers a caller
// without the operator's credentials.
func (f *Family) OperationStatus(ctx context.Context, operationID string) Answer {
	if !operationIDRE.MatchString(operationID) {
		text := "operationId is required"
		if operationID != "" {
			text = "operationId is not an operation id"
		}
		return ok(contracts.OperationStatusResponse{OperationID: operationID, Message: text, Error: text,
			LLMGuidance: &contracts.OperationGuidance{CurrentState: "UNKNOWN", ActionRequired: contracts.ActionAskCaller,
				VoiceResponse: "I don't have a reference for that request."}})
	}
	if f.d.Operations == nil {
		return failed(contracts.OperationStatusResponse{OperationID: operationID, Message: "operation status is not configured",
			Error: "operation status is not configured"})
	}
	op, found, err := f.d.Operations.Operation(ctx, operationID)
	if err != nil {
		f.log.Warn("operation status unreadable", "operation_id", operationID, "err", err)
		return storeFailed(contracts.OperationStatusResponse{OperationID: operationID, Message: "operation status is unavailable",
			Error: "operation status is unavailable"})
	}
	if !found {
		return ok(contracts.OperationStatusResponse{OperationID: operationID, Message: "no such operation",
			LLMGuidance: &contracts.OperationGuidance{CurrentState: "UNKNOWN", ActionRequired: contracts.ActionTransferToAgent,
				VoiceResponse: "I can't find that request. Let me transfer you to someone who can check."}})
	}
	// The endpoint has no operator credentials (the original never built
	// it): like queue-status for a caller without them, it shows no names.
	op = op.WithoutNames()
	g := opGuidance[op.Status]
	return ok(contracts.OperationStatusResponse{Success: true, Found: true, OperationID: operationID, Status: op.Status,
		OperationType: op.OperationType, Attempts: op.Attempts, MaxAttempts: op.MaxAttempts, LastError: op.LastError,
		Result: op.Result, Operation: &op, Message: "operation " + op.Status, LLMGuidance: &g})
}

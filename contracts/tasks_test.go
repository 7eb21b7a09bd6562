package contracts_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

var (
	t0 = time.Date(2026, 11, 21, 9, 30, 0, 123_000_000, time.UTC)
	t1 = t0.Add(90 * time.Second)
)

func sampleTask() contracts.Task {
	claimed, beat := t0.Add(time.Minute), t1
	return contracts.Task{
		QueueID:       "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10",
		EncounterID:   "enc-42",
		Status:        contracts.StatusProcessing,
		Priority:      contracts.PriorityHigh,
		Attempts:      1,
		MaxAttempts:   3,
		Recoveries:    1,
		Payload:       json.RawMessage(`{"patient":{"first":"Ada"},"visit":"2026-11-21"}`),
		ParsedPayload: json.RawMessage(`{"experityActions":{"codes":["99213"]}}`),
		ErrorMessage:  "timeout talking to Experity",
		WorkerID:      "vm-7",
		CreatedAt:     t0,
		UpdatedAt:     t1,
		ClaimedAt:     &claimed,
		HeartbeatAt:   &beat,
		History: []contracts.TaskEvent{
			{At: t0, From: "", To: contracts.StatusPending, By: "create", Reason: "created"},
			{At: claimed, From: contracts.StatusPending, To: contracts.StatusProcessing, By: "vm-7", Reason: "claimed"},
		},
	}
}

// pendingTask has every optional field unset: they must be null, and
// history (not loaded) absent.
func pendingTask() contracts.Task {
	return contracts.Task{
		QueueID:     "0d6a3c4e-1b2f-4a5c-8d9e-0f1a2b3c4d5e",
		EncounterID: "enc-43",
		Status:      contracts.StatusPending,
		Priority:    contracts.PriorityNormal,
		MaxAttempts: 3,
		CreatedAt:   t0,
		UpdatedAt:   t0,
	}
}

func TestTaskGolden(t *testing.T) {
	contractstest.Golden(t, "task_full", sampleTask())
	contractstest.Golden(t, "task_pending_nulls", pendingTask())
}

func TestTaskRoundTrip(t *testing.T) {
	want := sampleTask()
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got contracts.Task
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(got)
	if string(again) != string(raw) {
		t.Fatalf("round trip changed the task:\n%s\n%s", raw, again)
	}
	var generic map[string]any
	_ = json.Unmarshal(raw, &generic)
	for _, k := range []string{"queue_id", "encounter_id", "status", "priority", "attempts", "max_attempts", "recoveries", "payload",
		"parsed_payload", "error_message", "worker_id", "created_at", "updated_at", "claimed_at", "heartbeat_at", "history"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("field %q missing", k)
		}
	}
	if len(generic) != 16 {
		t.Errorf("want exactly 16 fields, got %d: %v", len(generic), generic)
	}
}

func TestTaskInDLQ(t *testing.T) {
	task := pendingTask()
	task.Status = contracts.StatusError
	if task.InDLQ() {
		t.Fatal("no parsed_payload: not a dead letter")
	}
	task.ParsedPayload = json.RawMessage(`{"dlq":true,"experityActions":null}`)
	if !task.InDLQ() {
		t.Fatal("dlq:true ERROR task is a dead letter")
	}
	task.Status = contracts.StatusPending
	if task.InDLQ() {
		t.Fatal("only ERROR tasks are dead letters")
	}
}

func TestTaskRequestGoldens(t *testing.T) {
	msg := "VM lost the session"
	cases := map[string]any{
		"task_create_request": contracts.CreateTaskRequest{QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", EncounterID: "enc-42",
			Priority: contracts.PriorityNormal, MaxAttempts: 3, Payload: json.RawMessage(`{"patient":{"first":"Ada"}}`)},
		"task_batch_create_request": contracts.BatchCreateRequest{Tasks: []contracts.CreateTaskRequest{
			{EncounterID: "enc-1", Payload: json.RawMessage(`{"n":1}`)},
			{EncounterID: "enc-2", Priority: contracts.PriorityLow, Payload: json.RawMessage(`{"n":2}`)},
		}},
		"task_status_update_request": contracts.StatusUpdateRequest{Status: contracts.StatusError, ErrorMessage: &msg,
			IncrementAttempts: true, ParsedPayload: json.RawMessage(`{"dlq":true}`)},
		"task_requeue_request":   contracts.RequeueRequest{Priority: contracts.PriorityHigh},
		"task_claim_request":     contracts.ClaimRequest{WorkerID: "vm-7", Limit: 10, WaitMS: 2000},
		"task_heartbeat_request": contracts.HeartbeatRequest{WorkerID: "vm-7"},
		"task_ack_request": contracts.AckRequest{QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", EncounterID: "enc-42",
			ExperityActions: json.RawMessage(`{"codes":["99213"],"notes":[]}`)},
		"task_fail_request": contracts.FailRequest{QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", EncounterID: "enc-42",
			ErrorMessage: "Error description"},
		"task_list_query": contracts.ListQuery{Status: contracts.StatusPending, Priority: contracts.PriorityHigh, Limit: 50,
			Cursor: "eyJpIjoicGVuZGluZzpISUdIIiwicyI6MTJ9"},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) { contractstest.Golden(t, name, v) })
	}
}

func TestTaskResponseGoldens(t *testing.T) {
	task, pending := sampleTask(), pendingTask()
	task.History = nil
	cases := map[string]any{
		"task_create_response": contracts.CreateResponse{Success: true, Task: pending},
		"task_batch_create_response": contracts.BatchCreateResponse{Success: true, Created: 1, Duplicates: 1,
			Results: []contracts.CreateResult{{Task: pending}, {Duplicate: true, Task: task}}},
		"task_list_response": contracts.ListResponse{Success: true, Tasks: []contracts.Task{pending},
			NextCursor: "eyJpIjoic3RhdHVzOlBFTkRJTkciLCJzIjo3fQ"},
		"task_list_response_last": contracts.ListResponse{Success: true, Tasks: []contracts.Task{}},
		"task_response_noop": contracts.TaskResponse{Success: true, Noop: true,
			Message: "task is already PENDING; requeue changed nothing", Task: pending},
		"task_claim_response": contracts.ClaimResponse{Success: true, Tasks: []contracts.Task{task}},
		"task_webhook_ack_duplicate": contracts.WebhookResponse{Success: true, QueueID: task.QueueID, Status: contracts.StatusDone,
			Attempts: 0, Duplicate: true, Message: "Task already acknowledged"},
		"task_webhook_fail_dlq": contracts.WebhookResponse{Success: true, QueueID: task.QueueID, Status: contracts.StatusError,
			Attempts: 3, DLQ: true, Message: contracts.DLQErrorMessage},
		"task_stats_response": contracts.StatsResponse{Success: true,
			ByStatus: map[contracts.Status]int{contracts.StatusPending: 5, contracts.StatusProcessing: 2,
				contracts.StatusDone: 40, contracts.StatusError: 3},
			PendingByPriority: map[contracts.Priority]int{contracts.PriorityHigh: 1, contracts.PriorityNormal: 3,
				contracts.PriorityLow: 1},
			DLQ: 2, RetryWaiting: 1, Total: 50},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) { contractstest.Golden(t, name, v) })
	}
}

func TestParseStatusAndPriority(t *testing.T) {
	for in, want := range map[string]contracts.Status{"PENDING": "PENDING", " processing ": "PROCESSING", "done": "DONE", "Error": "ERROR"} {
		got, err := contracts.ParseStatus(in)
		if err != nil || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "DLQ", "QUEUED", "PENDINGX"} {
		if _, err := contracts.ParseStatus(bad); contracts.ErrorCode(err) != contracts.CodeInvalid {
			t.Errorf("ParseStatus(%q): want invalid, got %v", bad, err)
		}
	}
	if p, err := contracts.ParsePriority("", contracts.PriorityHigh); err != nil || p != contracts.PriorityHigh {
		t.Errorf("empty priority must give the default: %q %v", p, err)
	}
	if p, err := contracts.ParsePriority("low", contracts.PriorityNormal); err != nil || p != contracts.PriorityLow {
		t.Errorf("ParsePriority(low) = %q %v", p, err)
	}
	if _, err := contracts.ParsePriority("URGENT", contracts.PriorityNormal); contracts.ErrorCode(err) != contracts.CodeInvalid {
		t.Errorf("URGENT: want invalid, got %v", err)
	}
	if contracts.Status("pending").Valid() || !contracts.StatusDone.Valid() || contracts.Priority("").Valid() {
		t.Error("Valid must be exact")
	}
	if len(contracts.AllStatuses()) != 4 || contracts.AllPriorities()[0] != contracts.PriorityHigh {
		t.Error("enumerations")
	}
}

// A JSON null parsed_payload must reach the ledger as "null" (clear it),
// distinct from an absent one (leave it).
func TestStatusUpdateParsedPayloadNullVsAbsent(t *testing.T) {
	var absent, null contracts.StatusUpdateRequest
	if err := contracts.DecodeJSON([]byte(`{"status":"DONE"}`), &absent); err != nil {
		t.Fatal(err)
	}
	if err := contracts.DecodeJSON([]byte(`{"status":"DONE","parsed_payload":null,"error_message":""}`), &null); err != nil {
		t.Fatal(err)
	}
	if absent.ParsedPayload != nil || absent.ErrorMessage != nil {
		t.Fatalf("absent fields must stay nil: %+v", absent)
	}
	if string(null.ParsedPayload) != "null" || null.ErrorMessage == nil || *null.ErrorMessage != "" {
		t.Fatalf("explicit null / empty must be visible: %q %v", null.ParsedPayload, null.ErrorMessage)
	}
}

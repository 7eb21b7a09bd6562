package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// A task's life: created by Phase 1, claimed by a worker, failed once,
// requeued with HIGH priority, claimed again and acknowledged.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ledger, _ := tasks.New(rdb, tasks.Config{Now: func() time.Time { return now }})
	ctx := context.Background()

	created, _ := ledger.Create(ctx, contracts.CreateTaskRequest{
		QueueID: "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10", EncounterID: "enc-42",
		Payload: json.RawMessage(`{"patient":"Ada"}`)})
	fmt.Println(created.Task.Status, created.Task.Priority)

	claimed, _ := ledger.Claim(ctx, contracts.ClaimRequest{WorkerID: "vm-7", Limit: 10})
	fmt.Println(claimed[0].Status, claimed[0].WorkerID)

	failed, _ := ledger.Fail(ctx, contracts.FailRequest{QueueID: created.Task.QueueID, ErrorMessage: "session lost"})
	fmt.Println(failed.Task.Status, failed.Task.Attempts, "retry:", failed.Retry)

	requeued, _ := ledger.Requeue(ctx, created.Task.QueueID, contracts.RequeueRequest{})
	fmt.Println(requeued.Task.Status, requeued.Task.Priority)

	_, _ = ledger.Claim(ctx, contracts.ClaimRequest{WorkerID: "vm-8"})
	acked, _ := ledger.Ack(ctx, contracts.AckRequest{QueueID: created.Task.QueueID, EncounterID: "enc-42",
		ExperityActions: json.RawMessage(`{"codes":["99213"]}`)})
	fmt.Println(acked.Task.Status, string(acked.Task.ParsedPayload))

	_, err := ledger.Fail(ctx, contracts.FailRequest{QueueID: created.Task.QueueID})
	var conflict *contracts.Error
	errors.As(err, &conflict)
	fmt.Println(contracts.ErrorCode(err), conflict.Details["current_status"])
	// Output:
	// PENDING NORMAL
	// PROCESSING vm-7
	// ERROR 1 retry: true
	// PENDING HIGH
	// DONE {"experityActions":{"codes":["99213"]}}
	// conflict DONE
}

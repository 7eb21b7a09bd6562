package taskjobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
)

// A worker's FAIL with attempts left schedules the requeue through Asynq;
// the FAIL of the last attempt makes a dead letter with an archived replay
// task, which the API (or Asynqmon's "Run") replays.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	ledger, _ := tasks.New(rdb, tasks.Config{Now: clock, MaxAttempts: 2})
	rt, _ := asynqrt.New(asynqrt.Config{ConnOpt: asynq.RedisClientOpt{Addr: m.Addr()}, Redis: rdb, Logger: quiet})
	d, _ := taskjobs.New(taskjobs.Config{Ledger: ledger, Runtime: rt, Logger: quiet, Now: clock})
	d.Register() // before rt.Start, in the process that runs the dequeuers
	ctx := context.Background()

	const id = "6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10"
	_, _ = ledger.Create(ctx, contracts.CreateTaskRequest{QueueID: id, EncounterID: "enc-42", Payload: json.RawMessage(`{}`)})
	fail := func() {
		_, _ = ledger.Claim(ctx, contracts.ClaimRequest{WorkerID: "vm-7"})
		res, _ := ledger.Fail(ctx, contracts.FailRequest{QueueID: id, ErrorMessage: "portal timed out"})
		fu, err := d.AfterFail(ctx, res)
		switch {
		case err != nil:
			fmt.Println("follow-up not scheduled:", err)
		case fu.Requeued:
			fmt.Printf("attempt %d failed: requeue in %s (%s)\n", res.Task.Attempts, fu.RetryAt.Sub(now), fu.TaskID)
		case fu.DLQ:
			fmt.Printf("attempt %d failed: dead letter, archived as %s\n", res.Task.Attempts, fu.TaskID)
		}
	}
	fail()
	_, _ = ledger.Requeue(ctx, id, contracts.RequeueRequest{}) // what the requeue task does when due
	now = now.Add(time.Minute)
	fail()

	task, err := d.Replay(ctx, id, contracts.RequeueRequest{})
	fmt.Println(task.Status, task.Priority, task.Attempts, err)
	// Output:
	// attempt 1 failed: requeue in 10s (requeue:6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10:1:1795251600000)
	// attempt 2 failed: dead letter, archived as dlq:6f1c8a52-3f0e-4d7e-9a51-0c3b2f4f9a10:1795251660000
	// PENDING HIGH 0 <nil>
}

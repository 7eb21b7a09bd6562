package rediscluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

// Asynq keeps each queue's keys under one hash tag, so a client, an
// inspector and a server work on the cluster.
func TestAsynqOnCluster(t *testing.T) {
	t.Parallel()
	c := Start(t)
	opt := asynq.RedisClusterClientOpt{Addrs: c.Addrs()}

	client := asynq.NewClient(opt)
	defer client.Close()
	info, err := client.Enqueue(asynq.NewTask("smoke:ping", []byte(`{"n":1}`)), asynq.Queue("smoke"))
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}

	insp := asynq.NewInspector(opt)
	defer insp.Close()
	got, err := insp.GetTaskInfo("smoke", info.ID)
	if err != nil {
		t.Fatalf("GetTaskInfo: %v", err)
	}
	if got.State != asynq.TaskStatePending || got.Type != "smoke:ping" {
		t.Fatalf("task = %s %s, want pending smoke:ping", got.State, got.Type)
	}
	pending, err := insp.ListPendingTasks("smoke")
	if err != nil || len(pending) != 1 || pending[0].ID != info.ID {
		t.Fatalf("ListPendingTasks = %v, %v", pending, err)
	}
	queues, err := insp.Queues()
	if err != nil || !slices.Contains(queues, "smoke") {
		t.Fatalf("Queues = %v, %v", queues, err)
	}

	// A server on the cluster processes it.
	done := make(chan string, 1)
	srv := asynq.NewServer(opt, asynq.Config{
		Queues: map[string]int{"smoke": 1}, Concurrency: 1, LogLevel: asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("smoke:ping", func(_ context.Context, task *asynq.Task) error {
		done <- string(task.Payload())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatalf("server Start: %v", err)
	}
	defer srv.Shutdown()
	select {
	case p := <-done:
		if p != `{"n":1}` {
			t.Fatalf("payload = %s", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("task not processed within 20s")
	}
}

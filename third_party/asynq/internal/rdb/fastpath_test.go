// Copyright 2020 Kentaro Hibino. All rights reserved.
// Use of this source code is governed by a MIT license
// that can be found in the LICENSE file.

package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq/internal/base"
	h "github.com/hibiken/asynq/internal/testutil"
	"github.com/hibiken/asynq/internal/timeutil"
)

// flowgate patch (PATCH.md): the multi-queue scripts.

func TestDequeueOneScriptKeepsPriorityAndPause(t *testing.T) {
	r := setup(t)
	defer r.Close()
	if !r.MultiQueueScripts() {
		t.Skip("a cluster client keeps the per-queue path")
	}
	now := time.Now()
	r.SetClock(timeutil.NewSimulatedClock(now))
	hi := h.NewTaskMessageWithQueue("a", nil, "critical")
	lo := h.NewTaskMessageWithQueue("b", nil, "low")
	h.SeedAllPendingQueues(t, r.client, map[string][]*base.TaskMessage{"critical": {hi}, "default": {}, "low": {lo}})
	if err := r.Pause("critical"); err != nil {
		t.Fatal(err)
	}
	got, lease, err := r.Dequeue("critical", "default", "low")
	if err != nil || got.ID != lo.ID {
		t.Fatalf("Dequeue with critical paused = %v, %v; want %s", got, err, lo.ID)
	}
	if want := now.Add(LeaseDuration); !lease.Equal(want) {
		t.Errorf("lease = %v, want %v", lease, want)
	}
	if ids := h.GetLeaseEntries(t, r.client, "low"); len(ids) != 1 || ids[0].Message.ID != lo.ID || ids[0].Score != now.Add(LeaseDuration).Unix() {
		t.Errorf("lease set of low = %v", ids)
	}
	if err := r.Unpause("critical"); err != nil {
		t.Fatal(err)
	}
	if got, _, err = r.Dequeue("low", "critical"); err != nil || got.ID != hi.ID {
		t.Fatalf("Dequeue = %v, %v; want %s (low is empty)", got, err, hi.ID)
	}
	if _, _, err = r.Dequeue("critical", "default", "low"); err == nil {
		t.Fatal("Dequeue of empty queues: want ErrNoProcessableTask")
	}
}

func TestCompleteAndDequeue(t *testing.T) {
	r := setup(t)
	defer r.Close()
	if !r.MultiQueueScripts() {
		t.Skip("a cluster client keeps the per-queue path")
	}
	now := time.Now()
	r.SetClock(timeutil.NewSimulatedClock(now))
	ctx := context.Background()
	kept := &base.TaskMessage{ID: uuid.NewString(), Type: "a", Queue: "default", Timeout: 1800, Retention: 3600}
	gone := &base.TaskMessage{ID: uuid.NewString(), Type: "b", Queue: "default", Timeout: 1800,
		UniqueKey: "asynq:{default}:unique:x"}
	next := h.NewTaskMessageWithQueue("c", nil, "low")
	h.SeedAllActiveQueues(t, r.client, map[string][]*base.TaskMessage{"default": {kept, gone}})
	h.SeedAllLease(t, r.client, map[string][]base.Z{"default": {{Message: kept, Score: now.Add(10 * time.Second).Unix()}, {Message: gone, Score: now.Add(10 * time.Second).Unix()}}})
	h.SeedAllPendingQueues(t, r.client, map[string][]*base.TaskMessage{"low": {next}})
	if err := r.client.Set(ctx, gone.UniqueKey, gone.ID, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	// A task with a retention is kept as completed, with its result.
	got, lease, completed, err := r.CompleteAndDequeue(ctx, kept, []byte("done"), "critical", "default", "low")
	if err != nil || !completed || got == nil || got.ID != next.ID || !lease.Equal(now.Add(LeaseDuration)) {
		t.Fatalf("CompleteAndDequeue = %v, %v, %v, %v; want %s", got, lease, completed, err, next.ID)
	}
	if c := h.GetCompletedEntries(t, r.client, "default"); len(c) != 1 || c[0].Message.ID != kept.ID || c[0].Score != now.Unix()+3600 {
		t.Errorf("completed = %v", c)
	}
	if res, _ := r.client.HGet(ctx, base.TaskKey("default", kept.ID), "result").Result(); res != "done" {
		t.Errorf("result = %q, want done", res)
	}
	if st, _ := r.client.HGet(ctx, base.TaskKey("default", kept.ID), "state").Result(); st != "completed" {
		t.Errorf("state = %q, want completed", st)
	}
	if n, _ := r.client.Get(ctx, base.ProcessedTotalKey("default")).Int(); n != 1 {
		t.Errorf("processed = %d, want 1", n)
	}
	if a := h.GetActiveMessages(t, r.client, "low"); len(a) != 1 || a[0].ID != next.ID {
		t.Errorf("active of low = %v", a)
	}

	// A task without one is deleted, its unique lock released; the queues
	// are empty now.
	got, _, completed, err = r.CompleteAndDequeue(ctx, gone, nil, "critical", "default", "low")
	if err != nil || !completed || got != nil {
		t.Fatalf("CompleteAndDequeue = %v, %v, %v; want completed, nothing next", got, completed, err)
	}
	if n, _ := r.client.Exists(ctx, base.TaskKey("default", gone.ID), gone.UniqueKey).Result(); n != 0 {
		t.Errorf("%d of the task hash and unique lock left", n)
	}
	if a := h.GetActiveMessages(t, r.client, "default"); len(a) != 0 {
		t.Errorf("active of default = %v", a)
	}

	// A task not active (its lease was recovered): not completed, nothing
	// dequeued.
	h.SeedAllPendingQueues(t, r.client, map[string][]*base.TaskMessage{"default": {h.NewTaskMessage("d", nil)}})
	got, _, completed, err = r.CompleteAndDequeue(ctx, gone, nil, "default")
	if err == nil || completed || got != nil {
		t.Fatalf("CompleteAndDequeue of a task not active = %v, %v, %v; want an error", got, completed, err)
	}
	if p := h.GetPendingMessages(t, r.client, "default"); len(p) != 1 {
		t.Errorf("pending of default = %v, want untouched", p)
	}
}

func TestCompleteAndDequeueConcurrentCallsShareRoundTrips(t *testing.T) {
	r := setup(t)
	defer r.Close()
	if !r.MultiQueueScripts() {
		t.Skip("a cluster client keeps the per-queue path")
	}
	ctx := context.Background()
	const n = 50
	var active, pending []*base.TaskMessage
	var leases []base.Z
	for i := 0; i < n; i++ {
		m := &base.TaskMessage{ID: uuid.NewString(), Type: "a", Queue: "default", Timeout: 1800}
		active = append(active, m)
		leases = append(leases, base.Z{Message: m, Score: time.Now().Add(time.Minute).Unix()})
		pending = append(pending, h.NewTaskMessage("b", nil))
	}
	h.SeedAllActiveQueues(t, r.client, map[string][]*base.TaskMessage{"default": active})
	h.SeedAllLease(t, r.client, map[string][]base.Z{"default": leases})
	h.SeedAllPendingQueues(t, r.client, map[string][]*base.TaskMessage{"default": pending})
	// Not loaded: the first pipeline's EVALSHAs are refused and sent again.
	if err := r.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		next      *base.TaskMessage
		completed bool
		err       error
	}
	answers := make(chan answer, n)
	for _, m := range active {
		go func(m *base.TaskMessage) {
			next, _, completed, err := r.CompleteAndDequeue(ctx, m, nil, "critical", "default")
			answers <- answer{next, completed, err}
		}(m)
	}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		a := <-answers
		if a.err != nil || !a.completed || a.next == nil {
			t.Fatalf("CompleteAndDequeue = %v, %v, %v", a.next, a.completed, a.err)
		}
		if seen[a.next.ID] {
			t.Fatalf("task %s dequeued twice", a.next.ID)
		}
		seen[a.next.ID] = true
	}
	if got := h.GetActiveMessages(t, r.client, "default"); len(got) != n {
		t.Errorf("%d active, want the %d dequeued", len(got), n)
	}
	for _, z := range h.GetLeaseEntries(t, r.client, "default") {
		if !seen[z.Message.ID] {
			t.Errorf("lease of %s, not a dequeued task", z.Message.ID)
		}
	}
	if p, _ := r.client.Get(ctx, base.ProcessedTotalKey("default")).Int(); p != n {
		t.Errorf("processed = %d, want %d", p, n)
	}
}

package tasks_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// 50 workers, each with its own Ledger (as separate instances would have),
// claim 10,000 batch-created tasks concurrently: every task is claimed
// exactly once, all ACKs land, and Stats agree.
func TestConcurrentWorkersClaimEachTaskOnce(t *testing.T) {
	t.Parallel()
	const total, workers = 10_000, 50
	b := setup(t)
	reqs := make([]contracts.CreateTaskRequest, 0, contracts.MaxBatchCreate)
	prios := contracts.AllPriorities()
	for i := 0; i < total; i++ {
		reqs = append(reqs, contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i), Priority: prios[i%3],
			Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		if len(reqs) == contracts.MaxBatchCreate {
			_, err := b.l.CreateBatch(b.ctx, reqs)
			require.NoError(t, err)
			reqs = reqs[:0]
		}
	}
	st, err := b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, total, st.ByStatus[contracts.StatusPending])

	var (
		mu      sync.Mutex
		claimed = make(map[string]string, total) // queue_id → worker
		dups    []string
		wg      sync.WaitGroup
		errs    = make(chan error, workers)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(worker string, limit int) {
			defer wg.Done()
			l, err := tasks.New(b.rdb, tasks.Config{KeyPrefix: "test", Now: b.clock.Now})
			if err != nil {
				errs <- err
				return
			}
			for {
				got, err := l.Claim(b.ctx, contracts.ClaimRequest{WorkerID: worker, Limit: limit})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				for _, task := range got {
					if task.WorkerID != worker || task.Status != contracts.StatusProcessing {
						errs <- fmt.Errorf("claim returned %+v", task)
						return
					}
					mu.Lock()
					if prev, seen := claimed[task.QueueID]; seen {
						dups = append(dups, task.QueueID+" by "+prev+" and "+worker)
					}
					claimed[task.QueueID] = worker
					mu.Unlock()
					res, err := l.Ack(b.ctx, contracts.AckRequest{QueueID: task.QueueID, WorkerID: worker,
						ExperityActions: json.RawMessage(`{"by":"` + worker + `"}`)})
					if err != nil {
						errs <- err
						return
					}
					if res.Duplicate {
						errs <- fmt.Errorf("first ACK of %s reported duplicate", task.QueueID)
						return
					}
				}
			}
		}(fmt.Sprintf("vm-%02d", w), 1+w%10)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, dups, "tasks claimed twice")
	require.Len(t, claimed, total)

	st, err = b.l.Stats(b.ctx)
	require.NoError(t, err)
	require.Equal(t, contracts.StatsResponse{Success: true,
		ByStatus: map[contracts.Status]int{contracts.StatusPending: 0, contracts.StatusProcessing: 0,
			contracts.StatusDone: total, contracts.StatusError: 0},
		PendingByPriority: map[contracts.Priority]int{contracts.PriorityHigh: 0, contracts.PriorityNormal: 0, contracts.PriorityLow: 0},
		Total:             total}, st)

	// Spot-check that each DONE task holds its claimer's ACK.
	page, err := b.l.List(b.ctx, contracts.ListQuery{Status: contracts.StatusDone, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1000)
	for _, task := range page.Tasks {
		require.JSONEq(t, `{"experityActions":{"by":"`+claimed[task.QueueID]+`"}}`, string(task.ParsedPayload))
		require.Equal(t, claimed[task.QueueID], task.WorkerID)
	}
}

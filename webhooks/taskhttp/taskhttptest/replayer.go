package taskhttptest

import (
	"context"
	"sync"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// Replayer stands in for the Asynq dispatcher's Replay: it records the
// replayed ids and replays on the ledger.
type Replayer struct {
	Ledger *tasks.Ledger
	mu     sync.Mutex
	calls  []string
}

// Replay implements taskhttp.Replayer.
func (r *Replayer) Replay(ctx context.Context, id string, req contracts.RequeueRequest) (contracts.Task, error) {
	r.mu.Lock()
	r.calls = append(r.calls, id)
	r.mu.Unlock()
	return r.Ledger.Replay(ctx, id, req)
}

// Calls returns the ids replayed so far.
func (r *Replayer) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

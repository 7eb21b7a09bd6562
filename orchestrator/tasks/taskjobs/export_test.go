package taskjobs

import (
	"context"

	"github.com/hibiken/asynq"
)

// HandleRequeue runs the TypeRequeue handler directly, for tests that must
// control what happens around it.
func (d *Dispatcher) HandleRequeue(ctx context.Context, t *asynq.Task) error {
	return d.handleRequeue(ctx, t)
}

package booking

import (
	"context"

	"github.com/hibiken/asynq"
)

// RunAppointment runs attempt n of task p as the worker does (last: no
// retry follows), without Asynq around it.
func (w *Worker) RunAppointment(ctx context.Context, p AppointmentTask, n int, last bool) error {
	return w.runAppointment(ctx, asynq.NewTask(TypeSetAppointment, nil), p, attemptInfo{attempt: n, last: last})
}

// Defaulted is cfg with its defaults, and whether it is valid.
func Defaulted(cfg Config) (Config, error) {
	cfg = cfg.withDefaults()
	return cfg, cfg.validate()
}

// TimeShort is the consultation's deferral check on attempt last.
func (w *Worker) TimeShort(ctx context.Context, last bool) error {
	return w.timeShort(ctx, attemptInfo{attempt: 1, last: last})
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/orchestrator/asynqrt"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/orchestrator/tasks/taskjobs"
	"github.com/flowgate/flowgate/scheduler"
	"github.com/flowgate/flowgate/webhooks"
	"github.com/flowgate/flowgate/webhooks/signature"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
)

// orchestration is the VM task orchestration that replaces the n8n
// "Phase 2" workflow: the task ledger, its Asynq follow-ups, its cron
// sweeps, the queue API and the ACK/FAIL webhooks, all behind one request
// verifier.
type orchestration struct {
	ledger   *tasks.Ledger
	dispatch *taskjobs.Dispatcher
	verifier *signature.Verifier
	api      *taskhttp.Handlers
	hooks    *webhooks.Handlers
}

// newOrchestration builds the parts and registers the Asynq handlers; it
// runs before the Asynq servers start.
func (m *Main) newOrchestration(rt *asynqrt.Runtime, b *backend, shutdown context.Context) (*orchestration, error) {
	cfg := m.Config
	ledger, err := tasks.New(b.Client, tasks.Config{Now: m.Now, MaxAttempts: cfg.MaxRetryAttempts, MaxRecoveries: cfg.MaxRecoveries, MaxProcessing: cfg.TaskMaxProcessing,
		Shards: cfg.RedisShards, PlainRedis: cfg.RedisClientMode == RedisClientPlain})
	if err != nil {
		return nil, fmt.Errorf("task ledger: %w", err)
	}
	lctx, cancel := context.WithTimeout(shutdown, 5*time.Second)
	if mode, err := ledger.LoadScripts(lctx); err != nil {
		m.Logger.Warn("task ledger: Redis did not answer FUNCTION LOAD; its scripts run as EVAL until a call loads them", "err", err)
	} else {
		m.Logger.Info("task ledger scripts", "mode", mode.Mode, "detail", mode.Reason)
	}
	cancel()
	dispatch, err := taskjobs.New(taskjobs.Config{
		Ledger: ledger, Runtime: rt, Logger: m.Logger, Registerer: m.registry, Now: m.Now,
		Backoff: asynqrt.Exponential{Base: cfg.RequeueBase, Max: cfg.RequeueMax},
	})
	if err != nil {
		return nil, fmt.Errorf("task dispatcher: %w", err)
	}
	dispatch.Register()

	mode, err := signature.ParseMode(cfg.WebhookAuth)
	if err != nil {
		return nil, &ConfigError{Var: "WEBHOOK_AUTH", Err: err}
	}
	if mode.Insecure() {
		m.Logger.Warn("WEBHOOK_AUTH=none: the queue API and the ACK/FAIL webhooks accept unauthenticated requests")
	}
	verifier, err := signature.New(signature.Config{
		Mode: mode, Secret: []byte(cfg.HMACSecret), Token: cfg.WebhookToken,
		Tolerance: cfg.WebhookTolerance, MinVersion: cfg.SignatureMinVersion,
		Replay: signature.NewRedisReplayGuard(b.Client, ""), Now: m.Now,
	})
	if err != nil {
		return nil, &ConfigError{Var: "WEBHOOK_AUTH", Err: err}
	}
	api, err := taskhttp.New(ledger, taskhttp.Config{
		Replayer: dispatch, Auth: verifier.Middleware(), RouteAuth: verifier.Middleware(signature.RequireVersion(2)),
		Shutdown: shutdown, Logger: m.Logger,
		RequestTimeout: cfg.QueueRequestTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("queue api: %w", err)
	}
	m.onClose(func(context.Context) error { api.Wait(); return nil }) // cancellations of uncertain claims
	follow := webhooks.FailFollowerFunc(func(ctx context.Context, res tasks.FailResult) (webhooks.FollowUp, error) {
		f, err := dispatch.AfterFail(ctx, res)
		return webhooks.FollowUp{Requeued: f.Requeued, DLQ: f.DLQ, RetryAt: f.RetryAt}, err
	})
	hooks, err := webhooks.New(ledger, follow, webhooks.Config{
		// The ACK's and FAIL's replay check rides in their ledger script:
		// one round trip (docs/tasks.md, "Authentication").
		AckPath: cfg.AckPath, FailPath: cfg.FailPath, Auth: verifier.Middleware(signature.DeferReplay()),
		Registerer: m.registry, Logger: m.Logger, Context: shutdown, RequestTimeout: cfg.QueueRequestTimeout,
	})
	if err != nil {
		return nil, &ConfigError{Var: "WEBHOOK_ACK_PATH", Err: err}
	}
	return &orchestration{ledger: ledger, dispatch: dispatch, verifier: verifier, api: api, hooks: hooks}, nil
}

// jobs are the orchestration's cron jobs with the configured schedules.
func (o *orchestration) jobs(cfg Config) ([]taskjobs.NamedJob, error) {
	return o.dispatch.Jobs(taskjobs.SweepSettings{
		HeartbeatSpec: cfg.HeartbeatSpec, HeartbeatStale: cfg.HeartbeatStale,
		VTSpec: cfg.VTSpec, VTTimeout: cfg.VTTimeout,
		SLASpec: cfg.SLASpec, SLAThreshold: cfg.SLAThreshold,
		RetryOverdueSpec: cfg.RetryOverdueSpec, RetryOverdueAfter: cfg.RetryOverdueAfter,
		PurgeSpec: cfg.PurgeSpec, PurgeAfter: cfg.PurgeAfter,
	})
}

// routes mounts the queue API and the webhooks.
func (o *orchestration) routes(app *fiber.App) {
	taskhttp.Register(app, o.api)
	webhooks.Register(app, o.hooks)
}

// registerJobs adds the orchestration's jobs to the scheduler.
func (o *orchestration) registerJobs(s *scheduler.Scheduler, cfg Config) error {
	jobs, err := o.jobs(cfg)
	if err != nil {
		return &ConfigError{Var: "RETRY_OVERDUE_AFTER", Err: err}
	}
	for _, j := range jobs {
		if err := s.Register(j.Name, j.Spec, j.Job); err != nil {
			return fmt.Errorf("cron job %s: %w", j.Name, err)
		}
	}
	return nil
}

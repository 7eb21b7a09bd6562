package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// TaskProbe is the built-in task the asynq_probe cron job enqueues on every
// queue: its round trip proves that enqueue → dequeue → handler works, and
// its latency shows how far behind each queue is.
const TaskProbe = "flowgate:probe"

type probePayload struct {
	Queue      string    `json:"queue"`
	EnqueuedAt time.Time `json:"enqueued_at"`
}

type probe struct {
	client  *asynq.Client
	queues  []string
	now     func() time.Time
	latency *prometheus.GaugeVec
	last    *prometheus.GaugeVec
}

func newProbe(client *asynq.Client, queues []string, now func() time.Time, reg prometheus.Registerer) (*probe, error) {
	p := &probe{
		client: client, queues: queues, now: now,
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_asynq_probe_latency_seconds", Help: "Enqueue-to-handler latency of the last probe task, by queue.",
		}, []string{"queue"}),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flowgate_asynq_probe_last_success_timestamp_seconds", Help: "When a probe task last ran, by queue.",
		}, []string{"queue"}),
	}
	for _, c := range []prometheus.Collector{p.latency, p.last} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Run enqueues one probe per queue (the cron job body).
func (p *probe) Run(ctx context.Context) error {
	for _, q := range p.queues {
		body, _ := json.Marshal(probePayload{Queue: q, EnqueuedAt: p.now().UTC()})
		if _, err := p.client.EnqueueContext(ctx, asynq.NewTask(TaskProbe, body),
			asynq.Queue(q), asynq.MaxRetry(0), asynq.Timeout(30*time.Second), asynq.Retention(10*time.Minute)); err != nil {
			return fmt.Errorf("probe: enqueue on %s: %w", q, err)
		}
	}
	return nil
}

// ProcessTask handles a probe.
func (p *probe) ProcessTask(_ context.Context, t *asynq.Task) error {
	var pl probePayload
	if err := json.Unmarshal(t.Payload(), &pl); err != nil {
		return fmt.Errorf("probe: %w: %w", err, asynq.SkipRetry)
	}
	now := p.now()
	p.latency.WithLabelValues(pl.Queue).Set(now.Sub(pl.EnqueuedAt).Seconds())
	p.last.WithLabelValues(pl.Queue).Set(float64(now.Unix()))
	return nil
}

// Package builtin holds the work buffer's built-in handlers: webhook.forward
// (the seed's "MetaBot forwarding": a signed POST of the payload to a
// configured URL, its answer classified by the buffer's retry logic),
// sse.emit (the seed's "Socket emission": publish to the channel the
// /api/buffer/events streams read) and noop (benchmarks only).
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// Handler types.
const (
	TypeWebhookForward = "webhook.forward"
	TypeSSEEmit        = "sse.emit"
	TypeNoop           = "noop"
)

// Webhook is webhook.forward. Its Sender's secret is flowgate's outbound
// one (OUTBOUND_HMAC_SECRET), never the secret flowgate verifies requests
// with: the target sees every POST, and the enqueuer chose its body.
type Webhook struct {
	buffer.Base
	URL    string
	Sender hmacsig.Sender // signs and posts (flowgate's one signed-POST sender)
}

// NewWebhook returns webhook.forward posting to url through sender; its
// Timeout() bounds each attempt.
func NewWebhook(url string, timeout time.Duration, sender hmacsig.Sender) (*Webhook, error) {
	if url == "" || len(sender.Secret) == 0 {
		return nil, errors.New("builtin: webhook.forward needs a URL and a signing secret")
	}
	if sender.Client == nil {
		sender.Client = &http.Client{} // the attempt's context bounds it (Timeout())
	}
	return &Webhook{Base: buffer.Base{Name: TypeWebhookForward, TimeoutAfter: timeout}, URL: url, Sender: sender}, nil
}

// HonoursContext implements buffer.ContextHonourer: the POST takes the
// attempt's context.
func (*Webhook) HonoursContext() bool { return true }

// Process posts the payload; 2xx completes, anything else is a
// *buffer.StatusError the retry classifier judges (a 3xx is not followed,
// and not retried: the message is dead-lettered).
func (w *Webhook) Process(ctx context.Context, m *buffer.Message) (any, error) {
	h := http.Header{hmacsig.HeaderMessageID: {m.MessageID}, hmacsig.HeaderAttempt: {strconv.Itoa(m.AttemptCount)}}
	if m.Metadata.CorrelationID != "" {
		h.Set("X-Correlation-Id", m.Metadata.CorrelationID)
	}
	ans, err := w.Sender.Post(ctx, w.URL, m.Payload, h)
	if err != nil {
		return nil, fmt.Errorf("webhook.forward: %w", err)
	}
	if !ans.OK() {
		return nil, &buffer.StatusError{StatusCode: ans.StatusCode, Body: string(ans.Body), Location: ans.Location}
	}
	return map[string]any{"status": ans.StatusCode}, nil
}

// emitPayload is sse.emit's payload.
type emitPayload struct {
	Channel string          `json:"channel"`
	Event   string          `json:"event"`
	Data    json.RawMessage `json:"data"`
}

// Emit is sse.emit: it publishes {channel, event, data} to the buffer's
// events channel, which every /api/buffer/events stream reads (filtered by
// ?channel=).
type Emit struct {
	buffer.Base
	Redis   redis.UniversalClient
	Channel string // the buffer's events channel (Buffer.Events())
	Now     func() time.Time
}

// NewEmit returns sse.emit publishing on channel.
func NewEmit(rdb redis.UniversalClient, channel string, now func() time.Time) *Emit {
	if now == nil {
		now = time.Now
	}
	return &Emit{Base: buffer.Base{Name: TypeSSEEmit, TimeoutAfter: 5 * time.Second}, Redis: rdb, Channel: channel, Now: now}
}

// Validate requires channel, event and data.
func (e *Emit) Validate(p json.RawMessage) error {
	if err := e.Base.Validate(p); err != nil {
		return err
	}
	var v emitPayload
	if err := json.Unmarshal(p, &v); err != nil {
		return &buffer.ValidationError{Field: "payload", Reason: err.Error()}
	}
	switch {
	case v.Channel == "" || len(v.Channel) > 128:
		return &buffer.ValidationError{Field: "payload.channel", Reason: "Missing required field: channel (≤ 128 bytes)"}
	case v.Event == "" || len(v.Event) > 128:
		return &buffer.ValidationError{Field: "payload.event", Reason: "Missing required field: event (≤ 128 bytes)"}
	case len(v.Data) == 0:
		return &buffer.ValidationError{Field: "payload.data", Reason: "Missing required field: data"}
	}
	return nil
}

// HonoursContext implements buffer.ContextHonourer: the publish takes the
// attempt's context.
func (*Emit) HonoursContext() bool { return true }

// Process publishes the event and reports how many subscribers got it.
func (e *Emit) Process(ctx context.Context, m *buffer.Message) (any, error) {
	var v emitPayload
	if err := json.Unmarshal(m.Payload, &v); err != nil {
		return nil, &buffer.ValidationError{Field: "payload", Reason: err.Error()}
	}
	ev := contracts.BufferEvent{Event: "emit", MessageID: m.MessageID, Type: TypeSSEEmit, Priority: m.Priority,
		Channel: v.Channel, Name: v.Event, Data: v.Data, At: e.Now().UTC()}
	raw, _ := json.Marshal(ev) // BufferEvent always marshals
	n, err := e.Redis.Publish(ctx, e.Channel, raw).Result()
	if err != nil {
		return nil, fmt.Errorf("sse.emit: publish: %w", err)
	}
	return map[string]any{"receivers": n}, nil
}

// Noop completes at once (BUFFER_BENCH_HANDLERS=true only).
type Noop struct{ buffer.Base }

// NewNoop returns the benchmark handler.
func NewNoop() Noop { return Noop{Base: buffer.Base{Name: TypeNoop, TimeoutAfter: 5 * time.Second}} }

// Validate accepts any payload.
func (Noop) Validate(json.RawMessage) error { return nil }

// HonoursContext implements buffer.ContextHonourer: nothing to wait for.
func (Noop) HonoursContext() bool { return true }

// Process does nothing.
func (Noop) Process(context.Context, *buffer.Message) (any, error) { return nil, nil }

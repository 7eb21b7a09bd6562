package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// RedisEvents publishes each event as JSON on a Redis channel (default
// contracts.BookingEventsChannel, "flowgate:booking:events"), for SSE
// fan-out and any other subscriber.
type RedisEvents struct {
	Client  redis.UniversalClient
	Channel string
}

// Publish implements Events.
func (e RedisEvents) Publish(ctx context.Context, ev contracts.BookingCompletedEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ch := e.Channel
	if ch == "" {
		ch = contracts.BookingEventsChannel
	}
	return e.Client.Publish(ctx, ch, b).Err()
}

// WebhookEvents POSTs each event as JSON to URL (BOOKING_EVENTS_WEBHOOK),
// signed like flowgate's webhooks: X-Timestamp (unix seconds) and
// X-Signature (hex HMAC-SHA256 of timestamp + "." + body, see package
// orchestrator/hmacsig). A non-2xx answer is an error; a redirect is not
// followed (hmacsig.Sender).
type WebhookEvents struct {
	URL string
	// Secret signs the POSTs: flowgate's outbound secret
	// (OUTBOUND_HMAC_SECRET), never one its own routes verify.
	Secret  []byte
	Client  *http.Client     // default: 10 s timeout
	Now     func() time.Time // default time.Now
	Timeout time.Duration    // per request when Client is nil; default 10 s
}

// Publish implements Events.
func (e WebhookEvents) Publish(ctx context.Context, ev contracts.BookingCompletedEvent) error {
	if e.URL == "" || len(e.Secret) == 0 {
		return errors.New("booking events webhook: URL and Secret are required")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	c := e.Client
	if c == nil && e.Timeout > 0 {
		c = &http.Client{Timeout: e.Timeout}
	}
	ans, err := hmacsig.Sender{Secret: e.Secret, Client: c, Now: e.Now}.Post(ctx, e.URL, body, nil)
	if err != nil {
		return fmt.Errorf("booking events webhook: %w", err)
	}
	if !ans.OK() {
		return fmt.Errorf("booking events webhook: %s answered %s", e.URL, ans)
	}
	return nil
}

// MultiEvents publishes to each sink in turn; all are tried, and their
// errors joined.
type MultiEvents []Events

// Publish implements Events.
func (m MultiEvents) Publish(ctx context.Context, ev contracts.BookingCompletedEvent) error {
	var errs []error
	for _, e := range m {
		if e == nil {
			continue
		}
		if err := e.Publish(ctx, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

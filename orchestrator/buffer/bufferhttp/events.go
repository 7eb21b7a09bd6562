package bufferhttp

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/web/sse"
)

// subscribeTimeout bounds the wait for Redis' SUBSCRIBE reply.
const subscribeTimeout = 2 * time.Second

// Events serves GET /api/buffer/events: the buffer's events (enqueued,
// completed, failed, dlq, circuit) and sse.emit's emissions, as SSE, read
// from the Redis channel so every instance's events reach every stream.
// ?event=<name> keeps one kind; ?channel=<c> keeps sse.emit emissions on
// channel c (their SSE event name is the emitted name, their data the
// emitted data).
func Events(rdb redis.UniversalClient, channel string, o sse.Options) fiber.Handler {
	return sse.Handler(func(ctx context.Context, c *fiber.Ctx) (<-chan sse.Event, func(), error) {
		wantEvent, wantChannel := strings.Clone(c.Query("event")), strings.Clone(c.Query("channel"))
		// The stream's context has no deadline; the connection and the
		// SUBSCRIBE reply get one so a hung Redis cannot hold the request
		// (and shutdown) forever.
		rctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
		ps := rdb.Subscribe(rctx, channel)
		_, err := ps.Receive(rctx)
		cancel()
		if err != nil {
			_ = ps.Close()
			return nil, nil, &contracts.Error{Code: contracts.CodePersistenceFailure, Op: "bufferhttp.events", Err: err,
				Message: "the event channel (Redis) is unavailable; try again"}
		}
		out := make(chan sse.Event, 64)
		go func() {
			defer close(out)
			in := ps.Channel()
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-in:
					if !ok {
						return
					}
					e, keep := frame(m.Payload, wantEvent, wantChannel)
					if !keep {
						continue
					}
					select {
					case out <- e:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
		return out, func() { _ = ps.Close() }, nil
	}, o)
}

// frame turns a published BufferEvent into an SSE event, or drops it.
func frame(payload, wantEvent, wantChannel string) (sse.Event, bool) {
	var e contracts.BufferEvent
	if json.Unmarshal([]byte(payload), &e) != nil {
		return sse.Event{}, false
	}
	if wantChannel != "" {
		if e.Channel != wantChannel {
			return sse.Event{}, false
		}
		return sse.Event{ID: e.MessageID, Event: e.Name, Data: e.Data}, true
	}
	if wantEvent != "" && e.Event != wantEvent {
		return sse.Event{}, false
	}
	return sse.Event{ID: e.MessageID, Event: e.Event, Data: []byte(payload)}, true
}

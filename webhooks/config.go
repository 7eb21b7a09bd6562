package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// Default paths.
const (
	DefaultAckPath     = "/ack"
	DefaultFailPath    = "/fail"
	DefaultAliasPrefix = "/webhook"
)

// DefaultFollowUpTimeout bounds the FailFollower's work for one FAIL.
const DefaultFollowUpTimeout = 5 * time.Second

// DefaultRequestTimeout bounds each webhook request's own work (the
// signature's replay check and the ledger script): with Redis hung it
// answers 503 unavailable after this long. A FAIL's follow-up has its own
// FollowUpTimeout after that.
const DefaultRequestTimeout = 2 * time.Second

// maxPathLen bounds a configured path.
const maxPathLen = 256

// Config configures the webhooks. Zero values take the defaults.
type Config struct {
	// AckPath and FailPath are the primary paths. Defaults "/ack", "/fail".
	AckPath  string
	FailPath string
	// AliasPrefix also serves each path under it ("/webhook" + "/ack").
	// Default "/webhook"; DisableAliases serves the primary paths only.
	AliasPrefix    string
	DisableAliases bool
	// Auth, when set, runs first on each webhook route, so that refusals
	// are counted as outcome "unauthorized" per hook. Normally
	// signature.Verifier.Middleware(signature.DeferReplay()): the hooks
	// make the replay check it defers in the ledger's script (one round
	// trip); a Middleware that checks itself works too (two).
	Auth fiber.Handler
	// Registerer receives the webhook metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger logs follow-up failures. Default slog.Default().
	Logger *slog.Logger
	// FollowUpTimeout bounds FailFollower.AfterFail, which runs detached
	// from the request (the worker hanging up must not cancel its retry).
	// Default DefaultFollowUpTimeout.
	FollowUpTimeout time.Duration
	// Context is the parent of the follow-up's context. Default
	// context.Background().
	Context context.Context
	// RequestTimeout is the deadline of each request's context, set before
	// Auth runs. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
}

func (c Config) withDefaults() Config {
	c.AckPath = valutil.ValOrDefault(c.AckPath, DefaultAckPath)
	c.FailPath = valutil.ValOrDefault(c.FailPath, DefaultFailPath)
	c.AliasPrefix = valutil.ValOrDefault(c.AliasPrefix, DefaultAliasPrefix)
	c.Logger = valutil.ValOrDefault(c.Logger, slog.Default())
	c.FollowUpTimeout = valutil.ValOrDefault(c.FollowUpTimeout, DefaultFollowUpTimeout)
	c.Context = valutil.ValOrDefault(c.Context, context.Background())
	c.RequestTimeout = valutil.ValOrDefault(c.RequestTimeout, DefaultRequestTimeout)
	return c
}

func (c Config) validate() error {
	for _, p := range []struct{ name, v string }{{"AckPath", c.AckPath}, {"FailPath", c.FailPath}, {"AliasPrefix", c.AliasPrefix}} {
		if err := checkPath(p.v); err != nil {
			return fmt.Errorf("webhooks: %s: %w", p.name, err)
		}
	}
	if c.FollowUpTimeout < 0 {
		return errors.New("webhooks: FollowUpTimeout must not be negative")
	}
	if c.RequestTimeout < 10*time.Millisecond {
		return errors.New("webhooks: RequestTimeout must be at least 10ms")
	}
	seen := map[string]string{}
	for _, r := range c.routes() {
		key := strings.ToLower(r.path) // Fiber routes are case-insensitive by default
		if other, dup := seen[key]; dup {
			return fmt.Errorf("webhooks: %s path %s is also the %s path", r.hook, r.path, other)
		}
		seen[key] = r.hook
	}
	return nil
}

// checkPath accepts "/a/b": absolute, no trailing slash, no empty, "." or
// ".." segment, none of space ? # : * and no control characters.
func checkPath(p string) error {
	switch {
	case len(p) > maxPathLen:
		return fmt.Errorf("path longer than %d bytes", maxPathLen)
	case !strings.HasPrefix(p, "/") || p == "/":
		return fmt.Errorf("want a path such as /ack, got %q", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q must not end with /", p)
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("?#:*", r) {
			return fmt.Errorf("path %q must not contain %q", p, r)
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q has an empty or dot segment", p)
		}
	}
	return nil
}

// route is one served path.
type route struct {
	hook string // "ack" or "fail"
	path string
}

// routes lists the paths served: primary first, then aliases.
func (c Config) routes() []route {
	rs := []route{{hookAck, c.AckPath}, {hookFail, c.FailPath}}
	if !c.DisableAliases {
		rs = append(rs, route{hookAck, c.AliasPrefix + c.AckPath}, route{hookFail, c.AliasPrefix + c.FailPath})
	}
	return rs
}

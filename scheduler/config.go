package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Config configures a Scheduler. Only Redis is required.
type Config struct {
	// Redis holds the locks. Every instance that must not run a job twice
	// per tick uses the same Redis (and KeyPrefix).
	Redis redis.UniversalClient
	// Logger gets failures (error), Redis trouble (warn) and skips
	// (debug). Default: discard.
	Logger *slog.Logger
	// Registerer gets the flowgate_cron_* metrics. Schedulers sharing a
	// Registerer share the collectors. Default: a private registry, so
	// nothing is exported.
	Registerer prometheus.Registerer
	// Now is the clock used to name ticks and time runs. Default: time.Now.
	// The cron timer itself always uses the real clock.
	Now func() time.Time
	// KeyPrefix starts every Redis key. Default: DefaultKeyPrefix. It must
	// not contain '{' or '}', which would move the keys' hash tag.
	KeyPrefix string
	// Location interprets specs without a CRON_TZ= prefix. Default: UTC,
	// not time.Local, so that instances whose TZ differ still agree on the
	// ticks of "0 0 3 * * *".
	Location *time.Location
}

// withDefaults uses cmp.Or, which orchestrator/valutil.ValOrDefault is
// named for: of the module's packages the scheduler imports only
// contracts, so it cannot use valutil, and its one func field is checked
// by hand.
func (c Config) withDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.Registerer = cmp.Or[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	if c.Now == nil {
		c.Now = time.Now
	}
	c.KeyPrefix = cmp.Or(c.KeyPrefix, DefaultKeyPrefix)
	c.Location = cmp.Or(c.Location, time.UTC)
	return c
}

func (c Config) validate() error {
	if c.Redis == nil {
		return errors.New("config: a Redis client is required")
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		return fmt.Errorf("KeyPrefix %q contains a brace", c.KeyPrefix)
	}
	return nil
}

// Sentinel causes, for errors.Is. The errors returned by this package are
// *contracts.Error values (with an Op and a Code) wrapping one of these.
var (
	ErrInvalid      = errors.New("invalid")           // bad config, job name or spec (CodeInvalid)
	ErrDuplicateJob = errors.New("duplicate job")     // Register of a name already taken (CodeConflict)
	ErrUnknownJob   = errors.New("unknown job")       // RunNow of a name never registered (CodeNotFound)
	ErrStopped      = errors.New("stopped")           // the scheduler was stopped (CodeUnavailable)
	ErrUnavailable  = errors.New("redis unavailable") // the lock could not be taken (CodeUnavailable)
	ErrJobFailed    = errors.New("job failed")        // the job returned an error or panicked (CodeInternal)
)

// fail builds the package's error: a *contracts.Error with op and code,
// whose message is the sentinel's text and whose cause is the formatted
// detail (which may wrap a cause with %w). errors.Is finds both the
// sentinel and the wrapped cause.
func fail(code contracts.Code, op string, sentinel error, format string, args ...any) error {
	detail := detailError{sentinel: sentinel, detail: fmt.Errorf(format, args...)}
	return contracts.Wrap(code, "scheduler."+op, detail, sentinel.Error())
}

type detailError struct{ sentinel, detail error }

func (e detailError) Error() string   { return e.detail.Error() }
func (e detailError) Unwrap() []error { return []error{e.sentinel, e.detail} }

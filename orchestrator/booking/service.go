package booking

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// Deps are the service's and the worker's collaborators. Required by New:
// Cloud9, Tokens, Sessions, Queue, Marks. Required by NewWorker: Cloud9,
// Tokens, Sessions, Marks. The rest are optional: without a Limiter nothing
// is spaced client-side; without Reservations no slot is held; without
// BookingTokens a bookingToken is refused and slots carry none; without
// Slots the slot endpoints answer api_error; without Events completions are
// only counted and logged.
type Deps struct {
	Cloud9  Cloud9
	Limiter Limiter
	// NoteLimiter takes SetPatientComment's turns for the comments no
	// caller's answer waits on (booking notes, bookConsultation's
	// comments): the same window as Limiter less a reserve
	// (CLOUD9_COMMENT_RESERVE), so they never starve a comment a caller
	// waits for (editInsurance, which takes Limiter's turn). Nil: Limiter.
	NoteLimiter   Limiter
	Tokens        AuthTokens
	Sessions      Sessions
	Reservations  Reservations
	BookingTokens BookingTokens
	Slots         SlotSource
	Queue         Queue
	Marks         Marks
	Events        Events
}

// Answer is an endpoint's JSON body and whether the endpoint failed to do
// its work (Cloud9 or the queue could not be reached: the seed answers
// those with a server error). The HTTP status is chosen by package
// bookinghttp, not here.
type Answer struct {
	Body   any
	Failed bool
}

func ok(body any) Answer { return Answer{Body: body} }

// failed is an Answer of an endpoint that could not do its work.
func failed(body any) Answer { return Answer{Body: body, Failed: true} }

// Service answers the Node-RED booking endpoints.
type Service struct {
	d   Deps
	cfg Config
	log *slog.Logger
	val *validation
	m   *serviceMetrics
}

// New validates cfg and deps and registers the service's metrics.
func New(d Deps, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := d.check(true); err != nil {
		return nil, err
	}
	m, err := newServiceMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Service{d: d, cfg: cfg, log: cfg.Logger.With("component", "booking"), val: newValidation(), m: m}, nil
}

// check reports the first required dependency missing; the Queue is
// required of the Service, not of the Worker (which is the Queue).
func (d Deps) check(needQueue bool) error {
	for _, dep := range []struct {
		name    string
		missing bool
	}{{"Cloud9", d.Cloud9 == nil}, {"Tokens", d.Tokens == nil}, {"Sessions", d.Sessions == nil},
		{"Queue", needQueue && d.Queue == nil}, {"Marks", d.Marks == nil}} {
		if dep.missing {
			return errors.New("booking: Deps." + dep.name + " is required")
		}
	}
	return nil
}

// Config returns the effective configuration (defaults applied).
func (s *Service) Config() Config { return s.cfg }

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.cfg.Now() }

type serviceMetrics struct {
	outcomes *prometheus.CounterVec
	wait     *prometheus.HistogramVec
}

// preCreated are the answers that exist at zero from the start, so that
// dashboards and alerts see the first booked, queued or failed answer.
var preCreated = map[string][]string{
	"createAppt":    {"booked", "queued", "failed", "slot_reserved", "duplicate_slot"},
	"createPatient": {"created", "queued", "failed"},
}

func newServiceMetrics(reg prometheus.Registerer) (*serviceMetrics, error) {
	m := &serviceMetrics{outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flowgate_booking_answers_total",
		Help: "Answers of the Node-RED booking endpoints by endpoint and outcome (booked, queued, auth_rejected, validation_error, slot_reserved, failed, created, cached, ok, no_slots, error).",
	}, []string{"endpoint", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flowgate_booking_limiter_wait_seconds",
			Help:    "Time an in-call booking waited for the Cloud9 limiter's turn (0: admitted at once), by procedure.",
			Buckets: []float64{0, .1, .25, .5, 1, 2, 4, 6, 8, 10, 15},
		}, []string{"procedure"})}
	var err error
	if m.outcomes, err = shared(reg, m.outcomes); err != nil {
		return nil, err
	}
	if m.wait, err = shared(reg, m.wait); err != nil {
		return nil, err
	}
	for endpoint, outcomes := range preCreated {
		for _, o := range outcomes {
			m.outcomes.WithLabelValues(endpoint, o)
		}
	}
	for _, p := range []string{cloud9.ProcSetAppointment, cloud9.ProcSetPatient} {
		m.wait.WithLabelValues(p)
	}
	return m, nil
}

// shared registers c, or returns the collector of the same kind already
// registered under its name (several services may share one registry).
func shared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

func (s *Service) count(endpoint, outcome string) {
	s.m.outcomes.WithLabelValues(endpoint, outcome).Inc()
}

// guidRE is a Cloud9 GUID in either case.
var guidRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// OperationIDRandom is how many random base-36 characters end an
// operation id: 20 (≈ 103 bits from crypto/rand). An operation id is the
// key to its operation (queue-status, checkOperationStatus) for whoever
// holds it, so it must not be guessable, also by someone who knows when it
// was made (the millisecond before it is public in practice). The
// Node-RED original had 6 (≈ 31 bits).
const OperationIDRandom = 20

// NewOperationID returns prefix-<unix ms>-<OperationIDRandom base36
// chars>, the Node-RED operation id format ("op", "op-pat") with a longer
// random part.
func NewOperationID(prefix string, now time.Time) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	const limit = 256 - 256%len(alphabet) // unbiased: bytes ≥ limit are drawn again
	out := make([]byte, 0, OperationIDRandom)
	buf := make([]byte, OperationIDRandom+8)
	for len(out) < OperationIDRandom {
		_, _ = rand.Read(buf) // crypto/rand: never fails (it crashes the program instead)
		for _, c := range buf {
			if int(c) < limit && len(out) < OperationIDRandom {
				out = append(out, alphabet[int(c)%len(alphabet)])
			}
		}
	}
	return prefix + "-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + string(out)
}

// turn waits for the limiter's turn on procedure while the wait ends by
// deadline; ok is false when it would not (or ctx has ended). A limiter error
// lets the call go ahead (fail open, logged).
func (s *Service) turn(ctx context.Context, rb *redisBudget, procedure string, deadline time.Time) (waited time.Duration, ok bool) {
	if ctx.Err() != nil { // the request has ended: no call now (the caller queues)
		return 0, false
	}
	lim := s.d.limiter(procedure)
	if lim == nil {
		return 0, true
	}
	defer func() { s.m.wait.WithLabelValues(procedure).Observe(waited.Seconds()) }()
	for {
		actx, cancel := rb.ctx(ctx)
		allowed, after, err := lim.Allow(actx, procedure)
		cancel()
		if err != nil {
			s.log.Warn("cloud9 limiter unavailable; calling without it", "procedure", procedure, "err", err)
			return waited, true
		}
		if allowed {
			return waited, true
		}
		if after <= 0 {
			after = 10 * time.Millisecond
		}
		if s.cfg.Now().Add(after).After(deadline) {
			return waited, false
		}
		if err := s.cfg.Sleep(ctx, after); err != nil {
			return waited, false
		}
		rb.waited(after) // a wait for the window, not for Redis
		waited += after
	}
}

// fits reports whether waiting d still ends by deadline.
func (s *Service) fits(d time.Duration, deadline time.Time) bool {
	return !s.cfg.Now().Add(d).After(deadline)
}

// limiter is the limiter of procedure's turns: NoteLimiter for
// SetPatientComment (every comment the booking service writes is one no
// answer waits on), else Limiter.
func (d Deps) limiter(procedure string) Limiter {
	if procedure == cloud9.ProcSetPatientComment && d.NoteLimiter != nil {
		return d.NoteLimiter
	}
	return d.Limiter
}

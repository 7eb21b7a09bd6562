package bookingtest

import (
	"io"
	"log/slog"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking"
)

// Secret is the booking-auth secret of every Env.
var Secret = []byte("bookingsvctest-secret-0123456789")

// Well-known values of the tests.
var (
	Patient = GUID('D', 1) // the parent-as-patient
	Other   = GUID('D', 2) // another patient
	View    = "AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE"
	Column  = "11111111-2222-4333-8444-555555555555"
	Type    = "F6C20C35-9ABB-47C2-981A-342996016705"
)

// Env is one set of fakes sharing a clock.
type Env struct {
	Clock        *Clock
	Cloud9       *Cloud9
	Limiter      *Limiter
	Tokens       Tokens
	Sessions     *Sessions
	Reservations *Reservations
	Slots        *Slots
	Queue        *Queue
	Marks        *booking.MemoryMarks
	Events       *Events
	Registry     *prometheus.Registry
}

// NewEnv returns fresh fakes on a clock at T0.
func NewEnv() *Env {
	clk := NewClock(T0)
	marks := booking.NewMemoryMarks()
	marks.Now = clk.Now
	return &Env{Clock: clk, Cloud9: NewCloud9(), Limiter: NewLimiter(), Tokens: Tokens{Secret: Secret, Now: clk.Now},
		Sessions: NewSessions(), Reservations: NewReservations(), Slots: &Slots{}, Queue: &Queue{},
		Marks: marks, Events: &Events{}, Registry: prometheus.NewRegistry()}
}

// Deps wires the fakes; queue replaces the recording Queue when not nil.
func (e *Env) Deps(queue booking.Queue) booking.Deps {
	if queue == nil {
		queue = e.Queue
	}
	return booking.Deps{Cloud9: e.Cloud9, Limiter: e.Limiter, Tokens: e.Tokens, Sessions: e.Sessions,
		Reservations: e.Reservations, BookingTokens: BookingTokens{Slots: e.Slots}, Slots: e.Slots, Queue: queue, Marks: e.Marks,
		Events: e.Events}
}

// Config is the seed's configuration on the fake clock, logging nowhere.
func (e *Env) Config() booking.Config {
	return booking.Config{Now: e.Clock.Now, Sleep: e.Clock.Sleep, Logger: Discard(), Registerer: e.Registry,
		StatusEndpoint: booking.DefaultBasePath + "/queue-status"}
}

// Service builds the service on the fakes.
func (e *Env) Service(t testing.TB, mod ...func(*booking.Config)) *booking.Service {
	t.Helper()
	cfg := e.Config()
	for _, m := range mod {
		m(&cfg)
	}
	s, err := booking.New(e.Deps(nil), cfg)
	if err != nil {
		t.Fatalf("booking.New: %v", err)
	}
	return s
}

// Token issues a valid bookingAuthToken for patient.
func (e *Env) Token(patient string) string {
	tok, _ := e.Tokens.Issue("call-session-123", patient)
	return tok
}

// Discard is a logger that writes nowhere.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// opRE is an operation id: 20 random characters (booking.NewOperationID),
// or the original's 6 (fixed ids of the goldens).
var opRE = regexp.MustCompile(`\bop(-pat|-note)?-\d{10,}-(?:[0-9a-z]{20}|[0-9a-z]{6})\b`)

// normalizer: operation ids → {op-N}, UUIDs → {uuid-N} (numbered by first
// appearance, keys sorted), RFC 3339 times → {time}, bookingAuthTokens
// (signed, with times inside) → {token}, request_id → {request_id}.
var normalizer = contractstest.Normalizer{
	Keys: map[string]string{"request_id": "{request_id}", "bookingAuthToken": "{token}", "bookingAuthToken_for_booking": "{token}"},
	Rules: []contractstest.Rule{{RE: opRE, Name: "op", Numbered: true}, {RE: contractstest.UUID, Name: "uuid", Numbered: true},
		{RE: contractstest.Time, Name: "time"}},
}

// Normalize replaces volatile values so a body compares equal run after run
// (see normalizer).
func Normalize(t testing.TB, raw []byte) []byte {
	t.Helper()
	return normalizer.Normalize(t, raw)
}

// Golden compares the normalised body with
// contracts/testdata/booking_http_<name>.golden (-update rewrites it).
func Golden(t testing.TB, name string, body []byte) {
	t.Helper()
	contractstest.Golden(t, "booking_http_"+name, Normalize(t, body))
}

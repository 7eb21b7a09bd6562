// Package bookingtest has in-memory fakes of booking's dependencies
// (a scriptable Cloud9 and limiter, HMAC booking-auth tokens, the session
// cache, slot reservations, bookingTokens, a slot source, a recording
// queue), a fake clock whose Sleep advances it, and the golden normaliser
// of the booking HTTP answers. Tests of booking and bookinghttp share
// them; the real implementations live in other packages and are adapted by
// the sidecar.
package bookingtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// T0 is the fake clock's start: Tuesday 20 Jan 2026, 15:30 UTC.
var T0 = time.Date(2026, 1, 20, 15, 30, 0, 0, time.UTC)

// Clock is a settable clock; Sleep advances it at once and records the
// durations.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep advances the clock by d (ctx permitting).
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

// Slept returns the sleeps so far.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// GUID returns a deterministic uppercase Cloud9-style GUID.
func GUID(kind byte, n int) string {
	return fmt.Sprintf("%c0000000-0000-4000-8000-%012d", kind, n)
}

// Committed wraps an error that SetAppointment / SetPatient returns after
// the fake has already made the record: an uncertain outcome that did
// happen (timeout after commit, connection dropped after commit).
type Committed struct{ Err error }

func (c Committed) Error() string { return c.Err.Error() }
func (c Committed) Unwrap() error { return c.Err }

// StatusError is a ResponseStatus Error answer with code and message,
// classed as the Cloud9 client classes it (cloud9.Classify).
func StatusError(procedure string, code int, msg string) error {
	return &cloud9.Error{Procedure: procedure, Kind: cloud9.KindStatus, Class: cloud9.Classify(code, msg), Code: code, Message: msg}
}

// ResultError is a Success answer whose Result is an "Error: …" text,
// classed as the Cloud9 client classes it.
func ResultError(procedure, msg string) error {
	return &cloud9.Error{Procedure: procedure, Kind: cloud9.KindResult, Class: cloud9.Classify(-1, msg), Code: -1, Message: msg}
}

// RateLimited is Cloud9's "Too many requests" answer.
func RateLimited() error {
	return StatusError(cloud9.ProcSetAppointment, cloud9.CodeRateLimited,
		"Too many requests within the timeframe for procedure SetAppointment")
}

// Timeout is an uncertain timeout.
func Timeout() error {
	return &cloud9.Error{Procedure: cloud9.ProcSetAppointment, Kind: cloud9.KindTransport, Class: cloud9.ClassTimeout, Code: -1,
		Message: "request timed out after 45s", Uncertain: true}
}

// Unreachable is a connection refused: certain, nothing sent.
func Unreachable() error {
	return &cloud9.Error{Procedure: cloud9.ProcSetAppointment, Kind: cloud9.KindTransport, Class: cloud9.ClassUnknown, Code: -1,
		Message: "dial tcp 127.0.0.1:1: connect: connection refused"}
}

// SlotTaken is the documented slot-conflict answer.
func SlotTaken() error {
	return ResultError(cloud9.ProcSetAppointment, "Error: This appointment cannot be scheduled in the specified time slot.")
}

// PatientMissing is PATIENT_NOT_FOUND.
func PatientMissing() error {
	return ResultError(cloud9.ProcSetAppointment, "Error: Patient GUID specified does not exist.")
}

// Call is one recorded Cloud9 call.
type Call struct {
	Procedure string
	Args      any
}

// Cloud9 is a scriptable fake Cloud9: each procedure answers the scripted
// errors in order, then succeeds.
type Cloud9 struct {
	mu     sync.Mutex
	script map[string][]error
	calls  []Call
	appts  map[string][]cloud9.Appointment // by patient
	n      int
	Hook   func(procedure string) // called on every call, outside the lock
	// Gate, when set, answers a call before the script (nil: go on), e.g.
	// a Window's code 8 for writes beyond Cloud9's own rate.
	Gate     func(procedure string) error
	ListHide bool // GetAppointmentListByPatient omits the column
}

// NewCloud9 returns a fake with no script.
func NewCloud9() *Cloud9 {
	return &Cloud9{script: map[string][]error{}, appts: map[string][]cloud9.Appointment{}}
}

// Script queues errors for the next calls of procedure (nil = success).
func (c *Cloud9) Script(procedure string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.script[procedure] = append(c.script[procedure], errs...)
}

// Calls returns the recorded calls of procedure ("" = all).
func (c *Cloud9) Calls(procedure string) []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Call
	for _, call := range c.calls {
		if procedure == "" || call.Procedure == procedure {
			out = append(out, call)
		}
	}
	return out
}

// Appointments returns the appointments the fake holds for patient.
func (c *Cloud9) Appointments(patientGUID string) []cloud9.Appointment {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cloud9.Appointment(nil), c.appts[strings.ToUpper(patientGUID)]...)
}

func (c *Cloud9) next(procedure string, args any) (int, error) {
	if c.Hook != nil {
		c.Hook(procedure)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, Call{Procedure: procedure, Args: args})
	c.n++
	if c.Gate != nil {
		if err := c.Gate(procedure); err != nil {
			return c.n, err
		}
	}
	if q := c.script[procedure]; len(q) > 0 {
		c.script[procedure] = q[1:]
		return c.n, q[0]
	}
	return c.n, nil
}

// SetPatient implements booking.Cloud9.
func (c *Cloud9) SetPatient(_ context.Context, in cloud9.PatientInput) (string, string, error) {
	n, err := c.next(cloud9.ProcSetPatient, in)
	guid := GUID('B', n)
	var com Committed
	if err != nil && !errors.As(err, &com) {
		return "", "", err
	}
	return guid, "Patient Added: " + guid, err
}

// SetAppointment implements booking.Cloud9.
func (c *Cloud9) SetAppointment(_ context.Context, in cloud9.AppointmentInput) (string, string, error) {
	n, err := c.next(cloud9.ProcSetAppointment, in)
	var com Committed
	if err != nil && !errors.As(err, &com) {
		return "", "", err
	}
	guid := GUID('A', n)
	c.mu.Lock()
	key := strings.ToUpper(in.PatientGUID)
	c.appts[key] = append(c.appts[key], cloud9.Appointment{AppointmentGUID: guid, PatientGUID: in.PatientGUID,
		AppointmentDateTime: in.StartTime, ScheduleViewGUID: in.ScheduleViewGUID, ScheduleColumnGUID: in.ScheduleColumnGUID,
		AppointmentTypeGUID: in.AppointmentTypeGUID, Minutes: in.Minutes, StatusDescription: "Scheduled"})
	c.mu.Unlock()
	return guid, "Appointment GUID Added: " + guid, err
}

// Cancel marks an appointment cancelled (as an operator would).
func (c *Cloud9) Cancel(patientGUID, appointmentGUID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.appts[strings.ToUpper(patientGUID)] {
		if strings.EqualFold(a.AppointmentGUID, appointmentGUID) {
			c.appts[strings.ToUpper(patientGUID)][i].StatusDescription = "Cancelled"
		}
	}
}

// Hide leaves an appointment out of GetAppointmentListByPatient (a list
// lagging behind a booking just made).
func (c *Cloud9) Hide(patientGUID, appointmentGUID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := strings.ToUpper(patientGUID)
	kept := c.appts[p][:0]
	for _, a := range c.appts[p] {
		if !strings.EqualFold(a.AppointmentGUID, appointmentGUID) {
			kept = append(kept, a)
		}
	}
	c.appts[p] = kept
}

// SetPatientComment implements booking.Cloud9.
func (c *Cloud9) SetPatientComment(_ context.Context, patientGUID, comment string) (string, string, error) {
	n, err := c.next(cloud9.ProcSetPatientComment, [2]string{patientGUID, comment})
	if err != nil {
		return "", "", err
	}
	g := GUID('C', n)
	return g, "Patient Comment GUID Added: " + g, nil
}

// GetAppointmentListByPatient implements booking.Cloud9.
func (c *Cloud9) GetAppointmentListByPatient(_ context.Context, patientGUID string) ([]cloud9.Appointment, error) {
	if _, err := c.next(cloud9.ProcGetAppointmentListByPatient, patientGUID); err != nil {
		return nil, err
	}
	out := c.Appointments(patientGUID)
	if c.ListHide {
		for i := range out {
			out[i].ScheduleColumnGUID = ""
		}
	}
	return out, nil
}

// Limiter is a scriptable limiter: each procedure answers the scripted
// waits in order (0 = allowed), then allows.
type Limiter struct {
	mu     sync.Mutex
	script map[string][]time.Duration
	calls  map[string]int
	Err    error
	// Every is the spacing Spacing reports (0: none known).
	Every time.Duration
}

// Spacing implements booking.Spacer.
func (l *Limiter) Spacing(string) time.Duration { return l.Every }

// NewLimiter allows everything until scripted.
func NewLimiter() *Limiter {
	return &Limiter{script: map[string][]time.Duration{}, calls: map[string]int{}}
}

// Script queues answers for procedure: 0 allows, d > 0 refuses with
// retryAfter d.
func (l *Limiter) Script(procedure string, waits ...time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.script[procedure] = append(l.script[procedure], waits...)
}

// Calls counts Allow calls for procedure.
func (l *Limiter) Calls(procedure string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[procedure]
}

// Allow implements booking.Limiter.
func (l *Limiter) Allow(_ context.Context, procedure string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[procedure]++
	if l.Err != nil {
		return false, 0, l.Err
	}
	if q := l.script[procedure]; len(q) > 0 {
		l.script[procedure] = q[1:]
		if q[0] > 0 {
			return false, q[0], nil
		}
	}
	return true, 0, nil
}

// Tokens is a small real implementation of the seed's bookingAuthToken:
// base64url(JSON{sessionId, patientGUID, createdAt, expiresAt, nonce}) "."
// base64url(HMAC-SHA256(secret, payload)), with the five checks.

// Window is a sliding-window log per procedure on a Clock: at most N calls
// in any Per, like cloud9.WindowLimiter on Redis. As a booking.Limiter it
// answers the time until the oldest admission leaves; Over is the same rule
// as Cloud9 applies it (a Cloud9.Gate): a write beyond it is code 8.
type Window struct {
	mu    sync.Mutex
	Clock *Clock
	N     int
	Per   time.Duration
	log   map[string][]time.Time
	// Refused counts the calls Over refused (Cloud9's code 8).
	Refused int
}

// NewWindow is N calls per Per on clk.
func NewWindow(clk *Clock, n int, per time.Duration) *Window {
	return &Window{Clock: clk, N: n, Per: per, log: map[string][]time.Time{}}
}

// Fill admits n calls of procedure at the clock's now.
func (w *Window) Fill(procedure string, n int) {
	for range n {
		w.admit(procedure)
	}
}

// admit reports whether a call is admitted now, else how long until it
// would be.
func (w *Window) admit(procedure string) (bool, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.Clock.Now()
	kept := w.log[procedure][:0]
	for _, t := range w.log[procedure] {
		if now.Sub(t) < w.Per {
			kept = append(kept, t)
		}
	}
	w.log[procedure] = kept
	if len(kept) < w.N {
		w.log[procedure] = append(kept, now)
		return true, 0
	}
	return false, kept[0].Add(w.Per).Sub(now)
}

// Allow implements booking.Limiter for writes (Set*); reads pass.
func (w *Window) Allow(_ context.Context, procedure string) (bool, time.Duration, error) {
	if !strings.HasPrefix(procedure, "Set") {
		return true, 0, nil
	}
	ok, after := w.admit(procedure)
	return ok, after, nil
}

// Over is Cloud9's side (a Cloud9.Gate): a write beyond N per Per is
// answered code 8 and counted in Refused.
func (w *Window) Over(procedure string) error {
	if !strings.HasPrefix(procedure, "Set") {
		return nil
	}
	if ok, _ := w.admit(procedure); ok {
		return nil
	}
	w.mu.Lock()
	w.Refused++
	w.mu.Unlock()
	return RateLimited()
}

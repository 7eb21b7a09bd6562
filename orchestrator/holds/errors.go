package holds

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// The engine's errors. Each is also a *contracts.Error (or carries a Code
// method) so the HTTP faces map it with the project's one code→status map.
var (
	// ErrSlotTaken: someone else holds the slot (→ 409 conflict).
	ErrSlotTaken = errors.New("holds: slot is held by someone else")
	// ErrNoCandidates: no specialist is free at the slot (→ 409 conflict).
	ErrNoCandidates = errors.New("holds: no specialist is free at this slot")
	// ErrHoldNotFound: no such live hold (expired, released, never made) (→ 404).
	ErrHoldNotFound = errors.New("holds: no such hold")
	// ErrNotOwner: the hold is another client's (→ 409 conflict).
	ErrNotOwner = errors.New("holds: the hold belongs to another client")
	// ErrUnavailable: Redis failed (→ 503 unavailable).
	ErrUnavailable = errors.New("holds: unavailable")
	// ErrInvalid: a request the engine cannot key (→ 400 invalid).
	ErrInvalid = errors.New("holds: invalid request")
)

// TakenError is ErrSlotTaken with what may be said about the holder: when
// the hold began and how long it still lasts (never who holds it).
type TakenError struct {
	Holder    Hold          // for the faces; not to be sent to other clients
	ExpiresIn time.Duration // the hold's remaining TTL
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("holds: slot %s at %s is held by someone else (for %s more)",
		e.Holder.SpecialistID, FormatStart(e.Holder.SlotStartDate), e.ExpiresIn.Round(time.Millisecond))
}

// Unwrap makes errors.Is(err, ErrSlotTaken) true.
func (e *TakenError) Unwrap() error { return ErrSlotTaken }

// Code is the contract code (409).
func (e *TakenError) Code() contracts.Code { return contracts.CodeConflict }

// QuotaError: the client already holds Limit slots; the earliest ends in RetryAfter (→ 429).
type QuotaError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("holds: client already holds %d slots (the limit); retry in %s", e.Limit, e.RetryAfter.Round(time.Second))
}

// Code is the contract code (429).
func (e *QuotaError) Code() contracts.Code { return contracts.CodeRateLimited }

// CooldownError: the client booked this appointment type recently (→ 429).
// Remaining is negative when the cooldown key has no TTL.
type CooldownError struct{ Remaining time.Duration }

func (e *CooldownError) Error() string {
	return fmt.Sprintf("holds: client booked this appointment type recently; cooldown ends in %s", e.Remaining.Round(time.Second))
}

// Code is the contract code (429).
func (e *CooldownError) Code() contracts.Code { return contracts.CodeRateLimited }

func unavailable(op string, err error) error {
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "holds unavailable",
		Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
}

func invalid(op, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &contracts.Error{Code: contracts.CodeInvalid, Op: op, Message: msg, Err: fmt.Errorf("%w: %s", ErrInvalid, msg)}
}

func coded(code contracts.Code, op string, sentinel error) error {
	return &contracts.Error{Code: code, Op: op, Message: sentinel.Error(), Err: sentinel}
}

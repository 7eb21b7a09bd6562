package reservation

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// ErrReservedByOther matches a *HeldError.
var ErrReservedByOther = errors.New("reservation: slot reserved by another session")

// ErrUnavailable matches every error caused by Redis failing (down,
// timeout); such errors are *contracts.Error with CodeUnavailable. Callers
// fail open on it (see the package doc).
var ErrUnavailable = errors.New("reservation: slot reservations unavailable")

// HeldError is a slot another session holds. It says since when and for how
// much longer, not who.
type HeldError struct {
	Key           string
	ReservedAt    time.Time     // zero when the value is not the seed's JSON
	SlotStartTime string        // as the holder wrote it
	ExpiresIn     time.Duration // the hold's remaining TTL; negative when it has none
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("reservation: %s is reserved by another session since %s (for %s more)",
		e.Key, e.ReservedAt.UTC().Format(time.RFC3339), e.ExpiresIn.Round(time.Second))
}

// Unwrap makes errors.Is(err, ErrReservedByOther) true.
func (e *HeldError) Unwrap() error { return ErrReservedByOther }

// Code is the contract code of a lost race.
func (e *HeldError) Code() contracts.Code { return contracts.CodeConflict }

func unavailable(op string, err error) error {
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "slot reservations unavailable",
		Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
}

func invalid(op string, err error) error {
	return contracts.Wrap(contracts.CodeInvalid, op, err, "cannot reserve this slot: "+err.Error())
}

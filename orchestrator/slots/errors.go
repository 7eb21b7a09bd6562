package slots

import (
	"errors"
	"fmt"

	"github.com/flowgate/flowgate/contracts"
)

// ErrUnavailable matches every error caused by Redis failing (down,
// timeout); such errors are *contracts.Error with CodeUnavailable.
var ErrUnavailable = errors.New("slots: slot cache unavailable")

func unavailable(op string, err error) error {
	return &contracts.Error{Code: contracts.CodeUnavailable, Op: op, Message: "slot cache unavailable",
		Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
}

func invalid(op, format string, args ...any) error {
	e := contracts.Errorf(contracts.CodeInvalid, format, args...)
	e.Op = op
	return e
}

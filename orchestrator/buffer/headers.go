package buffer

import (
	"errors"
	"fmt"
)

// CodeRequestInvalid is the code of an attempt whose outgoing request
// could not be built (an invalid header name or value): the same message
// would fail the same way, so it is never retried, and it says nothing
// about the downstream, so it does not count toward the breaker.
const CodeRequestInvalid = "REQUEST_INVALID"

// ValidHeaderName reports whether s is an HTTP header field name (RFC 9110
// token: visible ASCII but delimiters).
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// ValidHeaderValue reports whether s may be sent as an HTTP header value:
// no control character but horizontal tab (no CR, LF or NUL), as Go's
// net/http checks before it sends.
func ValidHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// ErrRequestInvalid is wrapped by RequestInvalid's errors.
var ErrRequestInvalid = errors.New("the outgoing request cannot be built")

// RequestInvalid is the error of an attempt whose request cannot be built
// (code REQUEST_INVALID, not retried, not a breaker failure), the reason
// spelled out for the dead-letter record.
func RequestInvalid(format string, args ...any) error {
	return &CodedError{Code: CodeRequestInvalid, Err: fmt.Errorf("%w: "+format, append([]any{ErrRequestInvalid}, args...)...)}
}

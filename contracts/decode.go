package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DecodeJSON decodes one JSON value from body into v and turns every decoding
// failure into an *Error with CodeInvalid naming what was wrong (syntax error
// offset, the field with the wrong type, trailing data). Unknown fields are
// accepted: the flows we replace send extra fields freely.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(CodeInvalid, "request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(CodeInvalid, "request body has data after the JSON value")
	}
	return nil
}

func decodeError(err error) *Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &Error{Code: CodeInvalid, Err: err, Message: fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error())}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return &Error{Code: CodeInvalid, Err: err,
			Message: fmt.Sprintf("field %q must be %s, got %s", field, typ.Type.String(), typ.Value),
			Details: map[string]any{"field": field}}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Code: CodeInvalid, Err: err, Message: "malformed JSON: unexpected end of input"}
	default:
		return &Error{Code: CodeInvalid, Err: err, Message: "malformed JSON: " + err.Error()}
	}
}

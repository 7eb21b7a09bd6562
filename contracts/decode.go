package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
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

// decodeError turns a decoding failure into a stable message: the byte
// offset of a syntax error, the field and the JSON type of a wrong type —
// never the parser's own text, which is kept as the (unshown) cause.
func decodeError(err error) *Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &Error{Code: CodeInvalid, Err: err, Message: fmt.Sprintf("malformed JSON at byte %d", syn.Offset),
			Details: map[string]any{"offset": syn.Offset}}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(body)"
		}
		return &Error{Code: CodeInvalid, Err: err,
			Message: fmt.Sprintf("field %q must be %s, got %s", field, jsonType(typ.Type), typ.Value),
			Details: map[string]any{"field": field}}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Code: CodeInvalid, Err: err, Message: "malformed JSON: unexpected end of input"}
	default:
		return &Error{Code: CodeInvalid, Err: err, Message: "malformed JSON"}
	}
}

// jsonType names what a Go type takes in JSON: the basic kinds by their
// Go name (string, int, bool, float64 — as before), composite ones as
// object or array, never a Go package path.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.Interface:
		return "a JSON value"
	}
	return t.Kind().String()
}

// NullString is a string written as JSON null when empty: a key the
// original flow always sends, null when it has no value.
type NullString string

// MarshalJSON writes null for "".
func (s NullString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// UnmarshalJSON reads a string or null.
func (s *NullString) UnmarshalJSON(b []byte) error {
	var p *string
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("want a string or null: %w", err)
	}
	*s = ""
	if p != nil {
		*s = NullString(*p)
	}
	return nil
}

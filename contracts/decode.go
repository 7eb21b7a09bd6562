package contracts

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
)

// DecodeJSON decodes one JSON value from body into v and turns every decoding
// failure into an *Error with CodeInvalid naming what was wrong (syntax error
// offset, the field with the wrong type, trailing data). Unknown fields are
// accepted: the flows we replace send extra fields freely.
//
// Numbers decoded into an interface value (any, map[string]any) stay
// json.Number, exact. A value with no interface anywhere in its type, the
// common case (every webhook body), is decoded by json.Unmarshal, which
// neither copies the body nor builds a Decoder (on an ACK that was a fifth
// of the decode); the result is the same as the Decoder's, and any failure
// is decoded again by the Decoder so that its message is too
// (FuzzDecodeJSONFastPath holds the two to each other).
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(CodeInvalid, "request body is empty; a JSON object is required")
	}
	if !holdsInterface(reflect.TypeOf(v)) && json.Unmarshal(body, v) == nil {
		return nil
	}
	return decodeNumbers(body, v)
}

// decodeNumbers is DecodeJSON by a Decoder with UseNumber.
func decodeNumbers(body []byte, v any) error {
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

// interfaceTypes caches holdsInterface by type.
var interfaceTypes sync.Map // reflect.Type → bool

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// holdsInterface reports whether decoding into t can reach an interface
// value, where UseNumber changes what a number becomes. A type that
// decodes itself (json.Unmarshaler, encoding.TextUnmarshaler) is given
// its bytes whatever the Decoder's options, so it counts as none; an
// unknown type (nil) as one.
func holdsInterface(t reflect.Type) bool {
	if t == nil {
		return true
	}
	if v, ok := interfaceTypes.Load(t); ok {
		return v.(bool)
	}
	v := reaches(t, map[reflect.Type]bool{})
	interfaceTypes.Store(t, v)
	return v
}

func reaches(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other fields decide
	}
	seen[t] = true
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return reaches(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && reaches(f.Type, seen) {
				return true
			}
		}
	}
	return false
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

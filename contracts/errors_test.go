package contracts_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

func TestErrorEnvelopeGolden(t *testing.T) {
	err := contracts.Errorf(contracts.CodeInvalid, "malformed JSON at byte 1")
	contractstest.Golden(t, "error_envelope", contracts.NewErrorResponse(err, "req-1"))
}

func TestInternalErrorsDoNotLeakCause(t *testing.T) {
	err := fmt.Errorf("boom: %w", errors.New("redis password is hunter2"))
	resp := contracts.NewErrorResponse(err, "req-2")
	if resp.Error.Code != contracts.CodeInternal || resp.Error.Message != "internal error" {
		t.Fatalf("got %+v", resp.Error)
	}
}

func TestCodeStatusRoundTrip(t *testing.T) {
	for _, c := range []contracts.Code{contracts.CodeInvalid, contracts.CodeUnauthorized, contracts.CodeForbidden,
		contracts.CodeNotFound, contracts.CodeMethodNotAllowed, contracts.CodeConflict, contracts.CodeTooLarge,
		contracts.CodeRateLimited, contracts.CodeUnavailable, contracts.CodeInternal, contracts.CodeTimeout,
		contracts.CodeHeadersTooLarge} {
		if got := contracts.CodeForStatus(c.HTTPStatus()); got != c {
			t.Errorf("%s -> %d -> %s", c, c.HTTPStatus(), got)
		}
	}
	if contracts.CodeTimeout.HTTPStatus() != http.StatusRequestTimeout || contracts.CodeHeadersTooLarge.HTTPStatus() != http.StatusRequestHeaderFieldsTooLarge {
		t.Error("timeout must be 408, headers_too_large 431")
	}
	if contracts.CodeQueueFull.HTTPStatus() != http.StatusServiceUnavailable {
		t.Error("queue_full must be 503")
	}
	if contracts.CodePatientRequired.HTTPStatus() != http.StatusUnprocessableEntity {
		t.Error("PATIENT_REQUIRED must be 422")
	}
	if contracts.CodeProtectedKey.HTTPStatus() != http.StatusForbidden {
		t.Error("protected_key must be 403")
	}
}

func TestErrorWrapsCause(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("outer: %w", contracts.Wrap(contracts.CodeConflict, "tasks.Ack", cause, "task is DONE"))
	if !errors.Is(err, cause) || contracts.ErrorCode(err) != contracts.CodeConflict {
		t.Fatalf("unwrap chain broken: %v", err)
	}
}

func TestDecodeJSON(t *testing.T) {
	type req struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	cases := map[string]string{
		"empty":    "",
		"syntax":   `{"name":`,
		"type":     `{"count":"three"}`,
		"trailing": `{"name":"a"} {"name":"b"}`,
		"notobj":   `[1,2]`,
	}
	for name, body := range cases {
		var r req
		err := contracts.DecodeJSON([]byte(body), &r)
		if contracts.ErrorCode(err) != contracts.CodeInvalid {
			t.Errorf("%s: want invalid, got %v", name, err)
		}
	}
	var r req
	if err := contracts.DecodeJSON([]byte(`{"name":"a","count":2,"extra":true}`), &r); err != nil || r.Count != 2 {
		t.Fatalf("valid body: %v %+v", err, r)
	}
	var typed req
	err := contracts.DecodeJSON([]byte(`{"count":"x"}`), &typed)
	var e *contracts.Error
	if !errors.As(err, &e) || e.Details["field"] != "count" {
		t.Fatalf("type error should name the field: %v", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","count":1}`))
	f.Add([]byte(`{"count":1e400}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var v struct {
			Name  string         `json:"name"`
			Count int            `json:"count"`
			Any   map[string]any `json:"any"`
		}
		if err := contracts.DecodeJSON(body, &v); err != nil && contracts.ErrorCode(err) != contracts.CodeInvalid {
			t.Fatalf("decode error must be invalid, got %v", err)
		}
	})
}

// TestDecodeJSONMessagesAreStable: syntax errors give the byte offset and
// type errors the JSON type, never Go's parser text or type names (issue
// 8, defect 9).
func TestDecodeJSONMessagesAreStable(t *testing.T) {
	var v struct {
		Tags []string         `json:"tags"`
		Obj  map[string]int   `json:"obj"`
		P    contracts.Status `json:"p"`
	}
	for body, want := range map[string]string{
		`{ba}`:                  "malformed JSON at byte 2",
		`{"tags":[1}`:           "malformed JSON at byte 11",
		`{"tags":"x"}`:          `field "tags" must be array, got string`,
		`{"obj":[]}`:            `field "obj" must be object, got array`,
		`{"p":{"a":1}}`:         `field "p" must be string, got object`,
		`{"tags":["a"]}{"x":1}`: "request body has data after the JSON value",
		`{"tags":["a"]`:         "malformed JSON: unexpected end of input",
	} {
		err := contracts.DecodeJSON([]byte(body), &v)
		var e *contracts.Error
		if !errors.As(err, &e) || e.Message != want {
			t.Errorf("%s: got %v, want message %q", body, err, want)
		}
		if resp := contracts.NewErrorResponse(err, ""); strings.Contains(resp.Error.Message, "invalid character") || strings.Contains(resp.Error.Message, "contracts.") {
			t.Errorf("%s: message shows Go's text: %q", body, resp.Error.Message)
		}
	}
}

package taskhttptest

import (
	"testing"

	"github.com/flowgate/flowgate/contracts/contractstest"
)

// normalizer is this API's: UUIDs → {uuid-N}, RFC 3339 times → {time},
// request_id → {request_id}, a non-empty next_cursor → {cursor}.
var normalizer = contractstest.Normalizer{
	Keys:  map[string]string{"request_id": "{request_id}", "next_cursor": "{cursor}"},
	Rules: []contractstest.Rule{{RE: contractstest.UUID, Name: "uuid", Numbered: true}, {RE: contractstest.Time, Name: "time"}},
}

// Normalize replaces the volatile values of a JSON body with fixed
// placeholders, so that a response compares equal run after run:
//
//   - every UUID inside any string becomes "{uuid-N}", numbered by first
//     appearance (keys sorted, arrays in order), so equal ids stay equal;
//   - every RFC 3339 timestamp inside any string becomes "{time}";
//   - request_id becomes "{request_id}", a non-empty next_cursor
//     "{cursor}".
func Normalize(t testing.TB, raw []byte) []byte {
	t.Helper()
	return normalizer.Normalize(t, raw)
}

// Golden compares the normalized body with
// contracts/testdata/http_<name>.golden (-update rewrites it).
func Golden(t testing.TB, name string, body []byte) {
	t.Helper()
	contractstest.Golden(t, "http_"+name, Normalize(t, body))
}

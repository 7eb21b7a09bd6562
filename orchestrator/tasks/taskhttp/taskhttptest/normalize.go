package taskhttptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"testing"

	"github.com/flowgate/flowgate/contracts/contractstest"
)

var (
	uuidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
)

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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("taskhttptest: normalize: body is not JSON: %v\n%s", err, raw)
	}
	n := normalizer{ids: map[string]string{}}
	out, err := json.Marshal(n.walk("", v))
	if err != nil {
		t.Fatalf("taskhttptest: normalize: %v", err)
	}
	return out
}

type normalizer struct {
	ids map[string]string
}

func (n *normalizer) walk(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = n.walk(k, x[k])
		}
		return x
	case []any:
		for i := range x {
			x[i] = n.walk("", x[i])
		}
		return x
	case string:
		switch {
		case key == "request_id":
			return "{request_id}"
		case key == "next_cursor" && x != "":
			return "{cursor}"
		}
		s := uuidRE.ReplaceAllStringFunc(x, func(id string) string {
			p, ok := n.ids[id]
			if !ok {
				p = fmt.Sprintf("{uuid-%d}", len(n.ids)+1)
				n.ids[id] = p
			}
			return p
		})
		return timeRE.ReplaceAllString(s, "{time}")
	}
	return v
}

// Golden compares the normalized body with
// contracts/testdata/http_<name>.golden (-update rewrites it).
func Golden(t testing.TB, name string, body []byte) {
	t.Helper()
	contractstest.Golden(t, "http_"+name, Normalize(t, body))
}

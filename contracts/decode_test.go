package contracts_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// fastBody has no interface anywhere: DecodeJSON takes json.Unmarshal for
// it. Its fields cover what the request bodies hold: strings, numbers,
// booleans, pointers, slices, maps, raw JSON, a type that decodes itself,
// an embedded struct and a recursive one.
type fastBody struct {
	contracts.AckRequest
	Name   contracts.NullString `json:"name"`
	Count  int                  `json:"count"`
	Ratio  float64              `json:"ratio"`
	Small  uint8                `json:"small"`
	OK     *bool                `json:"ok"`
	Tags   []string             `json:"tags"`
	Pairs  map[string]int       `json:"pairs"`
	Raw    json.RawMessage      `json:"raw"`
	Num    json.Number          `json:"num"`
	At     time.Time            `json:"at"`
	Nested *fastBody            `json:"nested"`
	Grid   [2][]int             `json:"grid"`
}

// TestDecodeJSONFastPathOnlyWithoutInterfaces: the types whose numbers
// UseNumber keeps exact go through the Decoder.
func TestDecodeJSONFastPathOnlyWithoutInterfaces(t *testing.T) {
	type withAny struct {
		Deep struct {
			List []map[string]any `json:"list"`
		} `json:"deep"`
	}
	type recursive struct {
		Next  *recursive `json:"next"`
		Value any        `json:"value"`
	}
	for _, c := range []struct {
		v    any
		want bool
	}{
		{&fastBody{}, false},
		{&contracts.AckRequest{}, false},
		{&contracts.FailRequest{}, false},
		{&withAny{}, true},
		{&recursive{}, true},
		{&map[string]any{}, true},
		{new(any), true},
		{nil, true},
	} {
		if got := contracts.HoldsInterface(c.v); got != c.want {
			t.Errorf("%T: holds an interface %v, want %v", c.v, got, c.want)
		}
	}
	var v withAny
	if err := contracts.DecodeJSON([]byte(`{"deep":{"list":[{"n":12345678901234567890}]}}`), &v); err != nil {
		t.Fatal(err)
	}
	if n, ok := v.Deep.List[0]["n"].(json.Number); !ok || n.String() != "12345678901234567890" {
		t.Fatalf("a number in an interface must stay exact, got %#v", v.Deep.List[0]["n"])
	}
}

// FuzzDecodeJSONFastPath: for a type with no interface in it, DecodeJSON
// (json.Unmarshal) answers exactly what the Decoder path answers — the
// same value, or an error with the same message.
func FuzzDecodeJSONFastPath(f *testing.F) {
	for _, s := range []string{
		`{"queue_id":"q1","encounter_id":"e1","experityActions":{"a":[1,2]},"worker_id":"w"}`,
		`{"name":null,"count":3,"ratio":1.5e3,"small":255,"ok":true,"tags":["a","b"],"pairs":{"x":1}}`,
		`{"raw":[1,{"z":null}],"num":12345678901234567890,"at":"2026-11-29T12:00:00Z","grid":[[1],[2,3]]}`,
		`{"nested":{"nested":{"count":1}},"queue_id":7}`,
		`{"small":256}`, `{"count":1.5}`, `{"tags":"x"}`, `{"at":"yesterday"}`, `{"name":5}`,
		`{"count":1} {"count":2}`, `{"count":1} x`, `{"count":1`, `[1]`, `"s"`, `null`, `{"a":"\ud800"}`,
		"{\"name\":\"\xff\"}", `{"Count":2,"COUNT":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(bytes.TrimSpace(body)) == 0 {
			return // DecodeJSON answers "empty" before either path
		}
		var fast, slow fastBody
		ferr := contracts.DecodeJSON(body, &fast)
		serr := contracts.DecodeNumbers(body, &slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%q: fast path %v, Decoder %v", body, ferr, serr)
		}
		if ferr != nil {
			if contracts.ErrorCode(ferr) != contracts.CodeInvalid || ferr.Error() != serr.Error() {
				t.Fatalf("%q: fast path %v, Decoder %v", body, ferr, serr)
			}
			return
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast path %+v, Decoder %+v", body, fast, slow)
		}
	})
}

func BenchmarkDecodeJSONAck(b *testing.B) {
	body := []byte(`{"queue_id":"0193a5c2-7d4e-7f00-8000-0000000000a1","encounter_id":"enc-1",` +
		`"experityActions":{"actions":[{"type":"note","text":"done"}]}}`)
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"DecodeJSON", contracts.DecodeJSON}, {"Decoder", contracts.DecodeNumbers}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r contracts.AckRequest
				if err := c.decode(body, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

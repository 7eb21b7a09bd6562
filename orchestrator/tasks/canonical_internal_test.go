package tasks

import (
	"bytes"
	"encoding/json"
	"testing"
)

var canonicalSeeds = []string{
	`{"actions":[{"type":"note","text":"done"}]}`,
	`{"b":1,"a":[1,2.50,-3e+10,true,false,null],"c":{"z":{},"y":[]}}`,
	`{"a":1,"a":{"x":2},"b":0,"a":"last"}`,
	`{"<tag>":"a&b","\u00e9t\u00e9":"caf\u00e9","k\"q":"line\nbreak\t\u0001"}`,
	`{"é":"ü","e":"\ud83d\ude00","bad":"\ud800","sep":"\u2028\u2029"}`,
	`["\/slash","\b\f","\u0000",{"":""}]`,
	`"plain"`, `12`, `-0.0e-0`, `true`, `[]`, `{}`,
	`{"b":{"d":1,"c":2},"a":[{"y":1,"x":2}],"A":3,"aa":4,"a ":5}`,
	"{\"raw\":\"\xff\xfe bytes\"}",
}

// canonical writes what Decode-then-Marshal writes, byte for byte, on
// every case a fingerprint can meet: duplicate keys (the last wins), keys
// that sort differently decoded than escaped, HTML characters, escapes,
// non-ASCII and invalid UTF-8, numbers as spelled.
func TestCanonicalMatchesDecodeMarshal(t *testing.T) {
	for _, s := range canonicalSeeds {
		checkCanonical(t, []byte(s))
	}
	got, err := canonical([]byte(`{"b":{"d":1,"c":2},"a":"x","a":"y"}`))
	if err != nil || string(got) != `{"a":"y","b":{"c":2,"d":1}}` {
		t.Fatalf("canonical = %s, %v", got, err)
	}
}

func checkCanonical(t *testing.T, raw []byte) {
	t.Helper()
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return // jsonValue refuses it before canonical
	}
	want, werr := canonicalDecoded(buf.Bytes())
	got, gerr := canonical(buf.Bytes())
	if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("canonical(%q)\n got  %q, %v\n want %q, %v", buf.Bytes(), got, gerr, want, werr)
	}
}

func FuzzCanonicalMatchesDecodeMarshal(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkCanonical(t, raw) })
}

// The ACK's experityActions: the walk against Decode-then-Marshal.
func BenchmarkCanonical(b *testing.B) {
	raw := []byte(`{"actions":[{"type":"note","text":"done"},{"type":"code","code":"99213","units":1}]}`)
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = canonical(raw)
		}
	})
	b.Run("decode-marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = canonicalDecoded(raw)
		}
	})
}

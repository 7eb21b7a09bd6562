// Package contractstest compares JSON values with the golden fixtures in
// contracts/testdata. Run `go test ./... -update` (or set UPDATE_GOLDEN=1) to
// rewrite the fixtures after an intended contract change; review the diff.
package contractstest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var update = flag.Bool("update", false, "rewrite contracts/testdata/*.golden")

// Dir is the absolute path of contracts/testdata.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// Golden marshals got (or takes it as-is when it is []byte JSON), normalises
// it to indented JSON with sorted keys and compares it with
// contracts/testdata/<name>.golden. Field names, nesting and value types must
// match exactly.
func Golden(t testing.TB, name string, got any) {
	t.Helper()
	actual := Canonical(t, got)
	path := filepath.Join(Dir(), name+".golden")
	if *update || os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, actual, 0o644); err != nil {
			t.Fatalf("golden: write %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: read %s: %v (run with -update to create it)", path, err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(actual)) {
		t.Errorf("golden %s mismatch\n--- want\n%s\n--- got\n%s", name, want, actual)
	}
}

// Canonical renders v as indented JSON with map keys sorted (encoding/json
// sorts map keys, so a round trip through any gives a stable form).
func Canonical(t testing.TB, v any) []byte {
	t.Helper()
	raw, ok := v.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatalf("golden: marshal: %v", err)
		}
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		t.Fatalf("golden: value is not JSON: %v\n%s", err, raw)
	}
	out, err := json.MarshalIndent(generic, "", "  ")
	if err != nil {
		t.Fatalf("golden: re-marshal: %v", err)
	}
	return append(out, '\n')
}

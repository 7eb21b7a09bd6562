package contractstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"testing"
)

// Patterns of volatile values in flowgate's answers.
var (
	UUID = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	Time = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
)

// Rule replaces the matches of RE inside any string: with "{Name-N}",
// numbered by first appearance (keys sorted, arrays in order) so equal
// values stay equal, when Numbered; else with "{Name}".
type Rule struct {
	RE       *regexp.Regexp
	Name     string
	Numbered bool
}

// Normalizer makes a JSON body compare equal run after run. Keys maps a
// field name to the placeholder its non-empty string value becomes; Rules
// then apply in order to every other string.
type Normalizer struct {
	Keys  map[string]string
	Rules []Rule
}

// Normalize decodes raw, replaces the volatile values and re-encodes it.
func (n Normalizer) Normalize(t testing.TB, raw []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("contractstest: normalize: body is not JSON: %v\n%s", err, raw)
	}
	w := walker{n: n, seen: make([]map[string]string, len(n.Rules))}
	for i := range w.seen {
		w.seen[i] = map[string]string{}
	}
	out, err := json.Marshal(w.walk("", v))
	if err != nil {
		t.Fatalf("contractstest: normalize: %v", err)
	}
	return out
}

type walker struct {
	n    Normalizer
	seen []map[string]string // per rule: value → placeholder
}

func (w walker) walk(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = w.walk(k, x[k])
		}
		return x
	case []any:
		for i := range x {
			x[i] = w.walk("", x[i])
		}
		return x
	case string:
		if p, ok := w.n.Keys[key]; ok && x != "" {
			return p
		}
		for i, r := range w.n.Rules {
			if !r.Numbered {
				x = r.RE.ReplaceAllString(x, "{"+r.Name+"}")
				continue
			}
			seen := w.seen[i]
			x = r.RE.ReplaceAllStringFunc(x, func(m string) string {
				p, ok := seen[m]
				if !ok {
					p = fmt.Sprintf("{%s-%d}", r.Name, len(seen)+1)
					seen[m] = p
				}
				return p
			})
		}
		return x
	}
	return v
}

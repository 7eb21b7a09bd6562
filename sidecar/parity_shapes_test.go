package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers of the contract-parity test (parity_test.go): the answer shapes
// the original Node-RED flow was seen to give (contracts/testdata/
// nodered-shapes.json; in prose docs/reference/nodered-shapes.md)
// and the key-path comparison.

// shapeVariant is one answer shape of the original: status, the values
// that tell it apart, and every key path with its JSON type.
type shapeVariant struct {
	Status         int               `json:"status"`
	JSON           bool              `json:"json"`
	Discriminators map[string]any    `json:"discriminators"`
	Paths          map[string]string `json:"paths"`
}

func loadShapes(t *testing.T) map[string][]shapeVariant {
	t.Helper()
	b, err := os.ReadFile("../contracts/testdata/nodered-shapes.json")
	require.NoError(t, err)
	var m map[string][]shapeVariant
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// jsonType is the shapes file's name of v's JSON type.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// keyPaths collects every key path of v with the JSON types seen there
// (array elements under "a[]", all elements merged).
func keyPaths(v any, prefix string, out map[string]map[string]bool) {
	add := func(p, typ string) {
		if out[p] == nil {
			out[p] = map[string]bool{}
		}
		out[p][typ] = true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			add(p, jsonType(child))
			keyPaths(child, p, out)
		}
	case []any:
		for _, child := range x {
			add(prefix+"[]", jsonType(child))
			keyPaths(child, prefix+"[]", out)
		}
	}
}

// shapeProblems lists each key path of the original that flowgate's body
// lacks or answers with another JSON type. A path the original answered
// null has no type to compare: it must be present, with any value. A path
// under an array flowgate answered empty cannot be compared and is
// reported, so a case that should list elements does not pass silently.
func shapeProblems(orig shapeVariant, body []byte) []string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}
	}
	got := map[string]map[string]bool{}
	keyPaths(v, "", got)
	var problems []string
	for p, want := range orig.Paths {
		types, ok := got[p]
		switch {
		case !ok:
			problems = append(problems, p+": missing (original: "+want+")")
		case want == "null":
		case len(types) != 1 || !types[want]:
			problems = append(problems, fmt.Sprintf("%s: %s, original %s", p, setString(types), want))
		}
	}
	sort.Strings(problems)
	return problems
}

func setString(m map[string]bool) string {
	s := make([]string, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return strings.Join(s, "|")
}

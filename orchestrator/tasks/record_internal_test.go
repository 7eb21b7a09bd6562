package tasks

import (
	"regexp"
	"strings"
	"testing"
)

// The prelude's FIELDS and taskFields name the same fields in the same
// order: a reply is read by position.
func TestScriptFieldsMatch(t *testing.T) {
	for name, want := range map[string][]string{"FIELDS": taskFields, "BRIEF": briefFields, "CLAIMOUT": claimFields} {
		m := regexp.MustCompile(`(?s)local ` + name + ` = \{(.*?)\}`).FindStringSubmatch(lua.prelude)
		if m == nil {
			t.Fatalf("no %s in the prelude", name)
		}
		var got []string
		for _, f := range strings.Split(m[1], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(f), "'"))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("prelude %s %v\n      Go %v", name, got, want)
		}
	}
	if len(briefFields) == len(taskFields) {
		t.Fatal("recordMap tells the two layouts apart by their length")
	}
}

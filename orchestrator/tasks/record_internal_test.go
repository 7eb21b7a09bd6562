package tasks

import (
	"regexp"
	"strings"
	"testing"
)

// The prelude's FIELDS and taskFields name the same fields in the same
// order: a reply is read by position.
func TestScriptFieldsMatch(t *testing.T) {
	m := regexp.MustCompile(`(?s)local FIELDS = \{(.*?)\}`).FindStringSubmatch(prelude)
	if m == nil {
		t.Fatal("no FIELDS in the prelude")
	}
	var lua []string
	for _, f := range strings.Split(m[1], ",") {
		lua = append(lua, strings.Trim(strings.TrimSpace(f), "'"))
	}
	if strings.Join(lua, ",") != strings.Join(taskFields, ",") {
		t.Fatalf("prelude FIELDS %v\n      taskFields %v", lua, taskFields)
	}
}

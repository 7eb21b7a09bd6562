package tasks

import (
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/autopipe"
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

// The scripts go through the AutoPipeliner on a standalone client unless
// PlainRedis, and never on a Cluster client (its own redirects; see
// Config.PlainRedis).
func TestScriptsClientByMode(t *testing.T) {
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = plain.Close(); _ = cluster.Close() })
	for _, c := range []struct {
		name      string
		rdb       redis.UniversalClient
		plain     bool
		pipelined bool
	}{
		{"standalone", plain, false, true},
		{"standalone plain", plain, true, false},
		{"cluster", cluster, false, false},
	} {
		l, err := New(c.rdb, Config{PlainRedis: c.plain})
		if err != nil {
			t.Fatal(err)
		}
		if _, ap := l.sc.hot.(*autopipe.Client); ap != c.pipelined {
			t.Errorf("%s: scripts through the AutoPipeliner = %v, want %v", c.name, ap, c.pipelined)
		}
	}
}

package test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

const keyspaceRoot = ".."

type documented struct{ where, template, key string }

// declared are the keys the packages declare (their RedisKeys), channels
// and libraries left out.
func declared(t *testing.T) []documented {
	t.Helper()
	var out []documented
	for _, k := range allRows(t) {
		if k.Type.IsKey() {
			out = append(out, documented{where: k.Owner + ".RedisKeys", template: k.Pattern, key: instantiate(k.Pattern)})
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d keys declared", len(out))
	}
	return out
}

// keyspaceMD reads the first column of docs/keyspace.md's tables.
func keyspaceMD(t *testing.T) []documented {
	t.Helper()
	path := filepath.Join(keyspaceRoot, "docs", "keyspace.md")
	cell := regexp.MustCompile("^\\| `([^`]+)`")
	var out []documented
	for i, l := range readLines(t, path) {
		m := cell.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[1], "channel ") || strings.HasPrefix(m[1], "library ") {
			continue
		}
		out = append(out, documented{where: path + ":" + strconv.Itoa(i+1), template: m[1], key: instantiate(m[1])})
	}
	if len(out) < 50 {
		t.Fatalf("%s: only %d keys found", path, len(out))
	}
	return out
}

var placeholder = regexp.MustCompile(`<[^>]*>`)

// instantiate makes a key of a documented template: the buffer's tags are
// the one shard's, a pre-grouped key is a tier's, other placeholders a
// value.
func instantiate(tmpl string) string {
	k := strings.NewReplacer("<tag_0>", "{buffer}", "<tag0>", "{buffer}", "<tag>", "{buffer}",
		"<entry or tier key>", "flowgate:{slots}:t:LOC:1", "…", "x1").Replace(tmpl)
	return placeholder.ReplaceAllString(k, "x1")
}

// variants are other spellings of key flowgate writes or an attacker may
// send, each of which must fall in the key's family: the shard and
// Cluster tags, case, white space, a zero-width space.
func variants(key string) []string {
	out := []string{key, strings.ToUpper(key), " " + key + "\t\n", strings.Replace(key, ":", ":\u200b", 1)}
	if strings.Contains(key, "{tasks}") {
		out = append(out, strings.Replace(key, "{tasks}", "{tasks:2.5}", 1))
	}
	if strings.Contains(key, "{buffer}") {
		out = append(out, strings.Replace(key, "{buffer}", "{buffer:1.3}", 1))
	}
	if !strings.HasPrefix(key, "flowgate:") && !strings.HasPrefix(key, "asynq:") && !strings.HasPrefix(key, "rate:") &&
		!strings.HasPrefix(key, "{") {
		out = append(out, "{holds}:"+key, "{holds:3.7}:"+key) // the hold engine's keys on Cluster / with shards
	}
	return out
}

// Every key a package declares or docs/keyspace.md documents belongs to a
// named family that guards it (state) or declares it a cache, under every
// spelling: a new family fails here until keyspace.go decides about it.
func TestEveryDocumentedKeyIsInANamedFamily(t *testing.T) {
	hit := map[string]bool{}
	check := func(d documented, allowed ...keyspace.Class) {
		t.Helper()
		f := keyspace.Classify(d.key)
		if f.Name == "" || f.Name == "flowgate" {
			t.Errorf("%s: %s (%s) is in no named family: add it to keyspace.go as state or cache", d.where, d.template, d.key)
			return
		}
		ok := false
		for _, c := range allowed {
			ok = ok || f.Class == c
		}
		if !ok {
			t.Errorf("%s: %s is %s (%s), want one of %v", d.where, d.template, f.Class, f.Name, allowed)
		}
		for _, v := range variants(d.key) {
			if g := keyspace.Classify(v); g.Name != f.Name {
				t.Errorf("%s: %q is %q, but %q is %q", d.where, d.key, f.Name, v, g.Name)
			}
		}
		hit[f.Name] = true
	}
	for _, d := range declared(t) {
		if strings.HasPrefix(d.template, "flowgate:ops:") {
			check(d, keyspace.Operator)
		} else {
			check(d, keyspace.State, keyspace.Cache)
		}
	}
	for _, d := range keyspaceMD(t) {
		check(d, keyspace.State, keyspace.Cache, keyspace.Operator)
	}
	for _, f := range keyspace.Families() {
		if !hit[f.Name] && f.Name != "flowgate" {
			t.Errorf("family %s matches no documented key: document its keys in docs/keyspace.md or drop it", f.Name)
		}
	}
}

// Each family's own examples are its own, and the classes carry the ops
// rules.
func TestFamiliesExamplesAndRules(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range keyspace.Families() {
		if f.Name == "" || seen[f.Name] || f.Owner == "" || f.What == "" || len(f.Docs) == 0 {
			t.Errorf("family %+v: needs a unique name, an owner, a line and examples", f)
		}
		seen[f.Name] = true
		for _, d := range f.Docs {
			for _, v := range variants(instantiate(d)) {
				if g := keyspace.Classify(v); g.Name != f.Name {
					t.Errorf("%s's example %q: %q is %q", f.Name, d, v, g.Name)
				}
			}
		}
		switch f.Class {
		case keyspace.State:
			if f.Writable() || f.Deletable() {
				t.Errorf("%s: state must be neither writable nor deletable", f.Name)
			}
		case keyspace.Cache:
			if f.Writable() || !f.Deletable() {
				t.Errorf("%s: a cache is deletable, not writable", f.Name)
			}
		default:
			if !f.Writable() || !f.Deletable() || f.Secret {
				t.Errorf("%s: %s keys are the operators'", f.Name, f.Class)
			}
		}
	}
	for key, want := range map[string]string{
		keyspace.ShardMarker:                    "shard-marker",
		"Flowgate:Redis-Shards":                 "shard-marker",
		"flowgate:redis-shards\x00":             "shard-marker",
		"flowgate:\u200bredis-shards":           "shard-marker",
		"flowgate:redis-shards:x":               "flowgate",
		"flowgate::redis-shards":                "flowgate",
		"flowgate:anything":                     "flowgate",
		"flowgate:ops:scratch":                  "operator",
		"other:key":                             "",
		"SlotCache-loc-Tier1":                   "", // the Node-RED flow's own cache: not flowgate's
		"chord:ortho-prd:pending-operations":    "",
		"{x}:holds:records":                     "holds",
		"client:c1:holds":                       "holds",
		"client:c1:other":                       "",
		"{availability}:timeslots-index:t1":     "availability",
		"{availability}:timeslots:t1:pooled":    "availability-timeslots",
		"flowgate:{slots}:t:LOC:1:pg":           "slot-lists",
		"flowgate:{slots}:entries:ver":          "slot-registry",
		"flowgate:{slots}:other":                "flowgate",
		"asynq:{critical}:t:1":                  "asynq",
		"ASYNQ:queues":                          "asynq",
		"rate:flowgate:cloud9:rl:{GetOnlineRe}": "cloud9-limiter",
	} {
		if got := keyspace.Classify(key).Name; got != want {
			t.Errorf("Classify(%q) = %q, want %q", key, got, want)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

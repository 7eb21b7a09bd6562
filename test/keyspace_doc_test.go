package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/orchestrator/booking/slotcache"
	"github.com/flowgate/flowgate/orchestrator/buffer"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/dlq"
	"github.com/flowgate/flowgate/orchestrator/durable"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shadow"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/scheduler"
	"github.com/flowgate/flowgate/webhooks/signature"
)

const updateHint = "FLOWGATE_UPDATE_DOCS=1 go test -run TestKeyspaceDocIsCurrent ./test/"

// docSection is one generated table of docs/keyspace.md.
type docSection struct {
	name string
	rows []keyspace.Key
}

// sections are docs/keyspace.md's tables, each the rows of the packages
// that write its keys, in the doc's order.
func sections(t *testing.T) []docSection {
	t.Helper()
	own := keyspace.RedisKeys()
	byOwner := func(owner string) []keyspace.Key {
		var out []keyspace.Key
		for _, k := range own {
			if k.Owner == owner {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			t.Fatalf("keyspace.RedisKeys has no key of %s", owner)
		}
		return out
	}
	split := func(rows []keyspace.Key) (keys, channels []keyspace.Key) {
		for _, k := range rows {
			if k.Type == keyspace.Channel {
				channels = append(channels, k)
			} else {
				keys = append(keys, k)
			}
		}
		return keys, channels
	}
	marks, bookingChannels := split(booking.RedisKeys())
	return []docSection{
		{"tasks", join(tasks.RedisKeys(), signature.RedisKeys())},
		{"booking", join(session.RedisKeys(), marks, reservation.RedisKeys(), slots.RedisKeys(), slotcache.RedisKeys(),
			phoneindex.RedisKeys(), cloud9.RedisKeys(), bookingChannels)},
		{"buffer", buffer.RedisKeys()},
		{"holds", join(holds.RedisKeys(), holdstream.RedisKeys(), availability.RedisKeys())},
		{"runtime", join(dlq.RedisKeys(), byOwner("sidecar"), durable.RedisKeys(), byOwner("scheduler"), byOwner("Asynq"))},
		{"shadow", shadow.RedisKeys()},
		{"operators", byOwner("operators, through `redisSet`")},
	}
}

func join(tables ...[]keyspace.Key) []keyspace.Key {
	var out []keyspace.Key
	for _, t := range tables {
		out = append(out, t...)
	}
	return out
}

// allRows are every row of every section.
func allRows(t *testing.T) []keyspace.Key {
	t.Helper()
	var out []keyspace.Key
	for _, s := range sections(t) {
		out = append(out, s.rows...)
	}
	return out
}

// renderTable is one section's Markdown table.
func renderTable(rows []keyspace.Key) string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| key | type | owner | TTL | what |\n|---|---|---|---|---|\n")
	for _, k := range rows {
		key := "`" + k.Pattern + "`"
		switch k.Type {
		case keyspace.Channel:
			key = "channel " + key
		case keyspace.Library:
			key = "library " + key + " (not a key)"
		}
		owner := k.Owner
		if owner == strings.ToLower(owner) && !strings.Contains(owner, " ") {
			owner = "`" + owner + "`"
		}
		ttl := k.TTL
		if ttl == "" {
			ttl = "—"
		}
		what := k.What
		if len(k.Fields) > 0 {
			what += ": " + strings.Join(k.Fields, ", ")
		}
		b.WriteString("| " + strings.Join([]string{cell(key), string(k.Type), cell(owner), cell(ttl), cell(what)}, " | ") + " |\n")
	}
	return b.String()
}

var (
	sectionStart = regexp.MustCompile(`^<!-- generated: keyspace (\S+) .*-->$`)
	keyRow       = regexp.MustCompile("^\\| (channel |library )?`")
)

const sectionEnd = "<!-- end generated -->"

// regenerate is doc with every generated table replaced by its rows.
func regenerate(t *testing.T, doc string) string {
	t.Helper()
	want := map[string]string{}
	for _, s := range sections(t) {
		want[s.name] = renderTable(s.rows)
	}
	var out []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l)
		m := sectionStart.FindStringSubmatch(l)
		if m == nil {
			if keyRow.MatchString(l) {
				t.Errorf("docs/keyspace.md:%d: a key row outside the generated tables: declare it in its package's RedisKeys", i+1)
			}
			continue
		}
		table, ok := want[m[1]]
		if !ok {
			t.Errorf("docs/keyspace.md:%d: no section %q in this test", i+1, m[1])
		}
		delete(want, m[1])
		j := i + 1
		for j < len(lines) && lines[j] != sectionEnd {
			j++
		}
		if j == len(lines) {
			t.Fatalf("docs/keyspace.md:%d: %q never ends (%s)", i+1, m[1], sectionEnd)
		}
		out = append(out, strings.TrimSuffix(table, "\n"), sectionEnd)
		i = j
	}
	for name := range want {
		t.Errorf("docs/keyspace.md has no generated table %q: add its markers", name)
	}
	return strings.Join(out, "\n")
}

// docs/keyspace.md's key tables are the packages' RedisKeys, row for row,
// both ways: a key missing from the doc, a key the code no longer writes,
// a misstated type, TTL or field fails here.
func TestKeyspaceDocIsCurrent(t *testing.T) {
	path := filepath.Join(keyspaceRoot, "docs", "keyspace.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := regenerate(t, string(raw))
	if os.Getenv("FLOWGATE_UPDATE_DOCS") == "1" && want != string(raw) {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		raw = []byte(want)
	}
	if want != string(raw) {
		t.Errorf("docs/keyspace.md is stale: %s\n%s", updateHint, firstDiff(string(raw), want))
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  doc:  " + a + "\n  code: " + b
		}
	}
	return ""
}

// Every package with a keys.go declares its keys (RedisKeys, owner = its
// directory), every row is complete, no key is declared twice, and the
// rows built from literals agree with the code that builds the keys.
func TestRedisKeysAreComplete(t *testing.T) {
	rows := allRows(t)
	owners := map[string]bool{}
	seen := map[string]bool{}
	for _, k := range rows {
		owners[k.Owner] = true
		if k.Pattern == "" || k.Type == "" || k.Owner == "" || k.What == "" {
			t.Errorf("%+v: a row needs a pattern, a type, an owner and a line", k)
		}
		if seen[k.Pattern] {
			t.Errorf("%s is declared twice", k.Pattern)
		}
		seen[k.Pattern] = true
		if k.Owner == "scheduler" && !strings.HasPrefix(k.Pattern, scheduler.DefaultKeyPrefix) {
			t.Errorf("%s: the scheduler's keys start with %s", k.Pattern, scheduler.DefaultKeyPrefix)
		}
	}
	err := filepath.WalkDir(keyspaceRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "keys.go" && !d.IsDir() {
			dir, _ := filepath.Rel(keyspaceRoot, filepath.Dir(path))
			if dir = filepath.ToSlash(dir); !owners[dir] {
				t.Errorf("%s: its package declares no key of docs/keyspace.md (RedisKeys with Owner %q)", path, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The scheduler may import only contracts (docs/architecture.md), so its
// lock prefix spells flowgate's default key prefix itself; this holds the
// two together, as the ops routes' default prefix.
func TestKeyPrefixDefaultsAgree(t *testing.T) {
	if scheduler.DefaultKeyPrefix != keyspace.DefaultKeyPrefix+":cron:" {
		t.Fatalf("scheduler.DefaultKeyPrefix %q is not keyspace.DefaultKeyPrefix (%q) + \":cron:\"", scheduler.DefaultKeyPrefix, keyspace.DefaultKeyPrefix)
	}
}

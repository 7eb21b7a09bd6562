package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/test/noderedtest"
)

// The import rules of docs/architecture.md (test helpers under test/ are
// every package's to import), held here so that a forbidden import fails
// the build's tests instead of a review, and the doc's import graph,
// generated here from the same `go list -json ./...`, so that it draws
// every import that exists and none that does not.
const module = "github.com/flowgate/flowgate"

type goPackage struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	ForTest      string
}

// ours lists the module's packages (tests' variants left out) by path
// relative to the module root.
func ours(t *testing.T) map[string]goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = noderedtest.RepoRoot()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[rel(p.ImportPath)] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// under reports whether the module-relative path p is dir or inside it.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// internalDeps are p's module packages it depends on, transitively.
func internalDeps(p goPackage) []string {
	var out []string
	for _, d := range p.Deps {
		if strings.HasPrefix(d, module+"/") {
			out = append(out, rel(d))
		}
	}
	return out
}

// internal are the module packages among imports, module-relative.
func internal(imports []string) []string {
	var out []string
	for _, imp := range imports {
		if strings.HasPrefix(imp, module+"/") {
			out = append(out, rel(imp))
		}
	}
	return out
}

// allImports are p's direct imports, its tests' included.
func allImports(p goPackage) []string {
	return slices.Concat(p.Imports, p.TestImports, p.XTestImports)
}

// The parts of docs/architecture.md. orchestrator/ is only a folder: each
// of its children is a domain or a shared leaf.
var (
	// domains are the product's domains under orchestrator/.
	domains = []string{
		"orchestrator/booking", "orchestrator/buffer", "orchestrator/holds",
		"orchestrator/ops", "orchestrator/shadow", "orchestrator/tasks",
	}
	// faces are the top-level product folders beside the composition root.
	faces = []string{"webhooks", "scheduler"}
	// leaves are the shared leaves: several parts use them, they use no
	// part.
	leaves = []string{
		"orchestrator/asynqrt", "orchestrator/autopipe", "orchestrator/cloud9",
		"orchestrator/dlq", "orchestrator/durable", "orchestrator/hmacsig",
		"orchestrator/keyspace", "orchestrator/luafiles", "orchestrator/shard", "orchestrator/slots",
		"orchestrator/timeutil", "orchestrator/valutil", "orchestrator/web",
	}
	// notDrawn are the test helpers and the flows' test package.
	notDrawn = []string{"test", "flows"}
)

// partOf is the part the module-relative package path p belongs to: a
// domain, a face, a shared leaf, "sidecar" or "contracts"; "" for what the
// graph does not draw; "?" for a package the doc does not place.
func partOf(p string) string {
	for _, d := range slices.Concat(domains, faces, leaves, []string{"sidecar", "contracts"}) {
		if under(p, d) {
			return d
		}
	}
	if under(p, notDrawn...) {
		return ""
	}
	return "?"
}

// arrow is an import between two parts (domains and faces): code when a
// package's code imports the other part, otherwise only its tests do.
type arrow struct {
	from, to string
	code     bool
}

// allowedArrows are the only imports between domains and faces
// (docs/architecture.md); they form no cycle. An arrow that appears must
// be decided here and in the doc; one that disappears is removed.
var allowedArrows = []arrow{
	{"orchestrator/booking", "orchestrator/holds", true}, // booking/reservation: the IVA's face of the hold engine
	{"orchestrator/booking", "scheduler", false},         // slotcache's test runs its refresher under two schedulers
	{"orchestrator/ops", "orchestrator/booking", true},   // cache-health and cache/*: booking/slotcache
	{"orchestrator/shadow", "orchestrator/booking", true},
	{"orchestrator/tasks", "scheduler", true}, // taskjobs: the sweeps are cron jobs
	{"webhooks", "orchestrator/tasks", true},  // the queue API and ACK/FAIL over the ledger
}

// partEdges are the imports between parts (what partOf names), by
// (from, to), true when code imports and false when only tests do.
func partEdges(pkgs map[string]goPackage) map[[2]string]bool {
	edges := map[[2]string]bool{}
	for path, p := range pkgs {
		from := partOf(path)
		if from == "" || from == "?" {
			continue
		}
		add := func(imports []string, code bool) {
			for _, to := range internal(imports) {
				if to := partOf(to); to != "" && to != "?" && to != from {
					edges[[2]string{from, to}] = edges[[2]string{from, to}] || code
				}
			}
		}
		add(p.Imports, true)
		add(slices.Concat(p.TestImports, p.XTestImports), false)
	}
	return edges
}

func TestArchitectureImportsRunOneWay(t *testing.T) {
	pkgs := ours(t)
	// code: the package's code, transitively, and its tests' direct imports.
	check := func(t *testing.T, name string, codeOnly bool, forbidden func(from, to string) bool) {
		t.Run(name, func(t *testing.T) {
			for from, p := range pkgs {
				for _, to := range internalDeps(p) {
					if forbidden(from, to) {
						t.Errorf("%s depends on %s", from, to)
					}
				}
				if codeOnly {
					continue
				}
				for _, to := range internal(allImports(p)) {
					if forbidden(from, to) {
						t.Errorf("%s (or its tests) imports %s", from, to)
					}
				}
			}
		})
	}
	check(t, "the product's packages never import the composition root", false, func(from, to string) bool {
		return under(from, "orchestrator", "scheduler", "contracts", "webhooks") && under(to, "sidecar")
	})
	check(t, "nothing under orchestrator/ imports webhooks/", false, func(from, to string) bool {
		return under(from, "orchestrator") && under(to, "webhooks")
	})
	check(t, "holds never imports booking (booking may use holds)", false, func(from, to string) bool {
		return under(from, "orchestrator/holds") && under(to, "orchestrator/booking")
	})
	check(t, "a shared leaf's code imports no domain, face or composition root", true, func(from, to string) bool {
		return under(from, leaves...) && !under(to, slices.Concat(leaves, []string{"contracts"})...)
	})
	check(t, "the shared slot and wall-clock leaf imports neither domain", false, func(from, to string) bool {
		return under(from, "orchestrator/slots") && under(to, "orchestrator/booking", "orchestrator/holds")
	})
	check(t, "the HTTP shell is a leaf every adapter may import", false, func(from, to string) bool {
		return under(from, "orchestrator/web") && !under(to, "orchestrator/web", "contracts", "test")
	})
	check(t, "the scheduler imports only contracts", false, func(from, to string) bool {
		return under(from, "scheduler") && !under(to, "scheduler", "contracts", "test")
	})
}

// TestArchitectureOrchestratorIsOnlyAFolder: no package is orchestrator/
// itself, and every package is placed: under a domain, a face or a shared
// leaf of docs/architecture.md (or sidecar, contracts, the test helpers).
func TestArchitectureOrchestratorIsOnlyAFolder(t *testing.T) {
	for path := range ours(t) {
		if path == "orchestrator" {
			t.Errorf("orchestrator/ is a package: move its files into a domain or a shared leaf")
		}
		if partOf(path) == "?" {
			t.Errorf("%s is neither under a domain, a face nor a shared leaf: place it in test/architecture_test.go and docs/architecture.md", path)
		}
	}
}

// TestArchitectureDomainsImportEachOtherOnlyAlongTheArrows holds the
// arrows between the domains and faces both ways: every import between two
// of them is an allowed arrow, and every allowed arrow exists.
func TestArchitectureDomainsImportEachOtherOnlyAlongTheArrows(t *testing.T) {
	parts := slices.Concat(domains, faces)
	got := map[arrow]bool{}
	for e, code := range partEdges(ours(t)) {
		if slices.Contains(parts, e[0]) && slices.Contains(parts, e[1]) {
			got[arrow{e[0], e[1], code}] = true
		}
	}
	for a := range got {
		if !slices.Contains(allowedArrows, a) {
			t.Errorf("%s → %s (code %v) is no arrow of docs/architecture.md: share a leaf instead, or decide the arrow there and in allowedArrows", a.from, a.to, a.code)
		}
	}
	for _, a := range allowedArrows {
		if !got[a] {
			t.Errorf("the arrow %s → %s (code %v) no longer exists: remove it from allowedArrows and docs/architecture.md", a.from, a.to, a.code)
		}
		if slices.ContainsFunc(allowedArrows, func(b arrow) bool { return b.from == a.to && b.to == a.from }) {
			t.Errorf("%s and %s import each other", a.from, a.to)
		}
	}
}

func TestArchitectureContractsImportOnlyTheStandardLibrary(t *testing.T) {
	pkgs := ours(t)
	for _, path := range []string{"contracts", "orchestrator/hmacsig", "orchestrator/luafiles"} {
		p := pkgs[path]
		for _, imp := range p.Imports {
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s", path, imp)
			}
		}
		if len(p.Imports) == 0 {
			t.Fatalf("%s has no imports: go list did not describe it", path)
		}
	}
}

// TestArchitectureHTTPAdaptersLiveWithTheirDomain: only these places serve
// HTTP (import Fiber), so a domain's routes are found in one place — the
// VM task queue's (the queue API and the ACK/FAIL webhooks) under
// webhooks/, each other domain's in its *http package.
func TestArchitectureHTTPAdaptersLiveWithTheirDomain(t *testing.T) {
	allowed := []string{
		"sidecar",          // the composition root: mounts everything
		"orchestrator/web", // the shared shell and SSE writer
		"orchestrator/booking/bookinghttp",
		"orchestrator/buffer/bufferhttp",
		"orchestrator/holds/holdshttp",
		"orchestrator/holds/availability/availhttp",
		"orchestrator/holds/holdstream",  // the holds' SSE stream and board
		"orchestrator/ops",               // /ops: operator reads and writes of keys
		"orchestrator/shadow/shadowhttp", // the shadow mirror, report and /switch-over
		"webhooks",                       // the VM task queue: /queue, /ack, /fail
		"test", "flows",
	}
	found := 0
	for path, p := range ours(t) {
		if !slices.Contains(p.Imports, "github.com/gofiber/fiber/v2") { // a test may run a fake server
			continue
		}
		found++
		if !under(path, allowed...) {
			t.Errorf("%s serves HTTP (imports Fiber) outside the adapters' places %v", path, allowed)
		}
	}
	if found == 0 {
		t.Fatal("no package imports Fiber: go list did not describe them")
	}
}

// The generated part of docs/architecture.md lies between these lines.
const (
	graphStart = "<!-- imports: start (generated from `go list` by test/architecture_test.go: FLOWGATE_UPDATE_DOCS=1 go test -run TestArchitectureDiagramIsCurrent ./test/) -->\n"
	graphEnd   = "<!-- imports: end -->\n"
)

// node is a part's name in the graph: the shared leaves are one node.
func node(part string) string {
	if slices.Contains(leaves, part) {
		return "leaves"
	}
	return part
}

// mermaidID is a node's id in the Mermaid source.
func mermaidID(n string) string {
	return strings.NewReplacer("orchestrator/", "", "/", "_").Replace(n)
}

// importGraph renders the imports between parts: a Mermaid flowchart of
// the domains, faces, the composition root, contracts and the shared
// leaves as one node (solid: the code imports; dotted: only tests do),
// then each shared leaf's imports and importers (by part).
func importGraph(pkgs map[string]goPackage) string {
	edges := partEdges(pkgs)
	nodes := map[[2]string]bool{} // (from, to) between nodes, true when code
	for e, code := range edges {
		from, to := node(e[0]), node(e[1])
		if from != to {
			nodes[[2]string{from, to}] = nodes[[2]string{from, to}] || code
		}
	}
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TD\n")
	for _, n := range slices.Concat([]string{"sidecar"}, faces, domains, []string{"leaves", "contracts"}) {
		label := n + "/"
		if n == "leaves" {
			label = "shared leaves (below)"
		} else if hasSubpackages(pkgs, n) {
			label += "…"
		}
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", mermaidID(n), label)
	}
	for _, e := range sortedEdges(nodes) {
		link := "-.->"
		if nodes[e] {
			link = "-->"
		}
		fmt.Fprintf(&b, "  %s %s %s\n", mermaidID(e[0]), link, mermaidID(e[1]))
	}
	b.WriteString("```\n\n| shared leaf | imports (tests only in brackets) | imported by |\n|---|---|---|\n")
	for _, l := range leaves {
		var uses, usesInTests, by, byTests []string
		for e, code := range edges {
			switch {
			case e[0] == l && code:
				uses = append(uses, e[1])
			case e[0] == l:
				usesInTests = append(usesInTests, e[1])
			case e[1] == l && code:
				by = append(by, e[0])
			case e[1] == l:
				byTests = append(byTests, e[0])
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", l, pathList(uses, usesInTests), pathList(by, byTests))
	}
	return b.String()
}

// pathList is "`a`, `b` [`c`]": code's paths, then tests' in brackets.
func pathList(code, tests []string) string {
	quote := func(ps []string) string {
		sort.Strings(ps)
		for i, p := range ps {
			ps[i] = "`" + p + "`"
		}
		return strings.Join(ps, ", ")
	}
	s := quote(code)
	if len(tests) > 0 {
		s = strings.TrimSpace(s + " [" + quote(tests) + "]")
	}
	if s == "" {
		return "—"
	}
	return s
}

// hasSubpackages reports whether a package lies below the folder dir.
func hasSubpackages(pkgs map[string]goPackage, dir string) bool {
	for path := range pkgs {
		if strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

func sortedEdges(m map[[2]string]bool) [][2]string {
	out := make([][2]string, 0, len(m))
	for e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	return out
}

// TestArchitectureDiagramIsCurrent: docs/architecture.md's import graph is
// the one go list describes (FLOWGATE_UPDATE_DOCS=1 rewrites it).
func TestArchitectureDiagramIsCurrent(t *testing.T) {
	path := filepath.Join(noderedtest.RepoRoot(), "docs", "architecture.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok := strings.Cut(doc, graphStart)
	_, after, ok2 := strings.Cut(rest, graphEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/architecture.md lacks the generated block (%q … %q)", graphStart, graphEnd)
	}
	want := before + graphStart + importGraph(ours(t)) + graphEnd + after
	if os.Getenv("FLOWGATE_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Errorf("docs/architecture.md's import graph is stale: FLOWGATE_UPDATE_DOCS=1 go test -run TestArchitectureDiagramIsCurrent ./test/\nwant:\n%s", importGraph(ours(t)))
	}
}

package test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/test/noderedtest"
)

// The import rules of docs/architecture.md (test helpers under test/ are
// every package's to import), held here so that a forbidden
// import fails the build's tests instead of a review. The package graph
// comes from `go list -deps -test -json ./...`.

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

// allImports are p's direct imports, its tests' included.
func allImports(p goPackage) []string {
	return slices.Concat(p.Imports, p.TestImports, p.XTestImports)
}

func TestArchitectureImportsRunOneWay(t *testing.T) {
	pkgs := ours(t)
	check := func(t *testing.T, name string, forbidden func(from, to string) bool) {
		t.Run(name, func(t *testing.T) {
			for from, p := range pkgs {
				for _, to := range internalDeps(p) {
					if forbidden(from, to) {
						t.Errorf("%s depends on %s", from, to)
					}
				}
				for _, imp := range allImports(p) {
					if to := rel(imp); strings.HasPrefix(imp, module+"/") && forbidden(from, to) {
						t.Errorf("%s (or its tests) imports %s", from, to)
					}
				}
			}
		})
	}
	check(t, "the product's packages never import the composition root", func(from, to string) bool {
		return under(from, "orchestrator", "scheduler", "contracts", "webhooks") && under(to, "sidecar")
	})
	check(t, "holds never imports booking (booking may use holds)", func(from, to string) bool {
		return under(from, "orchestrator/holds") && under(to, "orchestrator/booking")
	})
	check(t, "the shared slot and wall-clock leaf imports neither domain", func(from, to string) bool {
		return under(from, "orchestrator/slots") && under(to, "orchestrator/booking", "orchestrator/holds")
	})
	check(t, "the HTTP shell is a leaf every adapter may import", func(from, to string) bool {
		return under(from, "orchestrator/web") && !under(to, "orchestrator/web", "contracts", "test")
	})
	check(t, "the scheduler imports only contracts", func(from, to string) bool {
		return under(from, "scheduler") && !under(to, "contracts", "test")
	})
}

func TestArchitectureContractsImportOnlyTheStandardLibrary(t *testing.T) {
	p := ours(t)["contracts"]
	for _, imp := range p.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("contracts imports %s", imp)
		}
	}
	if len(p.Imports) == 0 {
		t.Fatal("contracts has no imports: go list did not describe it")
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

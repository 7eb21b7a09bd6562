package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// binaryOwned are the settings whose default belongs to the binary itself:
// no package below sidecar/ has a default for them (the listen address,
// logging, the reconcile schedule, the monitoring and webhook auth modes).
// Their literal in the table is the one place.
var binaryOwned = []string{
	"FLOWGATE_ADDR", "REDIS_POOL_SIZE", "CLOUD9_WRITE_LIMIT", "LOG_FORMAT", "LOG_LEVEL",
	"READINESS_DRAIN_DELAY", "HTTP_SHUTDOWN_TIMEOUT", "DLQ_RECONCILE_SCHEDULE", "MONITORING_AUTH",
	"MONITORING_READONLY", "WEBHOOK_AUTH",
	"BUFFER_WEBHOOK_TIMEOUT", "BUFFER_BENCH_HANDLERS", "HOLDS_EXPIRY_SCHEDULE",
	"HOLDS_STREAM_SHARDS", "SLOT_CACHE_READ_LIMIT",
	"REDIS_MIN_REPLICAS_ACK", // 0 = no barrier: the binary's choice, durable.Config has no "off"
}

// Every default the table gives for a package's setting is read from that
// package's constant (booking.DefaultSyncBudget, taskjobs'
// DefaultSweepSettings(), …), never restated as a literal: a literal here
// and a different one in the package's withDefaults would let -help, the
// docs and a library user's default drift apart. The test reads the table's
// source: a `def:` that is a string literal fails unless the setting is one
// of binaryOwned.
func TestSettingsDefaultsReadThePackagesConstants(t *testing.T) {
	files, err := filepath.Glob("settings*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, f := range files {
		if filepath.Ext(f) != ".go" || len(f) > 8 && f[len(f)-8:] == "_test.go" {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var name string
			var def ast.Expr
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch key, _ := kv.Key.(*ast.Ident); {
				case key == nil:
				case key.Name == "name":
					if b, ok := kv.Value.(*ast.BasicLit); ok {
						name, _ = strconv.Unquote(b.Value)
					}
				case key.Name == "def":
					def = kv.Value
				}
			}
			if name == "" {
				return true
			}
			seen[name] = true
			if _, literal := def.(*ast.BasicLit); literal && !slices.Contains(binaryOwned, name) {
				t.Errorf("%s: %s restates a literal default; read the owning package's constant", fset.Position(def.Pos()), name)
			}
			return true
		})
	}
	require.Len(t, seen, len(settings), "every row of the table was read")
	for _, n := range binaryOwned {
		require.True(t, seen[n], "%s is listed as binary-owned but is not a setting", n)
	}
}

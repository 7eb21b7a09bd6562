package main

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/sidecar/openapi"
)

// notInOpenAPI are registered routes the document leaves out on purpose,
// with the reason.
var notInOpenAPI = map[string]string{
	"/monitoring":   "Asynqmon's web UI and its own JSON API (hibiken/asynqmon), not flowgate's contract",
	"/monitoring/*": "Asynqmon's web UI and its own JSON API (hibiken/asynqmon), not flowgate's contract",
}

// routeSet is the route table in OpenAPI's path syntax, without the routes
// left out on purpose.
func routeSet(app *fiber.App) map[string]bool {
	out := map[string]bool{}
	for _, r := range routeTable(app) {
		method, path, _ := strings.Cut(r, " ")
		if _, skip := notInOpenAPI[path]; skip {
			continue
		}
		out[method+" "+openapi.PathOf(path)] = true
	}
	return out
}

func docSet(doc *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out[method+" "+path] = true
		}
	}
	return out
}

// diff is what a has and b lacks, sorted.
func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestOpenAPICoversRouteTable: /openapi.json is a valid OpenAPI 3.1
// document (kin-openapi's validator, JSON Schema 2020-12) naming exactly
// the registered routes — with the default paths and with
// NODERED_BASE_PATH and the webhook paths moved. A route registered without
// an entry in sidecar/openapi (shown by registering one here) is reported.
func TestOpenAPICoversRouteTable(t *testing.T) {
	for name, extra := range map[string]map[string]string{
		"defaults":     {},
		"custom paths": {"NODERED_BASE_PATH": "/nr/v2", "WEBHOOK_ACK_PATH": "/hooks/done", "WEBHOOK_FAIL_PATH": "/hooks/failed"},
	} {
		t.Run(name, func(t *testing.T) {
			env := realRedisEnv(t)
			for k, v := range extra {
				env[k] = v
			}
			m, base := startMain(t, env)
			st, body := get(t, base+"/openapi.json")
			require.Equal(t, http.StatusOK, st, body)
			doc, err := openapi3.NewLoader().LoadFromData([]byte(body))
			require.NoError(t, err)
			require.Equal(t, openapi.Version, doc.OpenAPI)
			require.NoError(t, doc.Validate(context.Background()))

			registered, documented := routeSet(m.app), docSet(doc)
			require.Empty(t, diff(registered, documented),
				"registered routes missing from /openapi.json: add them to their family in sidecar/openapi/ops_*.go")
			require.Empty(t, diff(documented, registered), "/openapi.json names routes that are not registered")
			if p := extra["NODERED_BASE_PATH"]; p != "" {
				require.True(t, documented["POST /nr/v2/bookConsultation"])
				require.True(t, documented["POST /hooks/done"] && documented["POST /webhook/hooks/failed"])
			}

			m.app.Get("/undocumented/:id", func(c *fiber.Ctx) error { return nil })
			require.Equal(t, []string{"GET /undocumented/{id}"}, diff(routeSet(m.app), documented))
		})
	}
}

package openapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

var testCfg = Config{NodeRedBasePath: "/chord/ortho-prd", AckPath: "/ack", FailPath: "/fail"}

func TestPathOf(t *testing.T) {
	for in, want := range map[string]string{
		"/queue/:queue_id/heartbeat":       "/queue/{queue_id}/heartbeat",
		"/api/buffer/circuits/:type/reset": "/api/buffer/circuits/{type}/reset",
		"/healthz":                         "/healthz",
		"/a/:x/:y2":                        "/a/{x}/{y2}",
	} {
		require.Equal(t, want, PathOf(in))
	}
}

// The document is valid OpenAPI 3.1 (kin-openapi, JSON Schema 2020-12),
// every operation has an id and at least one answer, pointer fields are
// nullable the 3.1 way, and it is the same bytes every build.
func TestBuildIsValid31(t *testing.T) {
	doc, err := Build(testCfg)
	require.NoError(t, err)
	require.True(t, doc.IsOpenAPI31OrLater())
	require.NoError(t, doc.Validate(context.Background()))
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.NotEmpty(t, op.OperationID, "%s %s", method, path)
			require.False(t, ids[op.OperationID], "duplicate operationId %s", op.OperationID)
			ids[op.OperationID] = true
			require.Positive(t, op.Responses.Len(), "%s %s", method, path)
		}
	}
	b1, err := JSON(testCfg)
	require.NoError(t, err)
	b2, err := JSON(testCfg)
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2))
	require.NotContains(t, string(b1), `"nullable"`)

	// The loaded document round-trips and shows a contracts type's fields.
	loaded, err := openapi3.NewLoader().LoadFromData(b1)
	require.NoError(t, err)
	consult := loaded.Components.Schemas["ConsultationResponse"].Value
	require.Contains(t, consult.Properties, "anyQueued")
	guid := consult.Properties["parent"].Value.Properties["patientGUID"].Value
	require.True(t, guid.Type.IncludesNull(), "a *string is nullable")
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b1, &raw))
	require.Equal(t, Version, raw["openapi"])
}

// Every route is listed once, with an absolute path.
func TestRoutesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Routes(testCfg) {
		require.False(t, seen[r], r)
		seen[r] = true
		require.True(t, strings.HasPrefix(strings.SplitN(r, " ", 2)[1], "/"), r)
	}
}

// The document groups its operations: every operation names one tag, each
// declared once at the top with a description, none declared unused; and
// it names its server (relative: the origin that served it).
func TestEveryOperationHasADeclaredTag(t *testing.T) {
	doc, err := Build(testCfg)
	require.NoError(t, err)
	declared, used := map[string]bool{}, map[string]int{}
	for _, tag := range doc.Tags {
		require.False(t, declared[tag.Name], "tag %s declared twice", tag.Name)
		require.NotEmpty(t, tag.Description, tag.Name)
		declared[tag.Name] = true
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.Len(t, op.Tags, 1, "%s %s", method, path)
			require.True(t, declared[op.Tags[0]], "%s %s: tag %q is not declared in Tags", method, path, op.Tags[0])
			used[op.Tags[0]]++
		}
	}
	for name := range declared {
		require.Positive(t, used[name], "tag %s is declared but no operation uses it", name)
	}
	require.Len(t, doc.Servers, 1)
	require.Equal(t, "/", doc.Servers[0].URL)
}

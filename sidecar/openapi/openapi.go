// Package openapi builds flowgate's OpenAPI 3.1 document (served at
// /openapi.json) from route metadata: every HTTP family lists its
// operations in a file of its own (ops_*.go) — method, path in Fiber's
// syntax, the contracts types of the request and of each answer, query
// parameters, authentication. The schemas are generated from those Go types
// (kin-openapi's openapi3gen), so a changed contract changes the document;
// the route list itself is checked against the running route table by the
// sidecar's TestOpenAPICoversRouteTable, which fails on a registered route
// the document lacks and on a documented route that is not registered.
//
// To add a route: register it as usual, then add an Op to its family's
// list here (a new family: a new ops_<family>.go and one line in
// Operations).
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/flowgate/flowgate/contracts"
)

// Version is the OpenAPI version of the document.
const Version = "3.1.0"

// Security schemes an Op may name.
const (
	AuthNone    = ""
	AuthHMAC    = "hmacSignature" // X-Timestamp + X-Signature (WEBHOOK_AUTH=hmac), or the bearer token of WEBHOOK_AUTH=token
	AuthBuffer  = "bufferToken"   // Authorization: Bearer BUFFER_API_TOKEN
	AuthMonitor = "monitoringBasic"
)

// Op is one operation. Path uses Fiber's syntax (":id" parameters);
// BasePath at its start stands for NODERED_BASE_PATH, AckPath and FailPath
// for WEBHOOK_ACK_PATH / WEBHOOK_FAIL_PATH.
type Op struct {
	Method  string
	Path    string
	Tag     string
	Summary string
	// Request is the JSON body (zero values of the contracts types; more
	// than one: oneOf). Empty: no body.
	Request []any
	// Query names the query parameters (all optional strings).
	Query     []string
	Responses []Resp
	Auth      string
	// AuthOptional: Auth is optional — the operation answers without it
	// too, differently (Description says how).
	AuthOptional bool
	// Description is the operation's longer text (optional).
	Description string
}

// Resp is one answer of an Op: status, description and the JSON body
// (more than one: oneOf; none: no content). ContentType overrides JSON.
type Resp struct {
	Status      int
	Desc        string
	Body        []any
	ContentType string
}

// Tags are the areas every Op's Tag names, in the order a reader meets
// them (docs/api.md's sections); TestEveryOperationHasADeclaredTag holds
// the two together.
var Tags = []struct{ Name, Description string }{
	{"service", "health, readiness, metrics, the queue UI, this document"},
	{"node-red", "the Node-RED booking endpoints under NODERED_BASE_PATH (createPatient, slots, createAppt, the family, operation status)"},
	{"queue", "the VM task queue API of the n8n workflow (create, claim, heartbeat, status, requeue, replay, stats)"},
	{"webhooks", "the signed ACK and FAIL webhooks of VM tasks"},
	{"buffer", "the work buffer: enqueue, messages, dead letters, circuits, stats, events"},
	{"operations", "the operation endpoints: redisGet/Set/Delete, cache health and cache control"},
	{"holds", "the /v1 catalogue, exclusive holds, booking and the live hold stream"},
	{"availability-admin", "changes to the schedule-file catalogue (monitoring credentials; 409 on the Cloud9 source)"},
	{"shadow", "shadow mode: mirrored Node-RED calls, the comparison report and the switch-over page"},
}

// Path placeholders of Op.Path.
const (
	BasePath = "{nodered}"
	AckPath  = "{ack}"
	FailPath = "{fail}"
)

// Config fills the configurable paths.
type Config struct {
	NodeRedBasePath string // NODERED_BASE_PATH, normalised ("" = mounted at the root)
	AckPath         string // WEBHOOK_ACK_PATH
	FailPath        string // WEBHOOK_FAIL_PATH
}

// Operations are every family's operations, paths resolved.
func Operations(c Config) []Op {
	var all []Op
	for _, family := range [][]Op{opsService(), opsNodeRed(), opsQueue(), opsWebhooks(), opsBuffer(),
		opsCacheOps(), opsFamily(), opsHolds(), opsShadow()} {
		all = append(all, family...)
	}
	r := strings.NewReplacer(BasePath, c.NodeRedBasePath, AckPath, c.AckPath, FailPath, c.FailPath)
	for i := range all {
		all[i].Path = r.Replace(all[i].Path)
	}
	return all
}

var fiberParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// PathOf is a Fiber path in OpenAPI's syntax: /queue/:queue_id → /queue/{queue_id}.
func PathOf(fiberPath string) string { return fiberParam.ReplaceAllString(fiberPath, "{$1}") }

// Build builds the document.
func Build(c Config) (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: Version,
		Info: &openapi3.Info{Title: "flowgate", Version: "1",
			Description: "The Node-RED booking family (under NODERED_BASE_PATH), the VM task queue API, the ACK/FAIL webhooks, the work buffer and the service endpoints. Errors of the flowgate-native APIs are the ErrorResponse envelope; the Node-RED family answers its own shapes."},
		Paths:      openapi3.NewPaths(),
		Components: &openapi3.Components{Schemas: openapi3.Schemas{}, SecuritySchemes: securitySchemes()},
		// Relative: the flowgate that served the document, wherever it
		// listens (FLOWGATE_ADDR) or is proxied.
		Servers: openapi3.Servers{{URL: "/", Description: "this flowgate: the origin that served /openapi.json"}},
	}
	for _, t := range Tags {
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: t.Name, Description: t.Description})
	}
	g := newGenerator()
	for _, op := range Operations(c) {
		o, err := g.operation(op)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: %w", op.Method, op.Path, err)
		}
		p := PathOf(op.Path)
		item := doc.Paths.Value(p)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(p, item)
		}
		if item.GetOperation(op.Method) != nil {
			return nil, fmt.Errorf("openapi: %s %s listed twice", op.Method, p)
		}
		item.SetOperation(op.Method, o)
	}
	for name, s := range g.schemas {
		doc.Components.Schemas[name] = s
	}
	return doc, nil
}

// JSON is the document as served.
func JSON(c Config) ([]byte, error) {
	doc, err := Build(c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func securitySchemes() openapi3.SecuritySchemes {
	return openapi3.SecuritySchemes{
		AuthHMAC: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "X-Signature",
			Description: "HMAC-SHA256 with HMAC_SECRET over the timestamp (X-Timestamp), method, path and body (version 2), or the seed's timestamp.body (version 1); WEBHOOK_AUTH=token takes Authorization: Bearer WEBHOOK_TOKEN instead"}},
		AuthBuffer: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{Type: "http", Scheme: "bearer",
			Description: "BUFFER_API_TOKEN"}},
		AuthMonitor: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{Type: "http", Scheme: "basic",
			Description: "MONITORING_USER / MONITORING_PASSWORD"}},
	}
}

// generator turns Ops into operations, generating each Go type's schema
// once as a component.
type generator struct {
	gen     *openapi3gen.Generator
	schemas openapi3.Schemas
	refs    map[reflect.Type]*openapi3.SchemaRef
}

func newGenerator() *generator {
	return &generator{gen: openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(nullable31)),
		schemas: openapi3.Schemas{}, refs: map[reflect.Type]*openapi3.SchemaRef{}}
}

// nullable31 writes a pointer field's nullability the 3.1 way (a type
// array with "null") instead of 3.0's nullable keyword.
func nullable31(_ string, _ reflect.Type, _ reflect.StructTag, s *openapi3.Schema) error {
	if s.Nullable && s.Type != nil && !s.Type.IncludesNull() {
		t := append(s.Type.Clone(), openapi3.TypeNull)
		s.Type, s.Nullable = &t, false
	}
	return nil
}

// schema is v's schema: a reference to a component named after its Go
// type (contracts types by their name, others as package.Name), or inline
// for maps and slices.
func (g *generator) schema(v any) (*openapi3.SchemaRef, error) {
	t := reflect.TypeOf(v)
	if ref, ok := g.refs[t]; ok {
		return ref, nil
	}
	s, err := g.gen.NewSchemaRefForValue(v, g.schemas)
	if err != nil {
		return nil, err
	}
	if t.Kind() != reflect.Struct {
		return s, nil
	}
	name := componentName(t)
	if _, taken := g.schemas[name]; taken {
		return nil, fmt.Errorf("two types named %s", name)
	}
	g.schemas[name] = s
	ref := openapi3.NewSchemaRef("#/components/schemas/"+name, s.Value)
	g.refs[t] = ref
	return ref, nil
}

// componentName is a struct type's component name: its name for a
// contracts type, else the package's last element and the name
// (holdshttp.CancelResponse beside contracts' CancelResponse).
func componentName(t reflect.Type) string {
	if strings.HasSuffix(t.PkgPath(), "/contracts") {
		return t.Name()
	}
	return path.Base(t.PkgPath()) + "." + t.Name()
}

// oneOf is one schema, or a oneOf of several.
func (g *generator) oneOf(vs []any) (*openapi3.SchemaRef, error) {
	refs := make(openapi3.SchemaRefs, 0, len(vs))
	for _, v := range vs {
		r, err := g.schema(v)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	if len(refs) == 1 {
		return refs[0], nil
	}
	return &openapi3.SchemaRef{Value: &openapi3.Schema{OneOf: refs}}, nil
}

func (g *generator) operation(op Op) (*openapi3.Operation, error) {
	o := openapi3.NewOperation()
	o.Summary, o.Description, o.Tags = op.Summary, op.Description, []string{op.Tag}
	o.OperationID = operationID(op)
	for _, name := range fiberParam.FindAllStringSubmatch(op.Path, -1) {
		o.AddParameter(openapi3.NewPathParameter(name[1]).WithSchema(openapi3.NewStringSchema()))
	}
	for _, q := range op.Query {
		o.AddParameter(openapi3.NewQueryParameter(q).WithSchema(openapi3.NewStringSchema()))
	}
	if len(op.Request) > 0 {
		s, err := g.oneOf(op.Request)
		if err != nil {
			return nil, err
		}
		o.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(s)}
	}
	o.Responses = openapi3.NewResponses()
	for _, r := range op.Responses {
		resp := openapi3.NewResponse().WithDescription(r.Desc)
		if len(r.Body) > 0 {
			s, err := g.oneOf(r.Body)
			if err != nil {
				return nil, err
			}
			resp.Content = openapi3.NewContentWithSchemaRef(s, []string{firstNonEmpty(r.ContentType, "application/json")})
		} else if r.ContentType != "" {
			resp.Content = openapi3.NewContentWithSchema(openapi3.NewStringSchema(), []string{r.ContentType})
		}
		o.AddResponse(r.Status, resp)
	}
	if op.Auth != AuthNone {
		reqs := openapi3.NewSecurityRequirements()
		if op.AuthOptional {
			reqs.With(openapi3.NewSecurityRequirement()) // {}: no credentials is an option too
		}
		o.Security = reqs.With(openapi3.NewSecurityRequirement().Authenticate(op.Auth))
	}
	return o, nil
}

// operationID is method + path in camel case: POST /queue/:queue_id/replay
// → postQueueQueueIdReplay.
func operationID(op Op) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.Method))
	for _, part := range strings.FieldsFunc(op.Path, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Routes are the document's operations as "METHOD path" in Fiber's
// syntax, sorted (what the route table lists).
func Routes(c Config) []string {
	var out []string
	for _, op := range Operations(c) {
		out = append(out, op.Method+" "+op.Path)
	}
	sort.Strings(out)
	return out
}

// errBody is the flowgate error envelope.
var errBody = []any{contracts.ErrorResponse{}}

// Handy status constants for the ops files.
const (
	s200 = http.StatusOK
	s201 = http.StatusCreated
	s202 = http.StatusAccepted
	s204 = http.StatusNoContent
	s207 = http.StatusMultiStatus
	s400 = http.StatusBadRequest
	s401 = http.StatusUnauthorized
	s403 = http.StatusForbidden
	s404 = http.StatusNotFound
	s409 = http.StatusConflict
	s422 = http.StatusUnprocessableEntity
	s429 = http.StatusTooManyRequests
	s500 = http.StatusInternalServerError
	s503 = http.StatusServiceUnavailable
)

package openapi

import "net/http"

// opsService are the service endpoints of sidecar/http.go.
func opsService() []Op {
	obj := []any{map[string]any{}}
	return []Op{
		{Method: http.MethodGet, Path: "/", Tag: "service", Summary: "Landing page (HTML): links to /board, /monitoring, /openapi.json, /metrics and health",
			Responses: []Resp{{Status: s200, Desc: "an HTML page", ContentType: "text/html"}}},
		{Method: http.MethodGet, Path: "/healthz", Tag: "service", Summary: "Liveness: 200 while the process runs (no Redis)",
			Responses: []Resp{{Status: s200, Desc: `{"status":"ok"}`, Body: obj}}},
		{Method: http.MethodGet, Path: "/readyz", Tag: "service", Summary: "Readiness: Redis answers and the Asynq dequeuers run",
			Responses: []Resp{{Status: s200, Desc: `{"ready":true,"checks":{…}}`, Body: obj},
				{Status: s503, Desc: "not ready; reason codes only", Body: obj}}},
		{Method: http.MethodGet, Path: "/metrics", Tag: "service", Summary: "Prometheus metrics",
			Responses: []Resp{{Status: s200, Desc: "Prometheus text exposition", ContentType: "text/plain"}}},
		{Method: http.MethodGet, Path: "/openapi.json", Tag: "service", Summary: "This document",
			Responses: []Resp{{Status: s200, Desc: "OpenAPI 3.1", Body: obj}}},
	}
}

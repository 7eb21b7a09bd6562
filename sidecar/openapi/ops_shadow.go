package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsShadow are the shadow mode's routes (orchestrator/shadow/shadowhttp),
// behind the monitoring credentials.
func opsShadow() []Op {
	const tag = "shadow"
	auth := []Resp{{Status: s401, Desc: "no monitoring credentials", Body: errBody}}
	return []Op{
		{Method: http.MethodPost, Path: contracts.ShadowMirrorPath, Tag: tag, Auth: AuthMonitor,
			Summary:     "The Node-RED kit's mirror of a request the original answered: replayed dry, compared, recorded",
			Description: "Sent by the kit's shadow target after the original answered its caller. Nothing real changes: writes are answered with 00000000-5ad0-… GUIDs.",
			Request:     []any{contracts.ShadowMirror{}},
			Responses: append([]Resp{{Status: s200, Desc: "compared", Body: []any{contracts.ShadowMirrorAnswer{}}},
				{Status: s400, Desc: "malformed envelope, an endpoint the kit does not have, or one never shadowed", Body: errBody}}, auth...)},
		{Method: http.MethodGet, Path: contracts.ShadowReportPath, Tag: tag, Auth: AuthMonitor,
			Summary:   "Every endpoint's and group's parity with the original and its verdict",
			Responses: append([]Resp{{Status: s200, Desc: "the report", Body: []any{contracts.ShadowReport{}}}}, auth...)},
		{Method: http.MethodGet, Path: "/switch-over", Tag: tag, Auth: AuthMonitor,
			Summary:   "The report as a page (HTML)",
			Responses: append([]Resp{{Status: s200, Desc: "an HTML page", ContentType: "text/html"}}, auth...)},
	}
}

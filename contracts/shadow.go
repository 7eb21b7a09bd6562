package contracts

// ShadowMirrorPath is the route the kit mirrors to.
const ShadowMirrorPath = "/api/shadow/mirror"

// ShadowReportPath is the report's JSON route.
const ShadowReportPath = "/api/shadow/report"

// ShadowHeader marks a mirrored request ("1") on the envelope and on the
// request flowgate replays dry.
const ShadowHeader = "X-Flowgate-Shadow"

// The verdicts of an endpoint or a group.
const (
	ShadowNoTraffic  = "no_traffic"   // nothing compared yet
	ShadowCollecting = "collecting"   // fewer than SHADOW_READY_MIN_CALLS compared, none wrong in the window
	ShadowNotReady   = "not_ready"    // a missing key path or a type mismatch in the last SHADOW_READY_WINDOW
	ShadowReady      = "ready"        // enough calls, and the window is clean
	ShadowNever      = "not_shadowed" // an operation endpoint: never mirrored
)

// ShadowMirror is the kit's envelope: the caller's request as it reached
// Node-RED (body base64, byte for byte) and the original's answer.
type ShadowMirror struct {
	Endpoint string            `json:"endpoint"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Query    string            `json:"query,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     []byte            `json:"body,omitempty"`
	Original ShadowOriginal    `json:"original"`
	// Dropped is how many mirrors the kit dropped (in flight at its bound)
	// since it sent the previous one.
	Dropped int `json:"dropped,omitempty"`
}

// ShadowOriginal is the original node's answer and how long it took,
// measured in Node-RED from the request to the answer.
type ShadowOriginal struct {
	Status int     `json:"status"`
	Body   []byte  `json:"body,omitempty"`
	MS     float64 `json:"ms"`
}

// ShadowMirrorAnswer is flowgate's answer to a mirror.
type ShadowMirrorAnswer struct {
	Endpoint  string `json:"endpoint"`
	Compared  bool   `json:"compared"`
	Identical bool   `json:"identical"`
	Superset  bool   `json:"superset"`
	Status    int    `json:"flowgate_status"`
}

// ShadowReport is GET /api/shadow/report.
type ShadowReport struct {
	GeneratedAt string               `json:"generated_at"`
	Settings    ShadowSettings       `json:"settings"`
	Groups      []ShadowGroup        `json:"groups"`
	Endpoints   []ShadowEndpointView `json:"endpoints"`
}

// ShadowSettings are the verdict's thresholds.
type ShadowSettings struct {
	ReadyMinCalls int `json:"ready_min_calls"`
	ReadyWindow   int `json:"ready_window"`
}

// ShadowGroup is a switch group: ready only when every member is.
type ShadowGroup struct {
	Name      string   `json:"name"`
	Endpoints []string `json:"endpoints"`
	Verdict   string   `json:"verdict"`
}

// ShadowEndpointView is one endpoint's parity.
type ShadowEndpointView struct {
	Endpoint string `json:"endpoint"`
	Group    string `json:"group,omitempty"`
	Verdict  string `json:"verdict"`
	// Counts since the records began (SHADOW_RETENTION after the last one).
	Compared       int64 `json:"compared"`
	Identical      int64 `json:"identical"`
	Superset       int64 `json:"superset"`
	MissingPaths   int64 `json:"missing_paths"`
	TypeMismatches int64 `json:"type_mismatches"`
	ValueDiffs     int64 `json:"value_diffs"`
	Dropped        int64 `json:"dropped"`
	// Window is the last SHADOW_READY_WINDOW comparisons.
	Window  ShadowWindow             `json:"window"`
	Latency map[string]ShadowLatency `json:"latency_ms"`
	Fields  map[string]int64         `json:"field_diffs"`
	Recent  []ShadowDifference       `json:"recent_differences"`
}

// ShadowWindow counts the comparisons of the verdict's window.
type ShadowWindow struct {
	Calls          int `json:"calls"`
	MissingPaths   int `json:"missing_paths"`
	TypeMismatches int `json:"type_mismatches"`
	ValueDiffs     int `json:"value_diffs"`
}

// ShadowLatency is one side's latency over the window ("original",
// "flowgate").
type ShadowLatency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// ShadowDifference is one recent comparison that differed: key paths and
// field classes only, never values.
type ShadowDifference struct {
	At             string            `json:"at"`
	OriginalStatus int               `json:"original_status"`
	FlowgateStatus int               `json:"flowgate_status"`
	Missing        []string          `json:"missing,omitempty"`
	TypeMismatches []string          `json:"type_mismatches,omitempty"`
	Fields         []ShadowFieldDiff `json:"fields,omitempty"`
}

// ShadowFieldDiff is a caller-relevant field whose class differs.
type ShadowFieldDiff struct {
	Field    string `json:"field"`
	Original string `json:"original"`
	Flowgate string `json:"flowgate"`
}

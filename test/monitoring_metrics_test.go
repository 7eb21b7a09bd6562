package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --- metric names -------------------------------------------------------------

var (
	promStringRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promBracesRE   = regexp.MustCompile(`\{[^{}]*\}`)
	promBracketsRE = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGroupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promOffsetRE   = regexp.MustCompile(`\boffset\s+-?[0-9a-zA-Z]+`)
	promVarRE      = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promIdentRE    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promSelectorRE = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^{}]*)\}`)
	promMatcherRE  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	promKeywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "offset": true, "atan2": true,
		"inf": true, "nan": true}
)

// promMetricNames are the metric names expr selects: identifiers that are
// neither functions, aggregations (followed by "("), keywords, label names
// (inside {…} or by/without/on/ignoring/group_x (…)) nor numbers.
func promMetricNames(expr string) []string {
	s := promStringRE.ReplaceAllString(expr, `""`)
	s = promVarRE.ReplaceAllString(s, "")
	for {
		n := promBracesRE.ReplaceAllString(s, " ")
		n = promBracketsRE.ReplaceAllString(n, " ")
		n = promGroupingRE.ReplaceAllString(n, " ")
		if n == s {
			break
		}
		s = n
	}
	s = promOffsetRE.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdentRE.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(s[loc[0]-1])) {
			continue // the exponent of a number: 1e3
		}
		if promKeywords[strings.ToLower(id)] {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		out = append(out, id)
	}
	return out
}

func TestPromMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.95, sum by (le, hook) (rate(flowgate_webhook_duration_seconds_bucket{job="$job"}[$__rate_interval])))`: {"flowgate_webhook_duration_seconds_bucket"},
		`max by (job) (flowgate_tasks_dlq_size) > max without (instance) (flowgate_tasks_dlq_size offset 30m) and on (job) up == 1`:  {"flowgate_tasks_dlq_size", "flowgate_tasks_dlq_size", "up"},
		`count(ALERTS{alertstate="firing"}) or vector(0)`:                                                           {"ALERTS"},
		`sum(holdstream_streams{job="$job"}) / 1e3 + time() - x:recorded:rate5m`:                                    {"holdstream_streams", "x:recorded:rate5m"},
		`{__name__="flowgate_redis_up"} == bool 0 unless ignoring(instance) group_left(tier) a_b`:                   {"a_b"},
		`max_over_time(flowgate_buffer_circuit_state[5m:1m]) == 2 and on (job) sum by (job) (c) >= inf`:             {"flowgate_buffer_circuit_state", "c"},
		`min by (job) (flowgate_cron_next_run_timestamp_seconds{exported_job="slot_cache_refresh"}) - time() < 900`: {"flowgate_cron_next_run_timestamp_seconds"},
	} {
		require.Equal(t, want, promMetricNames(expr), expr)
	}
}

// The checker finds a missing metric, a label the metric lacks and a value
// none of its series has; a histogram family answers for its buckets.
func TestCheckExposition(t *testing.T) {
	e := parseExposition(`# TYPE a_total counter
a_total{job="slot_cache_refresh",outcome="ok"} 1
# TYPE h_seconds histogram
h_seconds_bucket{le="+Inf"} 0
h_seconds_sum 0
h_seconds_count 0
`)
	exprs := []promExpr{
		{"good", `sum(rate(a_total{job="$job", exported_job="slot_cache_refresh", outcome="ok"}[5m])) + h_seconds_sum + up`},
		{"bad", `a_total{outcome="failed", procedure="x"} + missing_total + rate(h_seconds_bucket[5m])`},
	}
	used := map[string][]string{}
	for _, x := range exprs {
		for _, n := range promMetricNames(x.expr) {
			used[n] = append(used[n], x.where)
		}
	}
	require.Equal(t, []string{
		`a_total has no label procedure (bad)`,
		`a_total has no series with outcome="failed" (bad)`,
		`metric missing_total (used by bad)`,
	}, checkExposition(e, exprs, used))
}

// exposition is what a /metrics answered: every series name with the
// values each label takes, and each family's type.
type exposition struct {
	labels map[string]map[string]map[string]bool // name → label → values
	types  map[string]string
}

func parseExposition(body string) exposition {
	e := exposition{labels: map[string]map[string]map[string]bool{}, types: map[string]string{}}
	label := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			e.types[f[2]] = f[3]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if e.labels[name] == nil {
			e.labels[name] = map[string]map[string]bool{}
		}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			for _, m := range label.FindAllStringSubmatch(rest[:end+1], -1) {
				if e.labels[name][m[1]] == nil {
					e.labels[name][m[1]] = map[string]bool{}
				}
				e.labels[name][m[1]][m[2]] = true
			}
		}
	}
	return e
}

// has reports whether name is a series of the exposition, or the bucket,
// sum or count of a histogram or summary family.
func (e exposition) has(name string) bool {
	if _, ok := e.labels[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if ty := e.types[base]; ty == "histogram" || ty == "summary" {
				return true
			}
		}
	}
	return false
}

// Names Prometheus makes itself, not flowgate.
var prometheusOwn = map[string]bool{"up": true, "ALERTS": true, "ALERTS_FOR_STATE": true, "scrape_duration_seconds": true}

// Label values that appear only once something happened, which a query may
// still select: name → label → value.
var eventOnlyValues = map[string]map[string]string{
	"flowgate_cloud9_requests_total": {"outcome": "limited"},
}

// targetLabels are added by the scrape; the exposition's own job label
// arrives as exported_job.
var targetLabels = map[string]bool{"job": true, "instance": true}

// TestMonitoringMetricsExist runs flowgate (embedded Redis, the Cloud9
// simulator), refreshes a slot cache tier and opens a holds stream so that
// the tier's age and the stream gauge exist, and
// checks that every metric the dashboard and the alert rules select is in
// /metrics, with the labels their matchers name and, for an equality
// matcher, the value.
func TestMonitoringMetricsExist(t *testing.T) {
	var exprs []promExpr
	for _, r := range loadRules(t) {
		exprs = append(exprs, promExpr{"alert " + r.Alert, r.Expr})
	}
	exprs = append(exprs, dashboardExprs(t)...)
	used := map[string][]string{} // metric → where
	for _, e := range exprs {
		for _, n := range promMetricNames(e.expr) {
			if !slices.Contains(used[n], e.where) {
				used[n] = append(used[n], e.where)
			}
		}
	}
	require.Greater(t, len(used), 30, "the parser found too few metric names: %v", used)

	p := startFlowgate(t, map[string]string{})
	// One slot cache tier refreshed (from the simulator): a tier's age
	// exists once it holds a list.
	refresh, err := http.Post(p.Base+"/chord/ortho-prd/cache/refresh?tier=1", "application/json", nil)
	require.NoError(t, err)
	refreshBody, _ := io.ReadAll(refresh.Body)
	refresh.Body.Close()
	require.Equal(t, http.StatusOK, refresh.StatusCode, "%s", refreshBody)
	// A holds stream: holdstream_streams exists while one is open.
	status, body := p.Get("/v1/appointment-types")
	require.Equal(t, 200, status, body)
	var types struct {
		AppointmentTypes []struct{ ID string } `json:"appointmentTypes"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &types))
	require.NotEmpty(t, types.AppointmentTypes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		p.Base+"/v1/holds/stream?appointmentTypeId="+types.AppointmentTypes[0].ID+"&clientId=monitoring-test", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Series created by the first run of a cron job or a first request
	// may take a few seconds.
	var problems []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		problems = checkExposition(parseExposition(scrape(t, p)), exprs, used)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(problems) > 0 {
		t.Fatalf("the monitoring kit selects what flowgate's /metrics does not have:\n  %s", strings.Join(problems, "\n  "))
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d metrics used by %d queries and rules, all in /metrics: %s", len(names), len(exprs), strings.Join(names, " "))
}

func checkExposition(e exposition, exprs []promExpr, used map[string][]string) []string {
	var problems []string
	for name, where := range used {
		if !prometheusOwn[name] && !e.has(name) {
			problems = append(problems, fmt.Sprintf("metric %s (used by %s)", name, strings.Join(where, "; ")))
		}
	}
	for _, x := range exprs {
		s := promStringRE.ReplaceAllStringFunc(x.expr, func(q string) string { return strings.ReplaceAll(q, "}", "\x00") })
		for _, sel := range promSelectorRE.FindAllStringSubmatch(s, -1) {
			name := sel[1]
			if prometheusOwn[name] || promKeywords[name] || !e.has(name) {
				continue
			}
			have := e.labels[name]
			for _, m := range promMatcherRE.FindAllStringSubmatch(strings.ReplaceAll(sel[2], "\x00", "}"), -1) {
				label, op, value := m[1], m[2], m[3]
				if targetLabels[label] {
					continue
				}
				if label == "exported_job" {
					label = "job"
				}
				if have[label] == nil {
					problems = append(problems, fmt.Sprintf("%s has no label %s (%s)", name, m[1], x.where))
					continue
				}
				if op == "=" && !strings.Contains(value, "$") && !have[label][value] && eventOnlyValues[name][label] != value {
					problems = append(problems, fmt.Sprintf("%s has no series with %s=%q (%s)", name, m[1], value, x.where))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The files of the monitoring kit of flows/monitoring: Prometheus's
// configuration and alert rules, their unit tests, Grafana's provisioning
// and the flowgate dashboard. promtool checks the configuration and runs
// the rules' unit tests; every metric the dashboard and the rules name must
// exist in the /metrics of a running flowgate.
const (
	monitoringDir    = "../flows/monitoring"
	promConfigFile   = monitoringDir + "/prometheus/prometheus.yml"
	promRulesFile    = monitoringDir + "/prometheus/rules.yml"
	promRulesTest    = monitoringDir + "/prometheus/rules_test.yml"
	grafanaDashboard = monitoringDir + "/grafana/dashboards/flowgate.json"
	grafanaDSFile    = monitoringDir + "/grafana/provisioning/datasources/prometheus.yml"
	grafanaDashProv  = monitoringDir + "/grafana/provisioning/dashboards/flowgate.yml"
)

// --- promtool -------------------------------------------------------------

var (
	promtoolOnce sync.Once
	promtoolPath string
	promtoolWhy  string
)

// promtool returns the path of promtool: FLOWGATE_TEST_PROMTOOL, or promtool
// on PATH, or — as test/run does for redis-server and chromium — the one of
// Debian's prometheus package, installed with apt-get when running as root.
// Without any, the test skips saying why.
func promtool(t *testing.T) string {
	t.Helper()
	promtoolOnce.Do(func() {
		if p := os.Getenv("FLOWGATE_TEST_PROMTOOL"); p != "" {
			if _, err := exec.LookPath(p); err == nil {
				promtoolPath = p
				return
			}
			t.Logf("FLOWGATE_TEST_PROMTOOL=%s is not executable: ignored", p)
		}
		if p, err := exec.LookPath("promtool"); err == nil {
			promtoolPath = p
			return
		}
		if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
			promtoolWhy = "promtool not installed and cannot be installed (needs root and apt-get): " +
				"install Debian's prometheus package (apt-get install prometheus) or set FLOWGATE_TEST_PROMTOOL"
			return
		}
		t.Log("promtool missing: apt-get install prometheus (Debian's package provides promtool)")
		if out, err := aptInstall("prometheus"); err != nil {
			promtoolWhy = fmt.Sprintf("apt-get install prometheus failed: %v\n%s", err, out)
			return
		}
		if p, err := exec.LookPath("promtool"); err == nil {
			promtoolPath = p
			return
		}
		promtoolWhy = "apt-get install prometheus succeeded but promtool is not on PATH"
	})
	if promtoolPath == "" {
		t.Skip(promtoolWhy)
	}
	return promtoolPath
}

// aptInstall installs Debian packages, without recommends, waiting for the
// dpkg lock of a concurrent apt; it runs apt-get update only if the first
// try fails (stale or missing lists).
func aptInstall(pkgs ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	apt := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300", "-y", "-qq"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	install := append([]string{"install", "--no-install-recommends"}, pkgs...)
	if out, err := apt(install...); err == nil {
		return out, nil
	}
	if out, err := apt("update"); err != nil {
		return out, err
	}
	return apt(install...)
}

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool(t), args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// TestMonitoringPromtool: `promtool check config` (which checks the rule
// files it names, rules.yml) and `promtool test rules` on the unit tests of
// every alert.
func TestMonitoringPromtool(t *testing.T) {
	t.Logf("%s", runPromtool(t, "check", "config", promConfigFile))
	t.Logf("%s", runPromtool(t, "test", "rules", promRulesTest))
}

// TestMonitoringDashboardQueriesParse: each query of the dashboard, with
// Grafana's variables given values, is valid PromQL (promtool checks them
// as recording rules).
func TestMonitoringDashboardQueriesParse(t *testing.T) {
	exprs := dashboardExprs(t)
	grafanaVars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h", "$job", "flowgate")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, e := range exprs {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: grafanaVars.Replace(e.expr)})
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput()
	if err != nil {
		for i, e := range exprs {
			t.Logf("query_%d (%s): %s", i, e.where, e.expr)
		}
	}
	require.NoError(t, err, "%s", out)
}

// --- files ------------------------------------------------------------------

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) []alertRule {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, promRulesFile, &f)
	var out []alertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	require.NotEmpty(t, out)
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v), path)
}

type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDash struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Datasource json.RawMessage `json:"datasource"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) grafanaDash {
	t.Helper()
	raw, err := os.ReadFile(grafanaDashboard)
	require.NoError(t, err)
	var d grafanaDash
	require.NoError(t, json.Unmarshal(raw, &d), grafanaDashboard)
	return d
}

// allPanels flattens rows (a collapsed row keeps its panels inside).
func allPanels(ps []grafanaPanel) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

type promExpr struct{ where, expr string }

// dashboardExprs are the dashboard's PromQL: every target's expr and the
// metric selector of every label_values() variable.
func dashboardExprs(t *testing.T) []promExpr {
	t.Helper()
	d := loadDashboard(t)
	var out []promExpr
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			out = append(out, promExpr{fmt.Sprintf("panel %d %q %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			out = append(out, promExpr{"variable " + v.Name, m[1]})
		}
	}
	return out
}

// provisionedDatasourceUID is the uid of the Prometheus data source Grafana
// is provisioned with.
func provisionedDatasourceUID(t *testing.T) (uid, url string) {
	t.Helper()
	var f struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, grafanaDSFile, &f)
	require.Len(t, f.Datasources, 1)
	require.Equal(t, "prometheus", f.Datasources[0].Type)
	require.NotEmpty(t, f.Datasources[0].UID)
	return f.Datasources[0].UID, f.Datasources[0].URL
}

// TestMonitoringDashboardShape: valid Grafana dashboard JSON whose every
// query uses the provisioned Prometheus, with the sections it promises.
func TestMonitoringDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	uid, _ := provisionedDatasourceUID(t)
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)
	require.GreaterOrEqual(t, d.SchemaVersion, 36, "a current Grafana schema")
	wantDS := fmt.Sprintf(`{"type":"prometheus","uid":%q}`, uid)
	compact := func(raw json.RawMessage) string {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return string(raw)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	ids := map[int]string{}
	var rows, titles []string
	queries := 0
	for _, p := range allPanels(d.Panels) {
		require.NotZero(t, p.ID, "panel %q has no id", p.Title)
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
		require.NotEmpty(t, p.Title, "panel %d has no title", p.ID)
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		titles = append(titles, p.Title)
		if got := compact(p.Datasource); got != wantDS {
			t.Errorf("panel %q datasource = %s, want %s", p.Title, got, wantDS)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s has no expr", p.Title, tg.RefID)
			}
			if got := compact(tg.Datasource); got != wantDS {
				t.Errorf("panel %q target %s datasource = %s, want %s", p.Title, tg.RefID, got, wantDS)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			require.Equal(t, wantDS, compact(v.Datasource), "variable %s", v.Name)
		}
	}
	t.Logf("%d rows, %d panels, %d queries", len(rows), len(titles), queries)
	for _, want := range []string{"Overview", "VM tasks", "Bookings", "Work buffer", "Holds and SSE streams"} {
		require.True(t, slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, want) }), "no row %q in %v", want, rows)
	}
	// The six monitoring points of the n8n orchestration, numbered as there.
	for i := 1; i <= 6; i++ {
		require.True(t, slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("%d. ", i)) }),
			"no panel for monitoring point %d", i)
	}
}

// TestMonitoringAlertsShape: every alert has a severity, a summary and a
// description ending with its runbook step, and rules_test.yml has a test
// in which it fires.
func TestMonitoringAlertsShape(t *testing.T) {
	rules := loadRules(t)
	var f struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, promRulesTest, &f)
	require.Equal(t, []string{"rules.yml"}, f.RuleFiles)
	fired := map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			fired[a.Alertname] = fired[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	names := map[string]bool{}
	for _, r := range rules {
		require.NotEmpty(t, r.Alert, "rules.yml holds alerts only (recording rule %q)", r.Record)
		require.False(t, names[r.Alert], "alert %s defined twice", r.Alert)
		names[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" {
			t.Errorf("%s has no summary", r.Alert)
		}
		if !strings.Contains(r.Annotations["description"], "Runbook:") {
			t.Errorf("%s: the description names no runbook step (\"Runbook: …\")", r.Alert)
		}
		if !fired[r.Alert] {
			t.Errorf("%s: no test in rules_test.yml in which it fires", r.Alert)
		}
	}
	for a := range fired {
		if !names[a] {
			t.Errorf("rules_test.yml tests %s, which rules.yml does not define", a)
		}
	}
	// What the alerts must cover.
	for _, want := range []string{"FlowgateTasksDeadLetterQueueGrowing", "FlowgateBufferDeadLetterQueueGrowing",
		"FlowgateTasksStuckProcessing", "FlowgateTasksSLAPromotions", "FlowgateBufferCircuitOpen",
		"FlowgateBookingOperationsFailed", "FlowgateSlotCacheCriticalStale", "FlowgateRedisUnreachable"} {
		require.True(t, names[want], "no alert %s", want)
	}
}

// --- docker-compose.yml -----------------------------------------------------------

// TestComposeMonitoring: the prometheus and grafana services run pinned
// images with flows/monitoring mounted where their configuration expects
// it; every bind mount of every service exists in the repository.
func TestComposeMonitoring(t *testing.T) {
	p := loadCompose(t)
	pinned := map[string]*regexp.Regexp{
		"prometheus": regexp.MustCompile(`^prom/prometheus:v\d+\.\d+\.\d+$`),
		"grafana":    regexp.MustCompile(`^grafana/grafana:\d+\.\d+\.\d+$`),
	}
	for svc, re := range pinned {
		s, ok := p.Services[svc]
		require.True(t, ok, "service %q missing", svc)
		require.Regexp(t, re, s.Image, "%s image is pinned to a version", svc)
	}
	// Every bind mount's source exists (relative to the compose file).
	mounts := map[string]map[string]string{} // service → target → source
	for name, svc := range p.Services {
		mounts[name] = map[string]string{}
		for _, v := range svc.Volumes {
			src, rest, _ := strings.Cut(v, ":")
			dst, _, _ := strings.Cut(rest, ":")
			if _, named := p.Volumes[src]; named {
				continue
			}
			require.True(t, strings.HasPrefix(src, "./"), "%s: volume %q is neither named nor ./relative", name, v)
			_, err := os.Stat(filepath.Join("..", src))
			require.NoError(t, err, "%s mounts %s, which is not in the repository", name, src)
			mounts[name][dst] = filepath.Clean(src)
		}
	}

	// Prometheus reads prometheus.yml (and rules.yml beside it) from the
	// mounted directory, read-only, and keeps its data in a named volume.
	prom := p.Services["prometheus"]
	require.Equal(t, "flows/monitoring/prometheus", mounts["prometheus"]["/etc/prometheus"])
	require.Contains(t, prom.Volumes, "./flows/monitoring/prometheus:/etc/prometheus:ro")
	require.Contains(t, composeWords(prom.Command), "--config.file=/etc/prometheus/prometheus.yml")
	require.True(t, slices.ContainsFunc(prom.Volumes, func(v string) bool {
		src, dst, _ := strings.Cut(v, ":")
		_, named := p.Volumes[src]
		return named && dst == "/prometheus"
	}), "prometheus keeps its TSDB in a named volume: %v", prom.Volumes)
	type scrapeConfig struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	}
	var cfg struct {
		RuleFiles     []string       `yaml:"rule_files"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	readYAML(t, promConfigFile, &cfg)
	require.Equal(t, []string{"rules.yml"}, cfg.RuleFiles)
	i := slices.IndexFunc(cfg.ScrapeConfigs, func(s scrapeConfig) bool { return s.JobName == "flowgate" })
	require.GreaterOrEqual(t, i, 0, "prometheus.yml has no flowgate job")
	require.Equal(t, "/metrics", cfg.ScrapeConfigs[i].MetricsPath)
	require.Equal(t, []string{"flowgate:8080"}, cfg.ScrapeConfigs[i].StaticConfigs[0].Targets,
		"the compose service flowgate on the port it listens on")

	// Grafana: provisioning mounted where Grafana reads it, the dashboards
	// where the provider looks, the data source pointing at the service.
	g := p.Services["grafana"]
	require.Equal(t, "flows/monitoring/grafana/provisioning", mounts["grafana"]["/etc/grafana/provisioning"])
	var prov struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, grafanaDashProv, &prov)
	require.Len(t, prov.Providers, 1)
	require.Equal(t, "file", prov.Providers[0].Type)
	require.Equal(t, "flows/monitoring/grafana/dashboards", mounts["grafana"][prov.Providers[0].Options.Path],
		"the dashboard provider's path is the mounted dashboards directory")
	_, url := provisionedDatasourceUID(t)
	require.Equal(t, "http://prometheus:9090", url, "the data source is the compose service")
	env := composeEnv(t, g.Environment)
	if home := env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != nil {
		rel, ok := strings.CutPrefix(*home, prov.Providers[0].Options.Path+"/")
		require.True(t, ok, "home dashboard %s is under %s", *home, prov.Providers[0].Options.Path)
		_, err := os.Stat(filepath.Join(monitoringDir, "grafana/dashboards", rel))
		require.NoError(t, err)
	}
	pw := env["GF_SECURITY_ADMIN_PASSWORD"]
	require.NotNil(t, pw, "grafana's admin password comes from the host")
	require.Regexp(t, `^\$\{[A-Z_]+:\?[^}]+\}$`, *pw, "required, no default")
}

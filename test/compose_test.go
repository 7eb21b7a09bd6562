package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flowgate/flowgate/test/flowgatetest"
)

const composeFile = "../docker-compose.yml"

// composeSecrets are the variables compose must be given; none has a default.
var composeSecrets = []string{"BOOKING_AUTH_SECRET", "HMAC_SECRET", "BUFFER_API_TOKEN", "MONITORING_PASSWORD"}

// cloud9Choice are flowgate's Cloud9 variables, which compose passes
// through from the host: the real Cloud9's, or CLOUD9_SIMULATOR=true.
var cloud9Choice = []string{"CLOUD9_ENDPOINT", "CLOUD9_CLIENT_ID", "CLOUD9_USERNAME", "CLOUD9_PASSWORD",
	"CLOUD9_VENDOR_USERNAME", "CLOUD9_PROVIDER_GUID", "CLOUD9_SIMULATOR"}

// cloud9Practice are the settings whose defaults are the sandbox's ids and
// clock: a real Cloud9 needs the practice's own, so compose passes each
// through from the host (unset there: flowgate's default applies).
var cloud9Practice = []string{"CLOUD9_LOCATION_GUID", "CLOUD9_SCHEDULE_VIEW_GUID", "CLOUD9_SCHEDULE_COLUMN_GUID",
	"CLOUD9_SLOT_COLUMNS", "CLOUD9_APPOINTMENT_TYPE_GUID", "CLOUD9_WRITE_LIMIT", "PRACTICE_TIME_ZONE"}

type composeService struct {
	Image       string         `yaml:"image"`
	Build       any            `yaml:"build"`
	Command     any            `yaml:"command"`
	Environment any            `yaml:"environment"`
	Ports       []string       `yaml:"ports"`
	Volumes     []string       `yaml:"volumes"`
	DependsOn   any            `yaml:"depends_on"`
	Healthcheck map[string]any `yaml:"healthcheck"`
	StopGrace   string         `yaml:"stop_grace_period"`
}

type composeProject struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

func loadCompose(t *testing.T) composeProject {
	t.Helper()
	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var p composeProject
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return p
}

// composeEnv turns either compose form (map, or list of KEY=VALUE / KEY) into a
// map; a variable passed through from the host without a value maps to nil.
func composeEnv(t *testing.T, raw any) map[string]*string {
	t.Helper()
	out := map[string]*string{}
	switch e := raw.(type) {
	case nil:
	case map[string]any:
		for k, v := range e {
			if v == nil {
				out[k] = nil
				continue
			}
			s := fmt.Sprint(v)
			out[k] = &s
		}
	case []any:
		for _, item := range e {
			k, v, ok := strings.Cut(fmt.Sprint(item), "=")
			if !ok {
				out[k] = nil
				continue
			}
			out[k] = &v
		}
	default:
		t.Fatalf("environment has unexpected form %T", raw)
	}
	return out
}

// showEnv prints an environment value; nil is a pass-through from the host.
func showEnv(v *string) string {
	if v == nil {
		return "<unset>"
	}
	return strconv.Quote(*v)
}

// composeWords is a command or healthcheck test as a list of words.
func composeWords(raw any) []string {
	switch c := raw.(type) {
	case string:
		return strings.Fields(c)
	case []any:
		var out []string
		for _, w := range c {
			out = append(out, fmt.Sprint(w))
		}
		return out
	}
	return nil
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)
	for _, name := range []string{"redis", "flowgate", "node-red", "n8n"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("service %q missing", name)
		}
	}
	images := map[string]string{"redis": "redis:7", "node-red": "nodered/node-red:4.1", "n8n": "n8nio/n8n"}
	for svc, prefix := range images {
		if img := p.Services[svc].Image; !strings.HasPrefix(img, prefix) {
			t.Errorf("%s image = %q, want %s…", svc, img, prefix)
		}
	}
	// Every image is pinned to a release (major.minor.patch): a floating
	// tag (redis:7, node-red:4.1) changes under a redeploy.
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v?\d+\.\d+\.\d+$`)
	for name, svc := range p.Services {
		if svc.Image != "" && !pinned.MatchString(svc.Image) {
			t.Errorf("%s image = %q, want one pinned to a release (name:X.Y.Z)", name, svc.Image)
		}
	}
	// Every published port binds the loopback unless the operator opts out
	// (FLOWGATE_BIND=0.0.0.0); Prometheus, without authentication, always.
	bound := regexp.MustCompile(`^(\$\{FLOWGATE_BIND:-127\.0\.0\.1\}|127\.0\.0\.1):\d+:\d+$`)
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			if !bound.MatchString(port) || (name == "prometheus" && !strings.HasPrefix(port, "127.0.0.1:")) {
				t.Errorf("%s publishes %q: want ${FLOWGATE_BIND:-127.0.0.1}:HOST:CONTAINER (loopback unless the operator opts out)", name, port)
			}
		}
	}
	for svc, port := range map[string]string{"flowgate": "8080", "node-red": "1880", "n8n": "5678"} {
		if !slices.ContainsFunc(p.Services[svc].Ports, func(s string) bool { return strings.HasSuffix(s, ":"+port) }) {
			t.Errorf("%s does not publish port %s: %v", svc, port, p.Services[svc].Ports)
		}
	}
	for svc, target := range map[string]string{"redis": "/data", "node-red": "/data", "n8n": "/home/node/.n8n"} {
		vols := p.Services[svc].Volumes
		if !slices.ContainsFunc(vols, func(v string) bool {
			src, dst, _ := strings.Cut(v, ":")
			_, named := p.Volumes[src]
			return named && strings.TrimSuffix(dst, ":rw") == target
		}) {
			t.Errorf("%s has no named volume on %s: %v", svc, target, vols)
		}
	}
	for _, svc := range []string{"node-red", "n8n"} {
		if u := composeEnv(t, p.Services[svc].Environment)["FLOWGATE_URL"]; u == nil || *u != "http://flowgate:8080" {
			t.Errorf("%s FLOWGATE_URL = %s, want http://flowgate:8080", svc, showEnv(u))
		}
	}
}

func TestComposeRedisIsDurableAndChecked(t *testing.T) {
	r := loadCompose(t).Services["redis"]
	cmd := composeWords(r.Command)
	i := slices.Index(cmd, "--appendonly")
	if i < 0 || i+1 >= len(cmd) || cmd[i+1] != "yes" {
		t.Errorf("redis command %v lacks --appendonly yes", cmd)
	}
	if test := composeWords(r.Healthcheck["test"]); !slices.Contains(test, "ping") {
		t.Errorf("redis healthcheck test = %v, want a redis-cli ping", test)
	}
}

func TestComposeFlowgate(t *testing.T) {
	f := loadCompose(t).Services["flowgate"]
	switch b := f.Build.(type) {
	case string:
		if b != "." {
			t.Errorf("flowgate build = %q, want .", b)
		}
	case map[string]any:
		if b["context"] != "." {
			t.Errorf("flowgate build context = %v, want .", b["context"])
		}
	default:
		t.Errorf("flowgate is not built from the Dockerfile (build: %v)", f.Build)
	}
	e := composeEnv(t, f.Environment)
	want := map[string]string{"REDIS_URL": "redis://redis:6379/0", "NODERED_BASE_PATH": "/chord/ortho-prd"}
	for k, v := range want {
		if e[k] == nil || *e[k] != v {
			t.Errorf("flowgate %s = %s, want %s", k, showEnv(e[k]), v)
		}
	}
	for _, k := range append(composeSecrets, "MONITORING_USER") {
		if _, ok := e[k]; !ok {
			t.Errorf("flowgate environment lacks %s", k)
		}
	}
	for _, k := range composeSecrets {
		if v := e[k]; v == nil || !regexp.MustCompile(`^\$\{`+k+`:\?[^}]+\}$`).MatchString(*v) {
			t.Errorf("flowgate %s = %s, want ${%s:?message} (required, no default)", k, showEnv(v), k)
		}
	}
	// The Cloud9 choice comes from the environment only: never a default,
	// least of all the simulator (a real Redis books into it only when
	// CLOUD9_SIMULATOR=true says so).
	passThrough := regexp.MustCompile(`^\$\{([A-Z0-9_]+)\}$`)
	for _, k := range append(slices.Clone(cloud9Choice), cloud9Practice...) {
		v, ok := e[k]
		if !ok {
			t.Errorf("flowgate environment lacks %s (passed through from the host)", k)
			continue
		}
		if v != nil && (passThrough.FindStringSubmatch(*v) == nil || passThrough.FindStringSubmatch(*v)[1] != k) {
			t.Errorf("flowgate %s = %s, want it passed through from the host (%s: or ${%s}), no value of its own", k, showEnv(v), k, k)
		}
	}
	deps, _ := f.DependsOn.(map[string]any)
	redisDep, _ := deps["redis"].(map[string]any)
	if redisDep["condition"] != "service_healthy" {
		t.Errorf("flowgate depends_on = %v, want redis: condition service_healthy", f.DependsOn)
	}
	if test := strings.Join(composeWords(f.Healthcheck["test"]), " "); !strings.Contains(test, ":8080/readyz") {
		t.Errorf("flowgate healthcheck test = %q, want a probe of :8080/readyz", test)
	}
}

// composeResolvedOn is flowgate's compose environment as compose would
// resolve it on a host that sets the required secrets (each a dummy value)
// and host: literals as written, ${VAR:-default} as default, a
// pass-through (VAR: or ${VAR}) as the host's value or left out; what
// compose does not name never reaches flowgate.
func composeResolvedOn(t *testing.T, host map[string]string) map[string]string {
	t.Helper()
	required := regexp.MustCompile(`^\$\{([A-Z0-9_]+):\?[^}]*\}$`)
	withDefault := regexp.MustCompile(`^\$\{[A-Z0-9_]+:?-([^}]*)\}$`)
	out := map[string]string{}
	for k, v := range composeEnv(t, loadCompose(t).Services["flowgate"].Environment) {
		switch {
		case v == nil || *v == "${"+k+"}":
			if hv, ok := host[k]; ok {
				out[k] = hv
			}
		case strings.HasPrefix(*v, "${") && !required.MatchString(*v) && !withDefault.MatchString(*v):
		case required.MatchString(*v):
			out[k] = "dummy-" + strings.ToLower(k) + "-0123456789abcdef"
		case withDefault.MatchString(*v):
			out[k] = withDefault.FindStringSubmatch(*v)[1]
		default:
			out[k] = *v
		}
	}
	return out
}

// The compose stack's flowgate, given its secrets but no Cloud9 choice,
// refuses to start (exit 2, the one line saying how to choose); the host's
// CLOUD9_SIMULATOR=true makes the same configuration valid. Run on the
// binary itself, so that it holds where docker is not installed.
func TestComposeFlowgateNeedsACloud9Choice(t *testing.T) {
	run := func(args []string, host ...string) (string, int) {
		hm := map[string]string{}
		for _, kv := range host {
			k, v, _ := strings.Cut(kv, "=")
			hm[k] = v
		}
		env := composeResolvedOn(t, hm)
		if env["REDIS_URL"] == "" {
			t.Fatalf("compose's flowgate has no REDIS_URL: %v", env)
		}
		env["REDIS_URL"] = "redis://127.0.0.1:1/0" // nothing listens: only the configuration is judged
		env["FLOWGATE_ADDR"] = freeAddr(t)
		cmd := exec.Command(flowgateBinary(t), args...)
		cmd.Env = flowgatetest.Env()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run(nil)
	if code != 2 || strings.TrimSpace(out) != strings.SplitN(strings.TrimSpace(out), "\n", 2)[0] ||
		!strings.Contains(out, "CLOUD9_ENDPOINT: a real Redis needs a real Cloud9") || !strings.Contains(out, "CLOUD9_SIMULATOR=true") {
		t.Fatalf("compose's flowgate without a Cloud9 choice: exit %d, want 2 and one line naming the choice:\n%s", code, out)
	}
	out, _ = run([]string{"check"}, "CLOUD9_SIMULATOR=true")
	if !regexp.MustCompile(`configuration\s+OK`).MatchString(out) {
		t.Fatalf("compose's flowgate with CLOUD9_SIMULATOR=true: the configuration is not valid:\n%s", out)
	}
	// A real Cloud9: the host's credentials, provider and practice ids all
	// reach flowgate, whose configuration is then valid (Cloud9 itself is
	// not called here: the endpoint refuses, only the configuration counts).
	const practice = "0f0f0f0f-0000-4000-8000-0000000000c"
	realCloud9 := []string{"CLOUD9_ENDPOINT=http://127.0.0.1:1/GetData.ashx", "CLOUD9_CLIENT_ID=" + practice + "1",
		"CLOUD9_USERNAME=user", "CLOUD9_PASSWORD=secret", "CLOUD9_VENDOR_USERNAME=vendor",
		"CLOUD9_PROVIDER_GUID=" + practice + "2", "CLOUD9_LOCATION_GUID=" + practice + "3",
		"CLOUD9_SCHEDULE_VIEW_GUID=" + practice + "4", "CLOUD9_SCHEDULE_COLUMN_GUID=" + practice + "5",
		"CLOUD9_APPOINTMENT_TYPE_GUID=" + practice + "6", "PRACTICE_TIME_ZONE=America/Chicago"}
	out, _ = run([]string{"check"}, realCloud9...)
	if !regexp.MustCompile(`configuration\s+OK`).MatchString(out) {
		t.Fatalf("compose's flowgate with a real Cloud9's settings on the host: the configuration is not valid:\n%s", out)
	}
	// The start logs the effective settings before it reaches Redis
	// (which does not answer here: exit 1, a runtime failure, not 2).
	out, code = run(nil, realCloud9...)
	for _, kv := range realCloud9 {
		if k, _, _ := strings.Cut(kv, "="); k != "CLOUD9_PASSWORD" && !strings.Contains(out, kv) {
			t.Errorf("compose's flowgate did not get the host's %s (exit %d):\n%s", kv, code, out)
		}
	}
	if code != 1 {
		t.Errorf("compose's flowgate with a real Cloud9's settings: exit %d, want 1 (Redis unreachable), not 2 (configuration):\n%s", code, out)
	}
}

// No service carries a literal secret or a default for one: each secret-like
// variable is required (${VAR:?…}), taken from the host (${VAR}) or passed
// through without a value. VAR is the variable itself or another secret of
// the host (Grafana's admin password is MONITORING_PASSWORD).
func TestComposeHasNoCommittedSecrets(t *testing.T) {
	secretName := regexp.MustCompile(`SECRET|PASSWORD|TOKEN|_KEY$|^KEY`)
	fromEnv := regexp.MustCompile(`^\$\{([A-Z0-9_]+)(:?\?[^}]*)?\}$`)
	for name, svc := range loadCompose(t).Services {
		for k, v := range composeEnv(t, svc.Environment) {
			if !secretName.MatchString(k) || v == nil {
				continue
			}
			if m := fromEnv.FindStringSubmatch(*v); m == nil || (m[1] != k && !secretName.MatchString(m[1])) {
				t.Errorf("%s: %s = %q is a literal or has a default; use ${%s:?set %s}", name, k, *v, k, k)
			}
		}
	}
}

// TestComposeConfig validates the file with `docker compose config` where
// the compose plugin exists; elsewhere the YAML checks above are all.
func TestComposeConfig(t *testing.T) {
	compose := composeCommand()
	if compose == nil {
		t.Skip("docker compose (or docker-compose) not installed: `compose config` with and without the secrets not run; docker-compose.yml is checked as YAML by the other TestCompose* tests")
	}
	checkComposeConfig(t, compose, composeFile)
}

// checkComposeConfig runs `compose config -q` on file with the secrets
// (it passes) and without them (it fails: no default crept in).
func checkComposeConfig(t *testing.T, compose []string, file string) {
	t.Helper()
	if out, err := composeConfig(t, compose, file, true); err != nil {
		t.Fatalf("%s config -q: %v\n%s", strings.Join(compose, " "), err, out)
	}
	if out, err := composeConfig(t, compose, file, false); err == nil {
		t.Fatalf("compose config succeeded without the secrets set: a default must have crept in\n%s", out)
	}
}

// composeConfig runs `compose --env-file <empty> -f file config -q`,
// hermetic: an empty env file stands for the .env beside file (README's
// Going live writes one into the checkout, full of secrets, and compose
// would read it), and the environment is Env's (no setting or secret of
// the test process), plus DOCKER_CONFIG where set (where the compose
// plugin may live) and, withSecrets, dummy values of composeSecrets.
func composeConfig(t *testing.T, compose []string, file string, withSecrets bool) (string, error) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := slices.Concat(compose[1:], []string{"--env-file", empty, "-f", file, "config", "-q"})
	cmd := exec.CommandContext(ctx, compose[0], args...)
	cmd.Env = flowgatetest.Env()
	if v, ok := os.LookupEnv("DOCKER_CONFIG"); ok {
		cmd.Env = append(cmd.Env, "DOCKER_CONFIG="+v)
	}
	if withSecrets {
		for _, k := range composeSecrets {
			cmd.Env = append(cmd.Env, k+"=dummy-"+strings.ToLower(k))
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// A .env beside the compose file with every secret in it, and a hostile
// test environment, change nothing: the config still fails without the
// secrets the test gives and passes with them.
func TestComposeConfigIgnoresDotEnvAndShell(t *testing.T) {
	compose := composeCommand()
	if compose == nil {
		t.Skip("docker compose (or docker-compose) not installed: the .env and shell hermeticity of `compose config` not run")
	}
	setHostileEnv(t)
	dir := t.TempDir()
	data, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "docker-compose.yml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var dotenv strings.Builder
	for _, k := range append(composeSecrets, "CLOUD9_SIMULATOR") {
		dotenv.WriteString(k + "=from-dotenv-" + strings.ToLower(k) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(dotenv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	checkComposeConfig(t, compose, file)
}

// composeCommand is "docker compose" or "docker-compose", whichever works.
func composeCommand() []string {
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		args := append(append([]string(nil), c[1:]...), "version")
		if exec.Command(c[0], args...).Run() == nil {
			return c
		}
	}
	return nil
}

// --- Dockerfile ---

type dockerInstruction struct {
	cmd  string // upper case: FROM, RUN, USER, …
	args string
}

// dockerStages parses a Dockerfile into its stages' instructions (enough for
// these checks: comments dropped, line continuations joined).
func dockerStages(t *testing.T, path string) [][]dockerInstruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]dockerInstruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := dockerInstruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before FROM", path, in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	for _, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

func TestDockerfileBuildsSidecarStatically(t *testing.T) {
	stages := dockerStages(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}
	if from := stages[0][0].args; !strings.HasPrefix(from, "golang:1.26") {
		t.Errorf("build stage FROM %q, want golang:1.26", from)
	}
	var built bool
	for _, in := range stages[0] {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			built = true
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-o /flowgate", "./sidecar"} {
				if !strings.Contains(in.args, want) {
					t.Errorf("go build step %q lacks %q", in.args, want)
				}
			}
		}
	}
	if !built {
		t.Error("build stage has no go build step")
	}
}

func TestDockerfileRunsAsNonRoot(t *testing.T) {
	stages := dockerStages(t, "../Dockerfile")
	final := stages[len(stages)-1]
	var user, entrypoint string
	var exposed, copied bool
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "EXPOSE":
			exposed = exposed || strings.Fields(in.args)[0] == "8080"
		case "COPY":
			copied = copied || (strings.Contains(in.args, "--from=") && strings.Contains(in.args, "/flowgate"))
		}
	}
	name, _, _ := strings.Cut(user, ":")
	if name == "" || name == "root" || name == "0" {
		t.Errorf("final stage USER = %q, want a non-root user", user)
	}
	if entrypoint != `["/flowgate"]` {
		t.Errorf(`ENTRYPOINT = %s, want ["/flowgate"]`, entrypoint)
	}
	if !exposed {
		t.Error("final stage does not EXPOSE 8080")
	}
	if !copied {
		t.Error("final stage does not copy /flowgate from the build stage")
	}
}

// The .env that `flowgate env .env` writes holds every secret: git ignores
// it (and .env.* variants) wherever it lies, and the Docker build context
// leaves it out, so that `COPY . .` puts it into no image layer.
func TestDotEnvStaysOutOfGitAndImages(t *testing.T) {
	if _, err := exec.LookPath("git"); err == nil {
		for _, p := range []string{".env", ".env.production", "deploy/.env"} {
			cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
			cmd.Dir = ".."
			if err := cmd.Run(); err != nil {
				t.Errorf("git does not ignore %s (check-ignore: %v): add it to .gitignore", p, err)
			}
		}
	}
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, want := range []string{"**/.env", "**/.env.*"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %q: the build context (COPY . .) would carry the secrets", want)
		}
	}
}

//go:build chaos

package chaos

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// The one line a real Redis without a Cloud9 choice is refused with.
var noCloud9Line = regexp.MustCompile(`^flowgate: invalid configuration: CLOUD9_ENDPOINT: a real Redis needs a real Cloud9: ` +
	`set CLOUD9_ENDPOINT, CLOUD9_CLIENT_ID, CLOUD9_USERNAME and CLOUD9_PASSWORD \(with CLOUD9_PROVIDER_GUID and CLOUD9_VENDOR_USERNAME\), or CLOUD9_SIMULATOR=true\b`)

// securityAttempt is one configuration the binary must refuse: env over
// the drill's base, the command (none: start the server), the exit code
// and the one line it must answer with.
type securityAttempt struct {
	name string
	args []string
	env  map[string]string
	code int
	line *regexp.Regexp
}

// TestDrillSecurityConfig: the binary on a real redis-server with no
// CLOUD9_* credentials and no CLOUD9_SIMULATOR=true, in every form an
// operator may get there — REDIS_URL, cluster or sentinel settings, the
// variable empty, false, misspelt or in the wrong case, and the simulator
// chosen beside credentials — is refused before it serves or touches
// Redis: exit 2 with one line saying how to choose, nothing listening on
// its address, no key written; `flowgate check` FAILs the same way (exit
// 1). A control run with CLOUD9_SIMULATOR=true starts and is ready, so the
// refusals are about the choice and nothing else.
func TestDrillSecurityConfig(t *testing.T) {
	srv := rediscluster.StartServer(t)
	base := flowgateEnv(srv.URL(), map[string]string{"BUFFER_API_TOKEN": flowgatetest.TestBufferToken})
	cloud9 := map[string]string{"CLOUD9_ENDPOINT": "https://c9.example/GetData.ashx", "CLOUD9_CLIENT_ID": "c",
		"CLOUD9_USERNAME": "u", "CLOUD9_PASSWORD": "p", "CLOUD9_VENDOR_USERNAME": "v",
		"CLOUD9_PROVIDER_GUID": "256a8738-e093-4e71-a263-7fa95f7fae4e"}
	cluster := map[string]string{"REDIS_URL": "", "REDIS_CLUSTER_ADDRS": srv.Addr()}
	sentinel := map[string]string{"REDIS_URL": "", "REDIS_SENTINEL_ADDRS": srv.Addr(), "REDIS_SENTINEL_MASTER": "mymaster"}
	attempts := []securityAttempt{
		{name: "REDIS_URL, no Cloud9", code: 2, line: noCloud9Line},
		{name: "cluster, no Cloud9", env: cluster, code: 2, line: noCloud9Line},
		{name: "sentinel, no Cloud9", env: sentinel, code: 2, line: noCloud9Line},
		{name: "CLOUD9_SIMULATOR empty", env: map[string]string{"CLOUD9_SIMULATOR": ""}, code: 2, line: noCloud9Line},
		{name: "CLOUD9_SIMULATOR misspelt", env: map[string]string{"CLOUD9_SIM": "true", "FLOWGATE_CLOUD9_SIMULATOR": "true", "cloud9_simulator": "true"}, code: 2, line: noCloud9Line},
		{name: "CLOUD9_SIMULATOR=false", env: map[string]string{"CLOUD9_SIMULATOR": "false"}, code: 2,
			line: regexp.MustCompile(`^flowgate: invalid configuration: CLOUD9_ENDPOINT: required with CLOUD9_SIMULATOR=false: set CLOUD9_ENDPOINT, `)},
		{name: "CLOUD9_SIMULATOR=true beside credentials", env: merge(cloud9, map[string]string{"CLOUD9_SIMULATOR": "true"}), code: 2,
			line: regexp.MustCompile(`^flowgate: invalid configuration: CLOUD9_SIMULATOR: true contradicts the CLOUD9_\* credentials that are set`)},
		{name: "check, REDIS_URL, no Cloud9", args: []string{"check"}, code: 1, line: noCloud9Line},
		{name: "check, cluster, no Cloud9", args: []string{"check"}, env: cluster, code: 1, line: noCloud9Line},
	}
	accepted := 0
	for _, a := range attempts {
		addr := flowgatetest.FreeAddr(t)
		env := merge(base, a.env, map[string]string{"FLOWGATE_ADDR": addr})
		out, code := runFor(t, 30*time.Second, a.args, env)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(a.args) > 0 { // check: the problem on stderr, then the table
			lines = lines[:1]
		}
		ok := code == a.code && len(lines) == 1 && a.line.MatchString(lines[0])
		if len(a.args) > 0 {
			ok = ok && regexp.MustCompile(`(?m)^configuration\s+FAIL\b`).MatchString(out)
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = conn.Close()
			ok = false
			t.Errorf("%s: something listens on %s after the refusal", a.name, addr)
		}
		if !ok {
			accepted++
			t.Errorf("%s: exit %d, want %d and one line matching %s:\n%s", a.name, code, a.code, a.line, out)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	if n, err := rdb.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("Redis after the refusals: %d keys (%v), want none: a refused start must not touch it", n, err)
	}

	// The control: the same configuration with the simulator chosen on
	// purpose starts, announces the simulator and is ready.
	p := startFlowgate(t, merge(base, map[string]string{"CLOUD9_SIMULATOR": "true"}))
	if len(p.LogLines("CLOUD9_SIMULATOR=true")) == 0 {
		t.Errorf("control: the simulator warning does not name CLOUD9_SIMULATOR=true:\n%s", p.Logs.String())
	}
	t.Logf("control: CLOUD9_SIMULATOR=true ready in %s", p.ReadyIn.Round(time.Millisecond))
	summary(t, "security config", "attempts=%d accepted=%d", len(attempts), accepted)
}

// merge is the maps' union, later ones winning.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// runFor runs the binary with args and Env plus env (an empty value: left
// unset) to its end, at most limit, and returns its combined output and
// exit code (-1 when it had to be killed: a refused start never runs on).
func runFor(t *testing.T, limit time.Duration, args []string, env map[string]string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowgatetest.Binary(t), args...)
	cmd.Env = flowgatetest.Env()
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), -1
	}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

package test

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// configDefault reads a setting's default from docs/configuration.md,
// which sidecar's TestConfigurationDocIsCurrent keeps equal to the code.
func configDefault(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open("../docs/configuration.md")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "| `"+name+"` | `"); ok {
			def, _, _ := strings.Cut(rest, "`")
			return def
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s is not in docs/configuration.md", name)
	return ""
}

// The compose file's stop_grace_period covers flowgate's whole shutdown
// (sidecar/app.go Close): the readiness delay, the HTTP drain — which
// lets a booking under way at SIGTERM finish its Cloud9 write — and the
// closers' bound (ASYNQ_SHUTDOWN_TIMEOUT + 5 s: in-flight tasks finish or
// are re-queued), with a margin. Docker SIGKILLs at the grace period: at
// the former 30 s a booking's write was cut mid-call and Asynq never got
// to re-queue its tasks.
func TestComposeStopGraceCoversTheShutdown(t *testing.T) {
	t.Parallel()
	svc := loadCompose(t).Services["flowgate"]
	env := composeEnv(t, svc.Environment)
	setting := func(name string) time.Duration {
		v := configDefault(t, name)
		if e := env[name]; e != nil {
			v = *e
		}
		d, err := time.ParseDuration(v)
		require.NoError(t, err, name)
		return d
	}
	need := setting("READINESS_DRAIN_DELAY") + setting("HTTP_SHUTDOWN_TIMEOUT") + setting("ASYNQ_SHUTDOWN_TIMEOUT") + 5*time.Second
	require.NotEmpty(t, svc.StopGrace, "flowgate has no stop_grace_period: Docker's 10 s cuts the drain")
	grace, err := time.ParseDuration(svc.StopGrace)
	require.NoError(t, err)
	require.GreaterOrEqual(t, grace, need+10*time.Second, "stop_grace_period %s does not cover the shutdown (%s + 10 s)", grace, need)
}

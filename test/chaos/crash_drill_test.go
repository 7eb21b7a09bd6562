//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// TestDrillFlowgateSIGKILL: flowgate is SIGKILLed twice under the signed
// claim/ACK/FAIL load of 2,000 tasks and 8 workers (at a third and at two
// thirds of the tasks created) and a new process is started on the same
// Redis each time; the workers resend what was left uncertain to the new
// one. Afterwards nothing is lost (every task DONE or a dead letter) and
// nothing finished twice (one DONE event per task). A claim the killed
// process made but never answered is recovered by the heartbeat monitor
// (HEARTBEAT_STALE_AFTER 10s here), which counts a recovery, not an
// attempt: every task ends with exactly its planned FAILs as attempts.
func TestDrillFlowgateSIGKILL(t *testing.T) {
	srv := rediscluster.StartServer(t)
	env := taskDrillEnv(srv.URL())
	env["HEARTBEAT_MONITOR_SCHEDULE"] = "@every 1s"
	env["HEARTBEAT_STALE_AFTER"] = "10s"
	p := startFlowgate(t, env)
	tl := newTally(3 * time.Second)
	c := newClient(p.Base, 60*time.Second, tl)
	l := newTaskLoad(c, drillTasks, maxAttempts)
	l.recoveries = true

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	began := time.Now()
	wait := runLoad(ctx, l, 150*time.Millisecond)

	var restarts []string
	for k, at := range []int{drillTasks / 3, 2 * drillTasks / 3} {
		waitCreated(l, at, 60*time.Second)
		created, claimed := l.created.Load(), l.claimed.Load()
		end := tl.outage(fmt.Sprintf("SIGKILL %d", k+1))
		killedAt := time.Now()
		p.Kill()
		p = startFlowgate(t, env)
		c.setBase(p.Base)
		end()
		restarts = append(restarts, fmt.Sprintf("kill %d at %s (created %d, claimed %d), next process ready in %s",
			k+1, killedAt.Sub(began).Round(time.Millisecond), created, claimed, p.ReadyIn.Round(time.Millisecond)))
	}
	for _, r := range restarts {
		t.Log(r)
	}
	st := wait()
	waitReady(t, p, http.StatusOK, 10*time.Second)
	checkTaskDrill(t, "flowgate-sigkill", l, tl, st, time.Since(began), "flowgate SIGKILL ×2 under load, restarted on the same Redis")
}

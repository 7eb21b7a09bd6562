package test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/rediscluster"
)

// TestReadyzClusterMasterDown: what /readyz says with a Redis Cluster
// master unreachable (SIGSTOPped, under the cluster's 5 s node timeout, so
// the cluster keeps its layout and the other masters serve their slots):
// 200, ready, "checks":{"redis":"degraded"}, "degraded":
// "redis_master_unreachable", within its 1 s budget — every instance sees
// the same cluster, so a 503 would take them all out of the load balancer
// and turn a partial outage into a full one. With every master down it is
// 503 redis_unavailable; back to ok once the master answers again.
// Reproduce: test/run -run TestReadyzClusterMasterDown -v ./test/
func TestReadyzClusterMasterDown(t *testing.T) {
	if onCluster() {
		t.Skip("the cluster backend run starts its own cluster")
	}
	c := rediscluster.Start(t)
	p := startFlowgate(t, withSecrets(map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(c.Addrs(), ",")}))
	pids := make([]int, 0, 3)
	for _, addr := range c.Addrs() {
		pids = append(pids, serverPID(t, addr))
	}
	t.Cleanup(func() { // never leave a node stopped
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	readyz := func() (int, readinessAnswer, time.Duration) {
		t.Helper()
		began := time.Now()
		status, body := p.Get("/readyz")
		var r readinessAnswer
		require.NoError(t, json.Unmarshal([]byte(body), &r), body)
		return status, r, time.Since(began)
	}
	status, r, _ := readyz()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", r.Checks["redis"])
	require.Empty(t, r.Degraded)

	require.NoError(t, syscall.Kill(pids[1], syscall.SIGSTOP))
	status, r, took := readyz()
	t.Logf("one master of 3 stopped: %d %+v in %s", status, r, took.Round(time.Millisecond))
	require.Equal(t, http.StatusOK, status)
	require.True(t, r.Ready)
	require.Equal(t, "degraded", r.Checks["redis"])
	require.Equal(t, "redis_master_unreachable", r.Degraded)
	require.Less(t, took, 1500*time.Millisecond)
	// The warning is written before the answer, but read from the
	// process's output by another goroutine: it may land just after.
	require.Eventually(t, func() bool { return len(p.LogLines("readyz: redis cluster master unreachable")) > 0 },
		2*time.Second, 10*time.Millisecond, "the unreachable master is logged")

	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	}
	status, r, took = readyz()
	t.Logf("every master stopped: %d %+v in %s", status, r, took.Round(time.Millisecond))
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "redis_unavailable", r.Reason)
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	}
	require.Eventually(t, func() bool {
		status, r, _ := readyz()
		return status == http.StatusOK && r.Checks["redis"] == "ok" && r.Degraded == ""
	}, 10*time.Second, 100*time.Millisecond, "ready and not degraded once the masters answer")
}

type readinessAnswer struct {
	Ready    bool              `json:"ready"`
	Reason   string            `json:"reason"`
	Degraded string            `json:"degraded"`
	Checks   map[string]string `json:"checks"`
}

// serverPID is the process id of the redis-server at addr (INFO server).
func serverPID(t *testing.T, addr string) int {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	require.NoError(t, err)
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			require.NoError(t, err)
			return pid
		}
	}
	t.Fatalf("no process_id in INFO of %s", addr)
	return 0
}

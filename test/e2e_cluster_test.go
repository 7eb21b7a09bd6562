package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/shard"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// clusterE2E are the end-to-end tests of booking, tasks, holds and the
// buffer that TestE2EOnRedisCluster runs again on a 3-master Redis Cluster
// with REDIS_SHARDS=6. Each calls newTestRedis, so each gets a cluster of
// its own (an empty keyspace: their assertions count exactly).
var clusterE2E = []string{
	"TestBookingFlowOverHTTP",
	"TestTaskLifecycleOverHTTP",
	"TestTwoInstancesShareTheQueue",
	"TestDeadWorkerIsRecovered",
	"TestHoldsBothFaces",
	"TestHoldsBinaryCrossFaceAndCancel",
	"TestBufferMaxRetriesSettingThroughBinary",
}

// resultLine is a `go test -v` verdict line: "--- PASS: Name (1.23s)".
var resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)

// TestE2EOnRedisCluster runs clusterE2E in a child process of this test
// binary with FLOWGATE_TEST_BACKEND=cluster (the flowgate binary built
// once, handed down by flowgatetest.BinaryEnv), so the usual test command
// covers them on Redis Cluster with no step of its own, and logs what ran.
// Not parallel: the child runs its own tests two at a time, and the booking
// tests' timing windows want the cores. Reproduce one of them alone:
// FLOWGATE_TEST_BACKEND=cluster test/run -run '^TestHoldsBothFaces$' ./test/
func TestE2EOnRedisCluster(t *testing.T) {
	if onCluster() {
		t.Skip("already on the cluster backend (this is the child, or the whole run is on the cluster)")
	}
	rediscluster.SkipUnlessAvailable(t)
	bin := flowgatetest.Binary(t)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	pattern := "^(" + strings.Join(clusterE2E, "|") + ")$"
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", pattern, "-test.v", "-test.count=1", "-test.timeout=7m")
	cmd.Env = append(os.Environ(), backendEnv+"=cluster", flowgatetest.BinaryEnv+"="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	runErr := cmd.Run()
	took := time.Since(began)

	verdicts := map[string]string{}
	var summary []string
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := resultLine.FindStringSubmatch(sc.Text()); m != nil {
			verdicts[m[2]] = m[1]
			indent := strings.Repeat("  ", strings.Count(m[2], "/"))
			summary = append(summary, fmt.Sprintf("%s%-4s %s (%ss)", indent, m[1], m[2], m[3]))
		}
	}
	t.Logf("on a 3-master Redis Cluster, REDIS_SHARDS=%d (%s, child %s -test.run '%s'):\n%s",
		clusterShards, took.Round(100*time.Millisecond), filepath.Base(os.Args[0]), pattern, strings.Join(summary, "\n"))

	var bad []string
	for _, name := range clusterE2E {
		switch verdicts[name] {
		case "PASS":
		case "SKIP":
			t.Logf("%s skipped on the cluster", name)
		case "":
			bad = append(bad, name+" did not run")
		default:
			bad = append(bad, name+" "+verdicts[name])
		}
	}
	if runErr != nil || len(bad) > 0 {
		t.Fatalf("on the cluster: %v (child: %v); its output:\n%s", bad, runErr, out.String())
	}
}

// shardedKeys is what a subsystem's keys look like on the cluster after a
// workload with REDIS_SHARDS=6: per master, the shard indexes whose tags
// its keys carry, and whether keys under the one-tag layout were seen.
type shardedKeys struct {
	name     string
	set      shard.Set
	pattern  string // SCAN pattern of the sharded keys
	oneTag   string // SCAN pattern of the keys under the single tag
	perNode  map[string][]int
	unshared int
}

// TestClusterShardsSpreadOverMasters: with REDIS_SHARDS=6 on 3 masters,
// after a short workload through the binary (tasks created, claimed and
// ACKed, holds taken and released, buffer messages processed) each master
// holds keys of at least one shard of tasks, of holds and of the buffer.
// Until a subsystem honours REDIS_SHARDS its keys carry the one tag; the
// test then skips (after checking the subsystems that do), naming it.
func TestClusterShardsSpreadOverMasters(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	schedule, err := filepath.Abs("../orchestrator/holds/availability/testdata/schedule.json")
	require.NoError(t, err)
	env := withSecrets(map[string]string{
		"REDIS_URL": flowgatetest.ClusterURL(c.Addrs(), clusterShards), "HOLDS_SCHEDULE_FILE": schedule, "LOG_LEVEL": "warn",
	})
	env["BUFFER_API_TOKEN"] = flowgatetest.TestBufferToken // bufferCall's
	p := startFlowgate(t, env)
	ctx := context.Background()

	// Tasks: 48 encounters (the home shard is the encounter's), half
	// claimed and ACKed.
	a := newAPI(t, p, newSigner())
	const nTasks = 48
	for i := range nTasks {
		a.create(fmt.Sprintf("enc-spread-%d", i), `{"n":1}`)
	}
	for i := 0; i < nTasks/2; i++ {
		tk := a.claimNext(fmt.Sprintf("vm-%d", i))
		a.hook("/ack", fmt.Sprintf(`{"queue_id":%q,"encounter_id":%q,"experityActions":{"ok":true}}`, tk.QueueID, tk.EncounterID))
	}

	// Buffer: 48 sse.emit messages, each with its own idempotency key.
	var ids []string
	for i := range 48 {
		var r contracts.BufferEnqueueResponse
		require.Equal(t, http.StatusAccepted, bufferCall(t, p, "POST", "/api/buffer/enqueue", map[string]any{
			"type": "sse.emit", "idempotencyKey": fmt.Sprintf("spread-%d", i),
			"payload": map[string]any{"channel": "spread", "event": "e", "data": map[string]any{"n": i}}}, &r))
		ids = append(ids, r.MessageID)
	}
	for _, id := range ids {
		var m contracts.BufferMessage
		require.Eventually(t, func() bool {
			bufferCall(t, p, "GET", "/api/buffer/messages/"+id, nil, &m)
			return m.State == contracts.BufferCompleted
		}, 20*time.Second, 20*time.Millisecond, "message %s not completed", id)
	}

	// Holds: one per client (the quota index lives in the client's shard),
	// each on its own free (specialist, start); the keys are read while
	// they live, then every hold is released.
	var holdIDs, clients []string
	for d := 0; len(holdIDs) < 24 && d < 28; d++ {
		day := time.Now().AddDate(0, 0, 1+d).Format(time.DateOnly)
		for _, s := range freeSlotsMaybe(t, p.Base, day) {
			for _, sp := range s.Free {
				if len(holdIDs) == 24 {
					break
				}
				client := fmt.Sprintf("spread-client-%d", len(holdIDs))
				holdIDs = append(holdIDs, postHold(t, p.Base, client, sp, s.Start))
				clients = append(clients, client)
			}
		}
	}
	require.Len(t, holdIDs, 24, "not enough free slots in the schedule file")

	subsystems := []*shardedKeys{
		{name: "tasks", set: shard.Must("tasks", clusterShards), pattern: "flowgate:{tasks:*", oneTag: "flowgate:{tasks}:*"},
		{name: "holds", set: shard.Must("holds", clusterShards), pattern: "{holds:*", oneTag: "{holds}:*"},
		{name: "buffer", set: shard.Must("buffer", clusterShards), pattern: "flowgate:buffer:{buffer:*", oneTag: "flowgate:buffer:{buffer}:*"},
	}
	for _, s := range subsystems {
		s.scan(t, ctx, c)
	}
	for i, id := range holdIDs {
		binaryRelease(t, p.Base, clients[i], id)
	}

	var notYet []string
	for _, s := range subsystems {
		if len(s.perNode) == 0 {
			t.Logf("%s: no keys under %s (%d under the one tag %s): not sharded yet", s.name, s.pattern, s.unshared, s.oneTag)
			notYet = append(notYet, s.name)
			continue
		}
		var lines []string
		for _, addr := range c.Addrs() {
			lines = append(lines, fmt.Sprintf("%s shards %v", addr, s.perNode[addr]))
			if len(s.perNode[addr]) == 0 {
				t.Errorf("%s: master %s holds no key of any of the %d shards", s.name, addr, clusterShards)
			}
		}
		t.Logf("%s: %s", s.name, strings.Join(lines, "; "))
	}
	if len(notYet) > 0 {
		t.Skipf("REDIS_SHARDS=%d not honoured yet by %v: their keys carry one hash tag (the spread is checked once they do)",
			clusterShards, notYet)
	}
}

// scan reads every master's keys of s: which shard tags they carry, and
// how many carry the one tag.
func (s *shardedKeys) scan(t *testing.T, ctx context.Context, c *rediscluster.Cluster) {
	t.Helper()
	counts, err := c.KeysOnMaster(ctx, s.oneTag)
	require.NoError(t, err)
	for _, n := range counts {
		s.unshared += n
	}
	s.perNode = map[string][]int{}
	for _, addr := range c.Addrs() {
		cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		iter := cl.Scan(ctx, 0, s.pattern, 1000).Iterator()
		seen := map[int]bool{}
		for iter.Next(ctx) {
			key := iter.Val()
			open := strings.IndexByte(key, '{')
			end := strings.IndexByte(key, '}')
			i := -1
			if open >= 0 && end > open {
				i = s.set.Index(key[open : end+1])
			}
			if i >= 0 {
				seen[i] = true
			} else {
				t.Errorf("%s: key %s on %s carries no tag of REDIS_SHARDS=%d", s.name, key, addr, clusterShards)
			}
		}
		require.NoError(t, iter.Err())
		_ = cl.Close()
		for i := range seen {
			s.perNode[addr] = append(s.perNode[addr], i)
		}
		sort.Ints(s.perNode[addr])
		if len(s.perNode[addr]) == 0 {
			delete(s.perNode, addr)
		}
	}
	if len(s.perNode) > 0 {
		for _, addr := range c.Addrs() {
			if _, ok := s.perNode[addr]; !ok {
				s.perNode[addr] = nil
			}
		}
	}
}

// freeSlotsMaybe is the day's consultation slots of the schedule file's
// binary (freeSlots without its minimum: a day may have none).
func freeSlotsMaybe(t *testing.T, base, day string) []boardSlot {
	t.Helper()
	resp, err := http.Get(base + "/v1/appointment-types/" + boardType + "/timeslots?from=" + day + "&days=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Slots []boardSlot `json:"slots"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Slots
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// checkEnv is a real-Redis configuration pointing at a Cloud9 simulator
// that accepts only the credentials user/secret.
func checkEnv(t *testing.T) map[string]string {
	t.Helper()
	sim := cloud9sim.New(cloud9sim.Config{ClientID: "0f0f0f0f-0000-4000-8000-000000000001", Username: "user", Password: "secret",
		Orthodontist: cloud9sim.Orthodontist{GUID: checkProviderGUID, Name: "Dr. Check"}})
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	env := realRedisEnv(t)
	delete(env, "CLOUD9_SIMULATOR") // a real Cloud9 (the simulator over HTTP) instead
	env["MONITORING_USER"], env["MONITORING_PASSWORD"] = "ops", "ops-password"
	env["CLOUD9_ENDPOINT"], env["CLOUD9_CLIENT_ID"] = url, "0f0f0f0f-0000-4000-8000-000000000001"
	env["CLOUD9_USERNAME"], env["CLOUD9_PASSWORD"] = "user", "secret"
	env["CLOUD9_VENDOR_USERNAME"], env["CLOUD9_PROVIDER_GUID"] = "flowgate", checkProviderGUID
	return env
}

// checkProviderGUID is the practice's provider in checkEnv's Cloud9.
const checkProviderGUID = "0f0f0f0f-0000-4000-8000-0000000000aa"

// redisClientFor is a client on url, closed when the test ends.
func redisClientFor(t *testing.T, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func check(t *testing.T, env map[string]string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run([]string{"check"}, envOf(env), &out, &errb)
	return code, out.String(), errb.String()
}

// row is the table line of one check.
func row(t *testing.T, table, name string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, name+"  ") {
			return l
		}
	}
	t.Fatalf("no %q row in:\n%s", name, table)
	return ""
}

func TestCheckPassesAGoodConfiguration(t *testing.T) {
	code, out, errs := check(t, checkEnv(t))
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Contains(t, row(t, out, "configuration"), "OK")
	require.Regexp(t, `OK\s+reachable \(url\), redis \S+, mode standalone`, row(t, out, "redis"))
	require.Contains(t, row(t, out, "redis persistence"), "") // OK or WARN: the test server's own setting
	require.Contains(t, row(t, out, "cloud9"), "OK")
	require.Contains(t, row(t, out, "cloud9"), "credentials accepted")
	require.Contains(t, row(t, out, "cloud9 location"), "CDH Allegheny 202")
	require.Regexp(t, `credentials accepted \(GetLocations: 1 locations: "CDH Allegheny 202" `+cloud9sim.DefaultLocationGUID, row(t, out, "cloud9"))
	require.Regexp(t, `OK\s+CLOUD9_PROVIDER_GUID `+checkProviderGUID+` set`, row(t, out, "cloud9 provider"))
	require.Contains(t, row(t, out, "ops prefix flowgate:"), "OK")
	require.Contains(t, row(t, out, "redis shards"), "OK")
	require.Regexp(t, `OK\s+task ledger library `+tasks.LibraryName(), row(t, out, "redis functions"))
	require.Regexp(t, `WARN\s+CLOUD9_SCHEDULE_VIEW_GUID, CLOUD9_SCHEDULE_COLUMN_GUID, CLOUD9_APPOINTMENT_TYPE_GUID left at flowgate's defaults`,
		row(t, out, "cloud9 practice ids"), "a real Cloud9 with the sandbox's ids")

	env := checkEnv(t)
	env["CLOUD9_SCHEDULE_VIEW_GUID"], env["CLOUD9_SCHEDULE_COLUMN_GUID"] = "0f0f0f0f-0000-4000-8000-0000000000b1", "0f0f0f0f-0000-4000-8000-0000000000b2"
	env["CLOUD9_APPOINTMENT_TYPE_GUID"] = "0f0f0f0f-0000-4000-8000-0000000000b3"
	code, out, errs = check(t, env)
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Regexp(t, `OK\s+schedule view, chair and appointment type set`, row(t, out, "cloud9 practice ids"))
}

// check names the function libraries an upgrade left behind, so that the
// operator can delete them once no instance of that version runs.
func TestCheckNamesStaleFunctionLibraries(t *testing.T) {
	env := checkEnv(t)
	rdb := redisClientFor(t, env["REDIS_URL"])
	ctx := context.Background()
	const old = "flowgate_tasks_00000000check0001"
	require.NoError(t, rdb.FunctionLoad(ctx, "#!lua name="+old+"\nredis.register_function('fgt_00000000check0001_noop', function() return 1 end)").Err())
	t.Cleanup(func() { _ = rdb.FunctionDelete(ctx, old).Err() })
	code, out, errs := check(t, env)
	require.Equal(t, 0, code, "%s\n%s", out, errs)
	require.Regexp(t, `WARN\s+task ledger library `+tasks.LibraryName()+` .*1 of other flowgate versions \(`+old+`\).*FUNCTION DELETE`,
		row(t, out, "redis functions"))
}

// check counts, under each ops prefix, the keys redisSet may write and
// the caches redisDelete may clear; flowgate's state is neither.
func TestCheckCountsWhatOpsMayTouch(t *testing.T) {
	env := checkEnv(t)
	rdb := redisClientFor(t, env["REDIS_URL"])
	for _, k := range []string{"flowgate:ops:note", "flowgate:{slots}:t:LOC:1", "flowgate:{tasks}:seq", "flowgate:redis-shards"} {
		require.NoError(t, rdb.Set(context.Background(), k, "1", 0).Err())
	}
	_, out, _ := check(t, env)
	require.Regexp(t, `OK\s+of \d+ keys, 1 writable and 1 more deletable \(caches\) through /ops`, row(t, out, "ops prefix flowgate:"))
}

// check reports a REDIS_SHARDS the data in Redis was not written with,
// and records nothing.
func TestCheckFailsAnotherShardCount(t *testing.T) {
	env := checkEnv(t)
	env["REDIS_SHARDS"] = "6"
	rdb := redisClientFor(t, env["REDIS_URL"])
	require.NoError(t, rdb.Set(context.Background(), "flowgate:{tasks}:seq", "7", 0).Err())
	code, out, _ := check(t, env)
	require.NotEqual(t, 0, code)
	require.Regexp(t, `FAIL\s+.*REDIS_SHARDS=1 \(flowgate:\{tasks\}:seq\)`, row(t, out, "redis shards"))
	require.Zero(t, rdb.Exists(context.Background(), shardsKey).Val())
}

func TestCheckFailsBadCloud9Credentials(t *testing.T) {
	env := checkEnv(t)
	env["CLOUD9_PASSWORD"] = "wrong"
	code, out, _ := check(t, env)
	require.Equal(t, 1, code, out)
	require.Contains(t, row(t, out, "cloud9"), "FAIL")
	require.Contains(t, row(t, out, "redis"), "OK", "the other checks still run")
}

func TestCheckFailsAStoppedRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	env := checkEnv(t)
	env["REDIS_URL"] = "redis://" + addr + "/0"
	code, out, _ := check(t, env)
	require.Equal(t, 1, code, out)
	require.Contains(t, row(t, out, "redis"), "FAIL")
	require.Contains(t, row(t, out, "redis"), "not reachable")
	require.Contains(t, row(t, out, "cloud9"), "OK", "Cloud9 is still checked")
}

func TestCheckReportsEveryConfigurationProblem(t *testing.T) {
	env := checkEnv(t)
	env["LOG_FORMAT"], env["VT_TIMEOUT"] = "xml", "soon"
	code, out, errs := check(t, env)
	require.Equal(t, 1, code)
	require.Contains(t, row(t, out, "configuration"), "FAIL")
	require.Contains(t, errs, "LOG_FORMAT")
	require.Contains(t, errs, "VT_TIMEOUT")
}

func TestCheckRefusesAPrefixOverAsynqsKeys(t *testing.T) {
	env := checkEnv(t)
	env["OPS_KEY_PREFIXES"] = "flowgate:,asynq:"
	code, out, _ := check(t, env)
	require.Equal(t, 1, code, out)
	require.Contains(t, row(t, out, "ops prefix asynq:"), "FAIL")
}

// A location Cloud9 does not know FAILs, naming those it answered so that
// the operator can pick one.
func TestCheckNamesTheLocationsCloud9Answered(t *testing.T) {
	env := checkEnv(t)
	env["CLOUD9_LOCATION_GUID"] = "0f0f0f0f-0000-4000-8000-0000000000bb"
	code, out, _ := check(t, env)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `FAIL\s+CLOUD9_LOCATION_GUID 0f0f0f0f-0000-4000-8000-0000000000bb is not among the 1 locations Cloud9 answered: "CDH Allegheny 202" `+
		cloud9sim.DefaultLocationGUID, row(t, out, "cloud9 location"))
}

// The simulator's made-up orthodontist as CLOUD9_PROVIDER_GUID of a real
// Cloud9 is a copy-paste from a trial: check warns.
func TestCheckWarnsTheSimulatorsProvider(t *testing.T) {
	env := checkEnv(t)
	env["CLOUD9_PROVIDER_GUID"] = cloud9sim.DefaultOrthodontistGUID
	code, out, _ := check(t, env)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `WARN\s+CLOUD9_PROVIDER_GUID .*simulator's made-up orthodontist`, row(t, out, "cloud9 provider"))
}

// A Redis that answers but refuses the password is told from one that
// does not answer: NOAUTH and WRONGPASS name the credentials.
func TestCheckTellsRedisAuthFromUnreachable(t *testing.T) {
	for _, reply := range []string{"-NOAUTH Authentication required.", "-WRONGPASS invalid username-password pair or user is disabled."} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		go refuseEveryCommand(ln, reply)
		env := checkEnv(t)
		env["REDIS_URL"] = "redis://:not-the-password@" + ln.Addr().String() + "/0"
		code, out, _ := check(t, env)
		require.Equal(t, 1, code, out)
		line := row(t, out, "redis")
		require.Regexp(t, `FAIL\s+redis \(url\) is reachable but refused the credentials: `+strings.Fields(reply[1:])[0], line)
		require.NotContains(t, line, "not reachable")
		require.NotContains(t, out, "not-the-password")
	}
}

// refuseEveryCommand answers each RESP command on ln's connections with
// reply, as a Redis with requirepass does before AUTH.
func refuseEveryCommand(ln net.Listener, reply string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
				if line[0] != '*' {
					continue
				}
				for i := 0; i < 2*n; i++ { // $len and the argument of each
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
				}
				if _, err := c.Write([]byte(reply + "\r\n")); err != nil {
					return
				}
			}
		}()
	}
}

// check fails a replica for REDIS_URL, REDIS_MIN_REPLICAS_ACK above the replicas the master has
// (the server would answer every write 503 not_replicated), and a Redis
// that may evict keys (maxmemory with a policy other than noeviction: it
// would drop queued bookings and tasks silently). The test's Redis has no
// replica and no maxmemory; the eviction case runs a redis-server of its
// own.
func TestCheckFailsReplicasAndEviction(t *testing.T) {
	env := checkEnv(t)
	code, out, _ := check(t, env)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `OK\s+(maxmemory-policy noeviction|no maxmemory)`, row(t, out, "redis eviction"))
	require.NotContains(t, out, "redis replicas", "no replica check without REDIS_MIN_REPLICAS_ACK")

	env["REDIS_MIN_REPLICAS_ACK"] = "1"
	code, out, _ = check(t, env)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `FAIL\s+REDIS_MIN_REPLICAS_ACK=1 but the master has 0 connected replica`, row(t, out, "redis replicas"))
	delete(env, "REDIS_MIN_REPLICAS_ACK")

	env["REDIS_URL"] = startRedisServer(t, "--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru")
	code, out, _ = check(t, env)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `FAIL\s+maxmemory 52428800 with maxmemory-policy allkeys-lru: .*noeviction`, row(t, out, "redis eviction"))

	// A replica refuses the writes a start makes at once: check fails it;
	// its master, with the replica connected, meets REDIS_MIN_REPLICAS_ACK=1.
	master := startRedisServer(t)
	host, port, _ := strings.Cut(strings.TrimPrefix(master, "redis://"), ":")
	env["REDIS_URL"] = startRedisServer(t, "--replicaof", host, port)
	code, out, _ = check(t, env)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `FAIL\s+a read-only replica \(role slave, its master 127.0.0.1:`+port+`\): .*master`, row(t, out, "redis role"))
	env["REDIS_URL"], env["REDIS_MIN_REPLICAS_ACK"] = master, "1"
	rdb := redisClientFor(t, master)
	require.Eventually(t, func() bool {
		info, err := rdb.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1")
	}, 10*time.Second, 50*time.Millisecond)
	code, out, _ = check(t, env)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "redis role")
	require.Regexp(t, `OK\s+1 connected replica\(s\) for REDIS_MIN_REPLICAS_ACK=1`, row(t, out, "redis replicas"))
}

// On a Redis Cluster check asks every master for its replicas: one
// master short of REDIS_MIN_REPLICAS_ACK fails it.
func TestCheckCountsEveryClusterMastersReplicas(t *testing.T) {
	rediscluster.SkipUnlessAvailable(t)
	for _, replicas := range []int{0, 1} {
		cl := rediscluster.StartWithReplicas(t, replicas)
		env := checkEnv(t)
		delete(env, "REDIS_URL")
		env["REDIS_CLUSTER_ADDRS"], env["REDIS_MIN_REPLICAS_ACK"] = strings.Join(cl.Addrs(), ","), "1"
		code, out, _ := check(t, env)
		if replicas == 0 {
			require.Equal(t, 1, code, out)
			require.Regexp(t, `FAIL\s+REDIS_MIN_REPLICAS_ACK=1 but master 127.0.0.1:\d+ has 0 connected replica`, row(t, out, "redis replicas"))
			continue
		}
		require.Equal(t, 0, code, out)
		require.Regexp(t, `OK\s+every master has at least 1 connected replica\(s\) for REDIS_MIN_REPLICAS_ACK=1`, row(t, out, "redis replicas"))
	}
}

// startRedisServer starts a redis-server of the test's own, without
// persistence unless args say otherwise, and answers its URL.
func startRedisServer(t *testing.T, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, args...)
	srv := exec.Command("redis-server", args...)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	url := "redis://127.0.0.1:" + strconv.Itoa(port)
	rdb := redisClientFor(t, url)
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil }, 10*time.Second, 20*time.Millisecond)
	return url
}

// A start on a Redis that would lose or drop data logs what check would
// say of it, one warning each; on a Redis that keeps everything it logs
// none of them.
func TestStartWarnsOfARedisThatLosesData(t *testing.T) {
	warnings := func(env map[string]string) string {
		var logs bytes.Buffer
		startMainLogging(t, env, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
		return logs.String()
	}
	env := realRedisEnv(t)
	env["REDIS_URL"] = startRedisServer(t, "--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru")
	logs := warnings(env)
	require.Regexp(t, `level=WARN msg="redis persistence: OFF \(no AOF, no RDB\): a Redis restart loses every queued booking.*check=WARN see="flowgate check"`, logs)
	require.Regexp(t, `level=WARN msg="redis eviction: maxmemory 52428800 with maxmemory-policy allkeys-lru: .*noeviction" check=FAIL`, logs)
	require.NotContains(t, logs, "redis replicas")

	env["REDIS_URL"] = startRedisServer(t, "--appendonly", "yes")
	logs = warnings(env)
	require.NotContains(t, logs, "redis persistence")
	require.NotContains(t, logs, "redis eviction")
}

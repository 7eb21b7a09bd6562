package tasks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// redisErr is an error reply as go-redis gives it (anything with a
// RedisError method).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// Error replies as Redis 7.0 writes them (the script suffixes copied from a
// real server): the prefix decides, not the word "script".
func TestStoreErrorCode(t *testing.T) {
	t.Parallel()
	const suffix = " script: 88c923858e73954cede057e8a25f614a3552b177, on @user_script:1."
	for msg, want := range map[string]contracts.Code{
		// Raised by redis.call inside our scripts: the store, not the script.
		"OOM command not allowed when used memory > 'maxmemory'." + suffix:                                          contracts.CodeUnavailable,
		"READONLY You can't write against a read only replica." + suffix:                                            contracts.CodeUnavailable,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'." + suffix:                 contracts.CodeUnavailable,
		"LOADING Redis is loading the dataset in memory" + suffix:                                                   contracts.CodeUnavailable,
		"CLUSTERDOWN The cluster is down" + suffix:                                                                  contracts.CodeUnavailable,
		"TRYAGAIN Multiple keys request during rehashing of slot" + suffix:                                          contracts.CodeUnavailable,
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk." + suffix: contracts.CodeUnavailable,
		"NOREPLICAS Not enough good replicas to write." + suffix:                                                    contracts.CodeUnavailable,
		// Refusing the EVAL itself.
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.": contracts.CodeUnavailable,
		"NOSCRIPT No matching script. Please use EVAL.":                                            contracts.CodeUnavailable,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.":         contracts.CodeUnavailable,
		"LOADING Redis is loading the dataset in memory":                                           contracts.CodeUnavailable,
		"ERR max number of clients reached":                                                        contracts.CodeUnavailable,
		// The script is wrong.
		"ERR user_script:1: attempt to index local 'x' (a nil value)" + suffix:                   contracts.CodeInternal,
		"ERR Unknown Redis command called from script" + suffix:                                  contracts.CodeInternal,
		"WRONGTYPE Operation against a key holding the wrong kind of value" + suffix:             contracts.CodeInternal,
		"ERR Error running script (call to f_0123): @user_script:1: user_script:1: bad argument": contracts.CodeInternal, // Redis 6
	} {
		require.Equal(t, want, storeErrorCode(redisErr(msg)), msg)
		require.Equal(t, want, storeErrorCode(fmt.Errorf("pipeline: %w", redisErr(msg))), "wrapped: %s", msg)
		require.Equal(t, want, contracts.ErrorCode(storeError("tasks.Test", redisErr(msg))), msg)
	}
	for _, err := range []error{context.DeadlineExceeded, context.Canceled, errors.New("dial tcp: connection refused"),
		errors.New("script-looking text, but not a Redis reply")} {
		require.Equal(t, contracts.CodeUnavailable, storeErrorCode(err), err.Error())
	}
}

// A script that fails by itself on a real Redis is a bug: internal.
func TestBrokenScriptIsInternal(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	l, err := New(db.Client, Config{KeyPrefix: "test"})
	require.NoError(t, err)
	for _, body := range []string{
		`return redis.call('NOSUCHCMD')`,
		`local x = nil; return x.y`,
		`local c = begin(KEYS, ARGV); redis.call('SET', c.base .. 'str', 'x'); return redis.call('HGET', c.base .. 'str', 'f')`,
	} {
		_, err := l.run(context.Background(), "tasks.Test", newProc(lua.prelude, "test", body), 0, time.Now(), l.ks[0].scriptKeys())
		var e *contracts.Error
		require.ErrorAs(t, err, &e, body)
		require.Equal(t, contracts.CodeInternal, e.Code, "%s: %v", body, err)
		require.Equal(t, "task store script failed", e.Message)
	}
	require.NoError(t, db.Client.Del(context.Background(), l.ks[0].base+"str").Err())
}

// A real Redis that refuses writes — out of memory, or a replica after a
// failover — makes a transition unavailable (503, try again), not internal.
// It needs a redis-server binary to start a private server.
func TestRefusedWritesAreUnavailable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server binary")
	}
	for name, args := range map[string][]string{
		"OOM":      {"--maxmemory", "1"},
		"READONLY": {"--replicaof", "127.0.0.1", "1"}, // a master that never answers
	} {
		rdb := privateRedis(t, bin, args...)
		l, err := New(rdb, Config{KeyPrefix: "test"})
		require.NoError(t, err)
		_, err = l.Create(context.Background(), contracts.CreateTaskRequest{EncounterID: "enc-1"})
		var e *contracts.Error
		require.ErrorAs(t, err, &e, name)
		require.Equal(t, contracts.CodeUnavailable, e.Code, "%s: %v", name, err)
		require.Contains(t, err.Error(), name+" ")
		require.Contains(t, err.Error(), "@user_script", "raised inside the script")
	}
}

// privateRedis starts redis-server with args on a free port, for this test
// only.
func privateRedis(t *testing.T, bin string, args ...string) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil }, 5*time.Second, 20*time.Millisecond,
		"redis-server on port %d", port)
	return rdb
}

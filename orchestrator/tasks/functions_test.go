package tasks_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// callNames records the name of every command a client sends.
type callNames struct {
	mu    sync.Mutex
	names map[string]int
}

func (c *callNames) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *callNames) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *callNames) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.names[cmd.Name()]++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

// privateServer starts a redis-server of the test's own: these tests load
// and flush functions, which are server-wide.
func privateServer(t *testing.T) *rediscluster.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	return rediscluster.StartServer(t)
}

// recordedClient is a client on opt whose commands' names are counted.
func recordedClient(t *testing.T, opt *redis.Options) (*redis.Client, *callNames) {
	t.Helper()
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	names := &callNames{names: map[string]int{}}
	rdb.AddHook(names)
	return rdb, names
}

func (c *callNames) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[name]
}

// lifecycle takes one task through create, claim, heartbeat, FAIL,
// requeue, claim and ACK.
func lifecycle(t *testing.T, b *bundle, enc string) {
	t.Helper()
	task := b.create(t, enc, contracts.PriorityNormal)
	got := b.claimOne(t, "vm-1")
	require.Equal(t, task.QueueID, got.QueueID)
	_, err := b.l.Heartbeat(b.ctx, task.QueueID, contracts.HeartbeatRequest{WorkerID: "vm-1"})
	require.NoError(t, err)
	failed, err := b.l.Fail(b.ctx, contracts.FailRequest{QueueID: task.QueueID, EncounterID: enc, WorkerID: "vm-1", ErrorMessage: "boom"})
	require.NoError(t, err)
	require.True(t, failed.Retry)
	_, err = b.l.Requeue(b.ctx, task.QueueID, contracts.RequeueRequest{Priority: contracts.PriorityHigh})
	require.NoError(t, err)
	require.Equal(t, task.QueueID, b.claimOne(t, "vm-2").QueueID)
	done, err := b.l.Ack(b.ctx, contracts.AckRequest{QueueID: task.QueueID, EncounterID: enc, WorkerID: "vm-2",
		ExperityActions: []byte(`{"codes":["99213"]}`)})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusDone, done.Task.Status)
	require.Equal(t, 1, done.Task.Attempts)
}

// On Redis 7 the ledger loads its scripts as one function library and
// calls them with FCALL; a server that lost its functions (FUNCTION FLUSH,
// as a restart without persistence) gets the library again on the next
// call, which then succeeds.
func TestScriptsRunAsFunctions(t *testing.T) {
	t.Parallel()
	srv := privateServer(t)
	rdb, names := recordedClient(t, &redis.Options{Addr: srv.Addr()})
	b := setupOn(t, rdb)

	mode, err := b.l.LoadScripts(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "functions", mode.Mode)
	libs, err := rdb.FunctionList(b.ctx, redis.FunctionListQuery{LibraryNamePattern: "flowgate_tasks_*"}).Result()
	require.NoError(t, err)
	require.Len(t, libs, 1)
	require.Equal(t, "library "+libs[0].Name, mode.Reason)
	require.NotEmpty(t, libs[0].Functions)

	lifecycle(t, b, "enc-1")
	require.Positive(t, names.count("fcall"))
	require.Zero(t, names.count("evalsha")+names.count("eval"), "every ledger script ran as a function")

	// The server loses its functions: the next call loads them again.
	require.NoError(t, rdb.FunctionFlush(b.ctx).Err())
	lifecycle(t, b, "enc-2")
	libs, err = rdb.FunctionList(b.ctx, redis.FunctionListQuery{LibraryNamePattern: "flowgate_tasks_*"}).Result()
	require.NoError(t, err)
	require.Len(t, libs, 1, "the library is back")
	require.Zero(t, names.count("evalsha")+names.count("eval"))

	// A second ledger (another instance, same version) finds it loaded.
	other, err := tasks.New(rdb, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	mode, err = other.LoadScripts(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "functions", mode.Mode)
}

// A Redis that refuses FUNCTION (an ACL without it) gets the same scripts
// as EVALSHA, and says why.
func TestScriptsRunAsEvalWhereFunctionIsRefused(t *testing.T) {
	t.Parallel()
	srv := privateServer(t)
	admin, _ := recordedClient(t, &redis.Options{Addr: srv.Addr()})
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-function").Err())
	rdb, names := recordedClient(t, &redis.Options{Addr: srv.Addr(), Username: "app", Password: "pw"})
	b := setupOn(t, rdb)

	mode, err := b.l.LoadScripts(ctx)
	require.NoError(t, err)
	require.Equal(t, "eval", mode.Mode)
	require.Contains(t, mode.Reason, "NOPERM")
	lifecycle(t, b, "enc-1")
	require.Zero(t, names.count("fcall"))
	require.Positive(t, names.count("evalsha"))
}

// A ledger that is never told to load its scripts decides on its first
// call; Redis unreachable then decides nothing (the call fails as
// unavailable, and the next one tries again).
func TestScriptModeIsDecidedOnFirstCall(t *testing.T) {
	t.Parallel()
	srv := privateServer(t)
	rdb, names := recordedClient(t, &redis.Options{Addr: srv.Addr()})
	b := setupOn(t, rdb)
	lifecycle(t, b, "enc-1")
	require.Positive(t, names.count("fcall"))

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	l, err := tasks.New(dead, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	_, err = l.LoadScripts(b.ctx)
	requireCode(t, err, contracts.CodeUnavailable)
	_, err = l.Get(b.ctx, "00000000-0000-4000-8000-000000000001")
	requireCode(t, err, contracts.CodeUnavailable)
}

// Every master of a cluster gets the library, and a master that lost it
// gets it again.
func TestFunctionsOnEveryMaster(t *testing.T) {
	t.Parallel()
	cl := rediscluster.Start(t)
	rdb := cl.Client()
	b := setupOn(t, rdb, func(c *tasks.Config) { c.Shards = 6 })
	mode, err := b.l.LoadScripts(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "functions", mode.Mode)
	lib := strings.TrimPrefix(mode.Reason, "library ")
	var masters atomic.Int32 // ForEachMaster calls fn on every master at once
	require.NoError(t, rdb.ForEachMaster(b.ctx, func(ctx context.Context, c *redis.Client) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib}).Result()
		if err == nil && len(libs) != 1 {
			t.Errorf("master %s: %d libraries named %s", c.Options().Addr, len(libs), lib)
		}
		masters.Add(1)
		if err != nil {
			return err
		}
		return c.FunctionFlush(ctx).Err()
	}))
	require.Equal(t, int32(3), masters.Load())
	for _, enc := range []string{"enc-a", "enc-b", "enc-c", "enc-d", "enc-e", "enc-f"} {
		lifecycle(t, b, enc)
	}
}

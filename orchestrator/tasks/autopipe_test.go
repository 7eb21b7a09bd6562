package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// readsProcessed is the server's socket reads so far (redistest.ReadsProcessed).
func readsProcessed(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	n, err := redistest.ReadsProcessed(context.Background(), rdb)
	require.NoError(t, err)
	return int(n)
}

// The ledger's scripts go through the client's AutoPipeliner (autopipe):
// 64 ACKs sent at once reach Redis in a few reads, not one each, and
// every one is answered as alone; PlainRedis (REDIS_CLIENT_MODE=plain)
// sends each on its own round trip. A Redis of its own: INFO stats counts
// every client's reads.
func TestScriptsShareRoundTrips(t *testing.T) {
	const n = 64
	srv := rediscluster.StartServer(t)
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			ctx := context.Background()
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 2 * n})
			t.Cleanup(func() { _ = rdb.Close() })
			prefix := fmt.Sprintf("ap%v", plain)
			l, err := tasks.New(rdb, tasks.Config{KeyPrefix: prefix, PlainRedis: plain})
			require.NoError(t, err)
			reqs := make([]contracts.CreateTaskRequest, n)
			for i := range reqs {
				reqs[i] = contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i), Payload: json.RawMessage(`{}`)}
			}
			_, err = l.CreateBatch(ctx, reqs)
			require.NoError(t, err)
			var claimed []contracts.Task
			for len(claimed) < n {
				got, err := l.Claim(ctx, contracts.ClaimRequest{WorkerID: "vm-1", Limit: contracts.MaxClaimLimit})
				require.NoError(t, err)
				require.NotEmpty(t, got)
				claimed = append(claimed, got...)
			}

			before := readsProcessed(t, rdb)
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for _, task := range claimed {
				wg.Go(func() {
					<-start
					res, err := l.AckBrief(ctx, contracts.AckRequest{QueueID: task.QueueID, EncounterID: task.EncounterID,
						ExperityActions: json.RawMessage(`{"actions":[]}`)})
					if err == nil && (res.Task.Status != contracts.StatusDone || res.Duplicate) {
						err = fmt.Errorf("%s: %s, duplicate %v", task.QueueID, res.Task.Status, res.Duplicate)
					}
					errs <- err
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			reads := readsProcessed(t, rdb) - before - 1 // the INFO above
			if plain {
				require.GreaterOrEqual(t, reads, n, "one round trip per ACK")
			} else {
				require.LessOrEqual(t, reads, n/2, "concurrent ACKs share reads")
			}
			t.Logf("%d concurrent ACKs: %d reads by Redis", n, reads)
		})
	}
}

package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// The ledger's slot moves to another master, in small steps, while workers
// claim and ACK and a producer creates: scripts that would meet keys split
// between two masters are refused (TRYAGAIN, retried) instead of running on
// half of them, so when the migration is over every task is where it
// should be — each created task DONE exactly once, the indexes exact.
func TestSlotMigrationUnderLoadLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and migrates a slot")
	}
	for _, shards := range []int{1, 6} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { migrateUnderLoad(t, shards) })
	}
}

func migrateUnderLoad(t *testing.T, shards int) {
	c := rediscluster.Start(t)
	b := setupOn(t, c.Client(), func(cfg *tasks.Config) { cfg.Shards = shards })
	ctx := context.Background()
	const n = 300
	for i := range n / 2 {
		b.create(t, fmt.Sprintf("enc-%d", i), contracts.PriorityNormal)
	}

	var created, acked, refused atomic.Int64
	created.Store(n / 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the producer
		defer wg.Done()
		for i := n / 2; i < n; {
			_, err := b.l.Create(ctx, contracts.CreateTaskRequest{EncounterID: fmt.Sprintf("enc-%d", i)})
			if err != nil {
				refused.Add(1)
				time.Sleep(5 * time.Millisecond)
				continue
			}
			created.Add(1)
			i++
		}
	}()
	for w := range 4 {
		wg.Add(1)
		go func() { // a worker
			defer wg.Done()
			worker := fmt.Sprintf("vm-%d", w)
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := b.l.Claim(ctx, contracts.ClaimRequest{WorkerID: worker})
				if err != nil {
					refused.Add(1)
					var u *tasks.UncertainClaimError
					if errors.As(err, &u) {
						for {
							if _, err := b.l.CancelClaim(ctx, u.Token); err == nil {
								break
							}
							time.Sleep(5 * time.Millisecond)
						}
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				for _, task := range got {
					for {
						_, err := b.l.Ack(ctx, contracts.AckRequest{QueueID: task.QueueID, WorkerID: worker,
							ExperityActions: json.RawMessage(`{"ok":true}`)})
						if err == nil {
							acked.Add(1)
							break
						}
						refused.Add(1)
						time.Sleep(5 * time.Millisecond)
					}
				}
			}
		}()
	}

	// Move a shard's slot a few keys at a time while the load runs.
	base := b.l.ShardBase(b.l.ShardOf("enc-0"))
	slot, err := c.Client().ClusterKeySlot(ctx, base).Result()
	require.NoError(t, err)
	from, err := c.MasterOf(ctx, base)
	require.NoError(t, err)
	m, err := c.BeginMigration(ctx, int(slot), (c.Index(from)+1)%len(c.Addrs()))
	require.NoError(t, err)
	require.NoError(t, m.Finish(ctx, 7, 3*time.Millisecond))
	t.Logf("moved %d keys of slot %d; %d calls refused and retried meanwhile", m.Moved, slot, refused.Load())

	require.Eventually(t, func() bool { return acked.Load() >= n }, 60*time.Second, 20*time.Millisecond,
		"acked %d of %d", acked.Load(), n)
	close(stop)
	wg.Wait()
	require.EqualValues(t, n, created.Load())
	require.EqualValues(t, n, acked.Load(), "every task acknowledged exactly once")
	st, err := b.l.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, n, st.ByStatus[contracts.StatusDone], "stats: %+v", st)
	// setupOn's cleanup checks every index against the task hashes.
}

package tasks

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// Stats counts tasks per status, pending tasks per priority and dead
// letters, from the indexes: in one MULTI per shard (a consistent snapshot
// of each shard), summed over the shards. Every status and priority is
// present in the maps.
func (l *Ledger) Stats(ctx context.Context) (contracts.StatsResponse, error) {
	const op = "tasks.Stats"
	st := contracts.StatsResponse{Success: true, ByStatus: map[contracts.Status]int{},
		PendingByPriority: map[contracts.Priority]int{}}
	for _, s := range contracts.AllStatuses() {
		st.ByStatus[s] = 0
	}
	for _, p := range contracts.AllPriorities() {
		st.PendingByPriority[p] = 0
	}
	for sh := range l.ks {
		if err := l.addStats(ctx, sh, &st); err != nil {
			return contracts.StatsResponse{}, storeError(op, err)
		}
	}
	st.RetryWaiting = st.ByStatus[contracts.StatusError] - st.DLQ
	return st, nil
}

// addStats adds shard sh's counts to st.
func (l *Ledger) addStats(ctx context.Context, sh int, st *contracts.StatsResponse) error {
	k := l.ks[sh]
	statuses, prios := contracts.AllStatuses(), contracts.AllPriorities()
	sc := make([]*redis.IntCmd, len(statuses))
	pc := make([]*redis.IntCmd, len(prios))
	var dlq *redis.IntCmd
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range statuses {
			sc[i] = p.ZCard(ctx, k.status(s))
		}
		for i, pr := range prios {
			pc[i] = p.ZCard(ctx, k.pending(pr))
		}
		dlq = p.ZCard(ctx, k.dlq())
		return nil
	})
	if err != nil {
		return err
	}
	st.DLQ += int(dlq.Val())
	for i, s := range statuses {
		st.ByStatus[s] += int(sc[i].Val())
		st.Total += int(sc[i].Val())
	}
	for i, pr := range prios {
		st.PendingByPriority[pr] += int(pc[i].Val())
	}
	return nil
}

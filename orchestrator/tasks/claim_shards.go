package tasks

import (
	"context"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
)

// claimPriorities are the priorities in claim order.
var claimPriorities = [...]contracts.Priority{contracts.PriorityHigh, contracts.PriorityNormal, contracts.PriorityLow}

// shardCounts are one shard's pending tasks per priority, in claim order.
type shardCounts [len(claimPriorities)]int64

// claimStep is one claim script call of a plan.
type claimStep struct{ shard, limit int }

// claimSharded claims up to limit tasks over every shard with token. A
// shard that cannot answer (a master down, its slot moving: TRYAGAIN) is
// left out of this claim and the others serve it; the claim fails only
// when no shard answered, or when a shard's outcome is unknown (the caller
// then cancels the whole claim).
//
// A claim on a sharded ledger keeps priority strict across shards as far as
// one look allows: it first counts, in one pipeline, the pending tasks of
// each priority in every shard (a cluster client sends each master its part
// at once), then runs the claim script in the shards in order of their best
// pending priority — shards whose best is equal in round-robin order — each
// asked for as many as its counts say it holds of the priorities the claim
// still needs. FIFO is strict within a shard; across shards of equal
// priority it is round robin. Each shard is claimed at most once per
// token (its claim key then exists there, and a second run would take
// nothing); a shard that answered short (another worker was faster) is
// followed by a new look at the shards not yet asked. The token's claim
// key exists in each shard the claim touched; CancelClaim visits every
// shard.
func (l *Ledger) claimSharded(ctx context.Context, op, worker string, limit int, token string) ([]contracts.Task, error) {
	out := []contracts.Task{}
	asked := make([]bool, l.set.N())
	var failed error
	answered := false
	for len(out) < limit {
		counts, err := l.peek(ctx, op, asked)
		if err != nil {
			return claimedSoFar(out, err)
		}
		plan := l.claimPlan(counts, asked, limit-len(out))
		if len(plan) == 0 {
			break
		}
		short := false
		for _, st := range plan {
			asked[st.shard] = true
			got, err := l.claimWith(ctx, op, st.shard, worker, st.limit, token)
			var u *UncertainClaimError
			switch {
			case errors.As(err, &u):
				return nil, err
			case err != nil:
				failed, short = err, true
				continue
			}
			answered = true
			out = append(out, got...)
			short = short || len(got) < st.limit
		}
		if !short {
			break
		}
	}
	if len(out) == 0 && !answered && failed != nil {
		return nil, failed
	}
	// Shards were asked best priority first, but a shard asked for its
	// HIGH and NORMAL tasks answers both before the next shard's HIGH ones.
	slices.SortStableFunc(out, func(a, b contracts.Task) int { return prioRank(a.Priority) - prioRank(b.Priority) })
	return out, nil
}

func prioRank(p contracts.Priority) int {
	for i, q := range claimPriorities {
		if q == p {
			return i
		}
	}
	return len(claimPriorities)
}

// claimedSoFar is a sharded claim whose count failed part way: the tasks
// the shards asked before took are the answer when there are any.
func claimedSoFar(out []contracts.Task, err error) ([]contracts.Task, error) {
	if len(out) == 0 {
		return nil, err
	}
	return out, nil
}

// peek counts the pending tasks of each priority in every shard not yet
// asked, in one pipeline. A shard whose count fails counts as empty (and
// is marked asked: this claim leaves it out); peek fails only when every
// shard's count does.
func (l *Ledger) peek(ctx context.Context, op string, asked []bool) ([]shardCounts, error) {
	pipe := l.rdb.Pipeline()
	cmds := make([][len(claimPriorities)]*redis.IntCmd, l.set.N())
	for sh, k := range l.ks {
		if asked[sh] {
			continue
		}
		for p, prio := range claimPriorities {
			cmds[sh][p] = pipe.ZCard(ctx, k.pending(prio))
		}
	}
	_, err := pipe.Exec(ctx)
	out := make([]shardCounts, l.set.N())
	counted := false
	for sh := range cmds {
		if asked[sh] {
			continue
		}
		for p := range claimPriorities {
			if cmds[sh][p].Err() != nil {
				asked[sh] = true
				out[sh] = shardCounts{}
				break
			}
			out[sh][p] = cmds[sh][p].Val()
		}
		counted = counted || !asked[sh]
	}
	if err != nil && !counted {
		return nil, storeError(op, err)
	}
	return out, nil
}

// claimPlan orders the shards not yet asked for want tasks: priority by
// priority, the shards holding tasks of it in round-robin order, each
// asked for as many as it holds (of this and the better priorities) while
// want lasts. A shard appears once, where its best priority puts it.
func (l *Ledger) claimPlan(counts []shardCounts, asked []bool, want int) []claimStep {
	var plan []claimStep
	at := map[int]int{} // shard → its step in plan
	for p := range claimPriorities {
		var holders []int
		for sh, c := range counts {
			if !asked[sh] && c[p] > 0 {
				holders = append(holders, sh)
			}
		}
		if len(holders) == 0 {
			continue
		}
		for _, i := range l.rot.Order(len(holders)) {
			if want == 0 {
				return plan
			}
			sh := holders[i]
			n := int(min(int64(want), counts[sh][p]))
			if j, ok := at[sh]; ok {
				plan[j].limit += n
			} else {
				at[sh] = len(plan)
				plan = append(plan, claimStep{shard: sh, limit: n})
			}
			want -= n
		}
	}
	return plan
}

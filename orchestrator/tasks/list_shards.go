package tasks

import (
	"context"

	"github.com/flowgate/flowgate/contracts"
)

// shardDone marks, in a sharded cursor, a shard walked to the end.
const shardDone = -2

// listSharded is List over every shard.
//
// A List on a sharded ledger walks the same index in every shard and
// merges the pages by index score (creation order within a shard; across
// shards the shards' own sequences interleave, which is creation order only
// roughly). Its cursor holds one position per shard. A listing by
// encounter_id reads the encounter's one shard, as an unsharded List.
func (l *Ledger) listSharded(ctx context.Context, op string, q contracts.ListQuery, index string, residual bool, f listFilter) (Page, error) {
	afters, err := l.shardCursor(op, q.Cursor, index)
	if err != nil {
		return Page{}, err
	}
	pages := make([]Page, len(afters))
	ends := make([]int64, len(afters))
	mores := make([]bool, len(afters))
	for sh, after := range afters {
		if after == shardDone {
			continue
		}
		s := listScan{op: op, shard: sh, index: index, residual: residual, history: q.History, filter: f}
		if ends[sh], mores[sh], err = l.scan(ctx, s, after, &pages[sh]); err != nil {
			return Page{}, err
		}
	}
	page, taken := mergePages(pages, f.limit)
	next, more := make([]int64, len(afters)), false
	for sh := range afters {
		switch {
		case afters[sh] == shardDone:
			next[sh] = shardDone
		case taken[sh] < len(pages[sh].Tasks): // the page is full: continue after the last one taken
			next[sh], more = afters[sh], true
			if taken[sh] > 0 {
				next[sh] = pages[sh].scores[taken[sh]-1]
			}
		case mores[sh]:
			next[sh], more = ends[sh], true
		default:
			next[sh] = shardDone
		}
	}
	if more {
		page.NextCursor = encodeCursor(cursor{Index: index, Shards: next})
	}
	return page, nil
}

// mergePages takes up to limit tasks, and up to ListMaxBytes, from the
// shards' pages, lowest score first (ties: lower shard), and says how many
// it took of each.
func mergePages(pages []Page, limit int) (Page, []int) {
	page := Page{Tasks: []contracts.Task{}}
	taken := make([]int, len(pages))
	for !page.full(limit) {
		best := -1
		for sh, p := range pages {
			if taken[sh] < len(p.Tasks) && (best < 0 || p.scores[taken[sh]] < pages[best].scores[taken[best]]) {
				best = sh
			}
		}
		if best < 0 {
			break
		}
		page.Tasks = append(page.Tasks, pages[best].Tasks[taken[best]])
		page.bytes += taskBytes(&pages[best].Tasks[taken[best]])
		taken[best]++
	}
	return page, taken
}

// shardCursor is the position in each shard a sharded List continues
// from (-1 everywhere without a cursor).
func (l *Ledger) shardCursor(op, raw, index string) ([]int64, error) {
	afters := make([]int64, l.set.N())
	if raw == "" {
		for i := range afters {
			afters[i] = -1
		}
		return afters, nil
	}
	c, err := decodeCursor(raw)
	if err != nil || c.Index != index || len(c.Shards) != len(afters) {
		return nil, invalid(op, "cursor", "cursor is not valid for this query")
	}
	for i, a := range c.Shards {
		if a < shardDone {
			return nil, invalid(op, "cursor", "cursor is not valid for this query")
		}
		afters[i] = a
	}
	return afters, nil
}

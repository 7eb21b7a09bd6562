package slotcache

import (
	"strconv"
	"strings"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the refresher's keys with the default prefix: its part of
// docs/keyspace.md, which is made from them. They share the slot cache's
// hash tag {slots}; the tiers themselves are slots.Cache's
// (slots.RedisKeys).
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/booking/slotcache"
	return []keyspace.Key{
		{Pattern: "flowgate:{slots}:refresh:lease", Type: keyspace.String, Owner: o,
			TTL: "4 min (`LeaseTTL`)", What: "owner token of the running tier refresh"},
		{Pattern: "flowgate:{slots}:refresh:trigger", Type: keyspace.String, Owner: o,
			TTL: "`SLOT_CACHE_FRESH` (5 min)", What: "a background refresh was fired"},
		{Pattern: "flowgate:{slots}:health:<LOC>:<N>", Type: keyspace.Hash, Owner: o,
			What: "tier N's refresh record", Fields: []string{"consecutiveFailures", "lastError", "lastSuccess", "lastAttempt"}},
		{Pattern: "flowgate:{slots}:history:<LOC>", Type: keyspace.List, Owner: o, TTL: "— (last 100, `HistoryLen`)",
			What: "refresh outcomes, newest first, JSON `contracts.CacheRefreshEntry`"},
	}
}

type keys struct{ base string }

func newKeys(prefix string) keys { return keys{base: prefix + ":{slots}:"} }

func (k keys) lease() string   { return k.base + "refresh:lease" }
func (k keys) trigger() string { return k.base + "refresh:trigger" }

func (k keys) health(loc string, n int) string {
	return k.base + "health:" + strings.ToUpper(loc) + ":" + strconv.Itoa(n)
}

func (k keys) history(loc string) string { return k.base + "history:" + strings.ToUpper(loc) }

func upper(s string) string { return strings.ToUpper(s) }

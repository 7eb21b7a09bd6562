package slotcache

import (
	"strconv"
	"strings"
)

// The refresher's keys share the slot cache's hash tag {slots}. With the
// default prefix:
//
//	flowgate:{slots}:refresh:lease        STRING owner token of the running refresh (PX LeaseTTL)
//	flowgate:{slots}:refresh:trigger      STRING set when a background refresh was fired (PX Fresh)
//	flowgate:{slots}:health:<LOC>:<N>     HASH   tier N's refresh record: consecutiveFailures,
//	                                             lastError, lastSuccess, lastAttempt (no TTL)
//	flowgate:{slots}:history:<LOC>        LIST   the last HistoryLen refresh outcomes, newest first,
//	                                             JSON contracts.CacheRefreshEntry {tier, success,
//	                                             slotCount, error, timestamp, dateRange, fetchDurationMs,
//	                                             retries, isRetry, redisWriteSuccess}
//
// The tiers themselves are slots.Cache's (flowgate:{slots}:t:<LOC>:<N>).
type keys struct{ base string }

func newKeys(prefix string) keys { return keys{base: prefix + ":{slots}:"} }

func (k keys) lease() string   { return k.base + "refresh:lease" }
func (k keys) trigger() string { return k.base + "refresh:trigger" }

func (k keys) health(loc string, n int) string {
	return k.base + "health:" + strings.ToUpper(loc) + ":" + strconv.Itoa(n)
}

func (k keys) history(loc string) string { return k.base + "history:" + strings.ToUpper(loc) }

func upper(s string) string { return strings.ToUpper(s) }

package contracts

import (
	"encoding/json"
	"fmt"
)

// The tiered slot cache's operation endpoints (docs/reference/nodered-endpoints.md §1.6): the
// original's shapes, key for key (docs/reference/nodered-shapes.md), plus flowgate's
// additions. Errors of these endpoints are the flowgate error envelope.

// CacheHealth is GET cache-health: 200 healthy / degraded, 503 unhealthy.
type CacheHealth struct {
	Status         string              `json:"status"` // healthy, degraded, unhealthy
	Timestamp      string              `json:"timestamp"`
	Summary        CacheHealthSummary  `json:"summary"`
	Tiers          []CacheTierHealth   `json:"tiers"`
	RefreshStats   CacheRefreshStats   `json:"refreshStats"`
	RefreshHistory []CacheRefreshEntry `json:"refreshHistory"`
	Config         CacheHealthConfig   `json:"config"`
}

// Cache health statuses.
const (
	CacheHealthy   = "healthy"
	CacheDegraded  = "degraded"
	CacheUnhealthy = "unhealthy"
)

// CacheHealthSummary counts the tiers by trouble.
type CacheHealthSummary struct {
	TotalSlots             int `json:"totalSlots"`
	StaleTiers             int `json:"staleTiers"`
	CriticalStaleTiers     int `json:"criticalStaleTiers"`
	FailedTiers            int `json:"failedTiers"`
	MaxConsecutiveFailures int `json:"maxConsecutiveFailures"`
}

// CacheTierHealth is one tier. Status is fresh, stale, critical_stale,
// expired (past the hard limit: no longer answered), empty or error
// (its last refresh failed). SlotCount and SlotsByDate count the offered
// chairs (CLOUD9_SLOT_COLUMNS: the original's one configured chair);
// SlotCountAllChairs every chair the tier keeps. Dates are MM/DD/YYYY, as
// the original writes them.
type CacheTierHealth struct {
	Tier                int         `json:"tier"`
	TierDays            int         `json:"tierDays"`
	Status              string      `json:"status"`
	SlotCount           int         `json:"slotCount"`
	SlotCountAllChairs  int         `json:"slotCountAllChairs"`
	AgeSeconds          *int64      `json:"ageSeconds"`
	FetchedAt           *string     `json:"fetchedAt"`
	DateRange           *DateRange  `json:"dateRange"`
	ConsecutiveFailures int         `json:"consecutiveFailures"`
	LastError           *string     `json:"lastError"`
	LastSuccess         *string     `json:"lastSuccess"`
	LastInvalidatedSlot *string     `json:"lastInvalidatedSlot"`
	LastInvalidation    *string     `json:"lastInvalidation"`
	LastRestoredSlot    *string     `json:"lastRestoredSlot"`
	LastRestoration     *string     `json:"lastRestoration"`
	SlotsByDate         []DateCount `json:"slotsByDate"`
}

// DateRange is a tier's first and last date, MM/DD/YYYY (the original's
// "11/30/2026").
type DateRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// DateCount is one date's slot count.
type DateCount struct {
	Date  string `json:"date"`
	Count int    `json:"count"`
}

// CacheRefreshStats summarises the last 20 tier refreshes.
type CacheRefreshStats struct {
	Last20Refreshes CacheRefreshCounts `json:"last20Refreshes"`
}

// CacheRefreshCounts counts refresh outcomes; SuccessRate is "95.0%".
type CacheRefreshCounts struct {
	Success     int    `json:"success"`
	Failure     int    `json:"failure"`
	SuccessRate string `json:"successRate"`
}

// CacheRefreshEntry is one tier refresh outcome, newest first, as the
// original's refreshHistory: the dates fetched ("11/28/2026 to
// 02/26/2027"), how long the fetch took, Retries (GetOnlineReservations
// tries after the first), IsRetry (the tier's previous refresh had
// failed: this one retries it) and RedisWriteSuccess (the list was
// stored). SlotCount counts the offered chairs, as the tier's.
type CacheRefreshEntry struct {
	Tier              int      `json:"tier"`
	Success           bool     `json:"success"`
	SlotCount         int      `json:"slotCount"`
	Error             *string  `json:"error"`
	Timestamp         string   `json:"timestamp"`
	DateRange         DateSpan `json:"dateRange"`
	FetchDurationMs   int64    `json:"fetchDurationMs"`
	Retries           int      `json:"retries"`
	IsRetry           bool     `json:"isRetry"`
	RedisWriteSuccess bool     `json:"redisWriteSuccess"`
}

// DateSpan is a refreshHistory entry's dates as the original writes them:
// "11/28/2026 to 02/26/2027"; "" (written null) when unknown. It reads the
// {start, end} object of entries flowgate recorded before (YYYY-MM-DD),
// so an old history stays readable.
type DateSpan string

// NewDateSpan spells from and to (MM/DD/YYYY each) as a DateSpan.
func NewDateSpan(from, to string) DateSpan { return DateSpan(from + " to " + to) }

// MarshalJSON writes the string, or null when empty.
func (d DateSpan) MarshalJSON() ([]byte, error) {
	if d == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(d))
}

// UnmarshalJSON reads a string, null, or the older {start, end} object.
func (d *DateSpan) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = DateSpan(s)
		return nil
	}
	var old *DateRange
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("dateRange: want a string or {start, end}: %w", err)
	}
	if old == nil {
		*d = ""
		return nil
	}
	*d = NewDateSpan(isoToUS(old.Start), isoToUS(old.End))
	return nil
}

// isoToUS turns YYYY-MM-DD into MM/DD/YYYY; anything else is kept.
func isoToUS(s string) string {
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		return s[5:7] + "/" + s[8:10] + "/" + s[0:4]
	}
	return s
}

// CacheHealthConfig is the cache's timing, as settings.
type CacheHealthConfig struct {
	RefreshIntervalMs int64  `json:"refreshIntervalMs"`
	MaxCacheAgeMs     int64  `json:"maxCacheAgeMs"` // fresh
	StaleMs           int64  `json:"staleMs"`
	HardStaleMs       int64  `json:"hardStaleMs"`
	BusinessHours     string `json:"businessHours"`   // the refresh job's schedule as a sentence
	RefreshSchedule   string `json:"refreshSchedule"` // its cron spec (SLOT_CACHE_REFRESH_SCHEDULE)
}

// CacheRefreshResponse is POST cache/refresh and the alias POST
// /test/redis-slot-cache/trigger (which also has the Tiers list).
type CacheRefreshResponse struct {
	Success          bool               `json:"success"`
	Message          string             `json:"message"`
	Timestamp        string             `json:"timestamp"`
	Results          []CacheRefreshTier `json:"results"`
	Tiers            []CacheRefreshTier `json:"tiers"`
	TotalDurationMs  int64              `json:"totalDurationMs"`
	TotalRetries     int                `json:"totalRetries"`
	TotalSlotsCached int                `json:"totalSlotsCached"`
}

// CacheRefreshTier is one tier of a refresh.
type CacheRefreshTier struct {
	Tier            int     `json:"tier"`
	TierDays        int     `json:"tierDays"`
	Success         bool    `json:"success"`
	SlotCount       int     `json:"slotCount"`
	Retries         int     `json:"retries"`
	FetchDurationMs int64   `json:"fetchDurationMs"`
	RedisKey        string  `json:"redisKey"`
	RedisStored     bool    `json:"redisStored"`
	Error           *string `json:"error"`
}

// CacheTriggerResponse is POST cache/trigger: the refresh runs in the
// background (Triggered false: one was already fired or runs).
type CacheTriggerResponse struct {
	Success     bool   `json:"success"`
	Triggered   bool   `json:"triggered"`
	Message     string `json:"message"`
	Note        string `json:"note"`
	TriggeredAt string `json:"triggeredAt"`
}

// CacheClearResponse is DELETE cache and the aliases DELETE
// /test/slot-cache/clear and /test/redis-slot-cache/clear.
type CacheClearResponse struct {
	Success        bool             `json:"success"`
	Cleared        bool             `json:"cleared"`
	Message        string           `json:"message"`
	Note           string           `json:"note"`
	Timestamp      string           `json:"timestamp"`
	Results        []CacheClearTier `json:"results"`
	KeysCleared    []string         `json:"keysCleared"`
	KeysRemoved    []string         `json:"keysRemoved"`
	EntriesRemoved int              `json:"entriesRemoved"`
	// ListsCleared counts the search-range lists deleted with every tier
	// (DELETE cache naming no tier): no list the booking path could offer
	// is left.
	ListsCleared int `json:"listsCleared"`
}

// CacheClearTier is one tier of a clear: "cleared" or "empty".
type CacheClearTier struct {
	Tier   int    `json:"tier"`
	Status string `json:"status"`
}

// CacheStatusResponse is GET /test/slot-cache/status and
// /test/redis-slot-cache/status: the tiers as cache entries.
type CacheStatusResponse struct {
	Message   string             `json:"message"`
	Hint      string             `json:"hint"`
	CacheKeys []string           `json:"cacheKeys"`
	Entries   []CacheStatusEntry `json:"entries"`
	Stats     CacheStatusStats   `json:"stats"`
}

// CacheStatusEntry is one tier.
type CacheStatusEntry struct {
	CacheKey        string `json:"cacheKey"`
	LocationGUID    string `json:"locationGUID"`
	DateRange       string `json:"dateRange"` // "YYYY-MM-DD..YYYY-MM-DD"
	FetchedAt       string `json:"fetchedAt"`
	ExpiresAt       string `json:"expiresAt"` // when it passes the hard limit
	IsExpired       bool   `json:"isExpired"`
	SlotCount       int    `json:"slotCount"`
	FetchDurationMs int64  `json:"fetchDurationMs"`
}

// CacheStatusStats counts the entries.
type CacheStatusStats struct {
	TotalEntries     int `json:"totalEntries"`
	ValidEntries     int `json:"validEntries"`
	ExpiredEntries   int `json:"expiredEntries"`
	TotalSlotsCached int `json:"totalSlotsCached"`
}

// CachePrefetchResponse is POST /test/slot-cache/prefetch: tier 1
// refreshed now.
type CachePrefetchResponse struct {
	Success         bool          `json:"success"`
	CacheKey        string        `json:"cacheKey"`
	SlotCount       int           `json:"slotCount"`
	FetchDurationMs int64         `json:"fetchDurationMs"`
	ExpiresAt       string        `json:"expiresAt"`
	Debug           PrefetchDebug `json:"_debug"`
}

// PrefetchDebug counts the fetched records.
type PrefetchDebug struct {
	RawRecords          int `json:"rawRecords"`
	AfterLocationFilter int `json:"afterLocationFilter"`
	AfterChairFilter    int `json:"afterChairFilter"`
}

// CacheQueryRequest is POST /test/slot-cache/query (every field optional).
type CacheQueryRequest struct {
	StartDate         string   `json:"startDate"`
	EndDate           string   `json:"endDate"`
	ScheduleViewGUIDs []string `json:"scheduleViewGUIDs"`
	Tier              int      `json:"tier"`
}

// CacheQueryResponse is POST /test/slot-cache/query: a tier's slots.
type CacheQueryResponse struct {
	FromCache               bool       `json:"fromCache"`
	CacheKey                string     `json:"cacheKey"`
	CachedAt                string     `json:"cachedAt"`
	ExpiresAt               string     `json:"expiresAt"`
	SlotCount               int        `json:"slotCount"`
	Slots                   []ApptSlot `json:"slots"`
	OriginalFetchDurationMs int64      `json:"originalFetchDurationMs"`
	QueryDurationMs         int64      `json:"queryDurationMs"`
}

// RedisSetRequest is POST redisSet. Value is any JSON; TTL seconds (0 or
// absent: no expiry).
type RedisSetRequest struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	TTL   *int64          `json:"ttl"`
}

// RedisSetResponse is POST redisSet's answer. TTL is the expiry set, in
// seconds (null: none) — the original dropped it.
type RedisSetResponse struct {
	Success bool   `json:"success"`
	Key     string `json:"key"`
	Message string `json:"message"`
	TTL     *int64 `json:"ttl"`
}

// RedisDeleteRequest is POST redisDelete (also DELETE with ?key=).
type RedisDeleteRequest struct {
	Key string `json:"key"`
}

// RedisDeleteResponse is redisDelete's answer.
type RedisDeleteResponse struct {
	Success bool   `json:"success"`
	Key     string `json:"key"`
	Deleted bool   `json:"deleted"`
	Message string `json:"message"`
}

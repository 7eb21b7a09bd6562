package slots

import (
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the slot cache's keys with the default prefix: its part of
// docs/keyspace.md, which is made from them. Every key shares the hash tag
// {slots}, so each script touches one Redis Cluster slot (the cache is
// small: a few lists per location).
//
// An entry hash has the field "_meta", JSON {locationGUID, scheduleViewGUID,
// from, to, fetchedAt (Unix ms), count}, and one field per slot: SlotID
// ("<VIEW>|<COLUMN>|YYYYMMDDHHmm") → the Slot as JSON. GUIDs in keys and
// fields are upper-cased; FROM and TO are YYYYMMDD; VIEW is "*" for a list
// of every schedule view of the location.
//
// The registry lets Invalidate and Find reach every list without SCAN; its
// members are pruned by expiry in every script that reads it. Those scripts
// name the entry keys they read from the registry (not from KEYS), which is
// safe on a cluster because they share the hash tag.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/slots"
	return []keyspace.Key{
		{Pattern: "flowgate:{slots}:entries", Type: keyspace.ZSet, Owner: o, TTL: "members pruned by expiry",
			What: "registry: entry key → expiry ms"},
		{Pattern: "flowgate:{slots}:entries:ver", Type: keyspace.String, Owner: o,
			What: "version counter of the lists' `" + versionField + "`"},
		{Pattern: "flowgate:{slots}:e:<LOC>:<VIEW|*>:<FROM>:<TO>", Type: keyspace.Hash, Owner: o,
			TTL: "`SLOT_CACHE_TTL` (60 min)",
			What: "one cached slot list: `" + metaField + "`, `" + versionField + "`, one field per slot " +
				"(`<VIEW>|<COLUMN>|YYYYMMDDHHmm` → Slot JSON); `DELETE …/cache` without `tier` deletes every list " +
				"of its location (`slots.Cache.DeleteLists`)"},
		{Pattern: "flowgate:{slots}:t:<LOC>:<N>", Type: keyspace.Hash, Owner: o, TTL: "`SLOT_CACHE_TTL`",
			What: "tier N of a location, same format"},
		{Pattern: "<entry or tier key>" + pgSuffix, Type: keyspace.String, Owner: o, TTL: "as its list",
			What: "pre-grouped pairs/triples"},
		{Pattern: "flowgate:{slots}:b:<SlotID>", Type: keyspace.String, Owner: o, TTL: "1 h",
			What: "a slot booked lately (its bookingToken still answers idempotently; see Booked)"},
	}
}

// Bookkeeping fields of an entry hash, and the pre-grouped key's suffix.
const (
	metaField            = "_meta"
	lastInvalidatedField = "_lastInvalidated"
	lastRestoredField    = "_lastRestored"
	versionField         = "_v"
	pgSuffix             = ":pg"
)

type keys struct {
	base string // "<prefix>:{slots}:"
}

func newKeys(prefix string) keys { return keys{base: prefix + ":{slots}:"} }

func (k keys) registry() string { return k.base + "entries" }

func (k keys) entry(r Range) string {
	view := "*"
	if r.ScheduleViewGUID != "" {
		view = strings.ToUpper(r.ScheduleViewGUID)
	}
	return k.base + "e:" + strings.ToUpper(r.LocationGUID) + ":" + view + ":" +
		r.From.Format(dateKey) + ":" + r.To.Format(dateKey)
}

const dateKey = "20060102"

// lists is the prefix of every search-range list key of location loc.
func (k keys) lists(loc string) string { return k.base + "e:" + strings.ToUpper(loc) + ":" }

// booked is the key remembering that slot id was booked.
func (k keys) booked(id string) string { return k.base + "b:" + id }

// tier is the key of tier n of location loc.
func (k keys) tier(loc string, n int) string {
	return k.base + "t:" + strings.ToUpper(loc) + ":" + strconv.Itoa(n)
}

// Range is what one cached list covers: a location, one schedule view (or
// every view when ScheduleViewGUID is ""), and the dates From..To inclusive
// (only the wall-clock date of each counts).
type Range struct {
	LocationGUID     string
	ScheduleViewGUID string
	From, To         time.Time
}

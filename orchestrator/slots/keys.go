package slots

import (
	"strconv"
	"strings"
	"time"
)

// Every key of the slot cache shares the hash tag {slots}, so each script
// touches one Redis Cluster slot (the cache is small: a few lists per
// location). With the default prefix:
//
//	flowgate:{slots}:entries                          ZSET  entry key → expiry, Unix ms (registry)
//	flowgate:{slots}:entries:ver                      STRING version counter of the lists' "_v"
//	flowgate:{slots}:e:<LOC>:<VIEW|*>:<FROM>:<TO>     HASH  one cached list (TTL)
//	flowgate:{slots}:t:<LOC>:<N>                      HASH  tier N of a location (TTL), same format
//	flowgate:{slots}:b:<SlotID>                       STRING a slot booked lately (TTL), see Booked
//	<entry or tier key>:pg                            STRING pre-grouped pairs/triples of a tier (TTL)
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

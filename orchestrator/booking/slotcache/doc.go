// Package slotcache is the tiered slot cache of the booking path
// (docs/reference/nodered-endpoints.md §1.5, §3): tiers of 30 / 60 / 90 days of a location's open
// slots, each with its pre-grouped sibling pairs and triples, refreshed
// from Cloud9 by a scheduler job (every 5 min in business hours, once per
// tick across instances) and read by getApptSlots and getGroupedApptSlots.
//
// # Freshness
//
// A tier younger than Fresh (5 min) is answered as is; one younger than
// Stale (15 min) is answered and marked stale; one younger than HardStale
// (60 min) is still answered, marked critical_stale. Each of the last two
// fires one background refresh — one across every instance, however many
// requests see it (a SET NX trigger key lives for Fresh). Older tiers, and
// queries a tier does not cover, go to the fallback source (GetOnlineReservations
// through the flat slot cache) and fire the same background refresh.
//
// # Refresh
//
// Refresher.Refresh fetches the tiers one after the other under a lease
// (SET NX PX with an owner token, released by compare-and-delete: unlike
// the original's lock it never lingers after the run), each Cloud9 read
// waiting for its turn of the shared GetOnlineReservations limiter, so
// refreshes of any number of instances never exceed Cloud9's read limit.
// Every tier outcome is recorded in Redis (consecutive failures, last
// error, last success; a history of the last 100), which Health turns into
// cache-health: healthy, degraded (a tier stale, empty or failing) or
// unhealthy (a tier critical_stale, or failing HealthFailures times in a
// row).
//
// # Bookings
//
// A confirmed booking removes its slot from every list (slots.Cache.Booked)
// and a cancellation puts it back (RestoreSlot); a slot Cloud9 refuses
// leaves the lists (Invalidate).
//
// keys.go lists the package's Redis keys, scripts.go its scripts.
package slotcache

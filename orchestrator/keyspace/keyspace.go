// Package keyspace is the one list of flowgate's Redis key families, by
// what losing or changing them does, and the rule the operation endpoints
// (orchestrator/ops: redisGet / redisSet / redisDelete) apply to each. Every
// package declares its own keys in its keys.go (RedisKeys, rows of type
// Key; docs/keyspace.md's tables are generated from them); this list names
// them by family, and its test fails when a declared key or a key of
// docs/keyspace.md falls in no named family, so a new family cannot reach
// Redis without a decision here.
//
// The keys are the production ones: the prefix "flowgate" (DefaultKeyPrefix;
// no setting changes it, the packages' KeyPrefix options exist for tests), the hold
// engine and its faces without a prefix, with the hash tag "{holds}:" on
// Redis Cluster or "{holds:<i>.<salt>}:" with REDIS_SHARDS; the task
// ledger's and the buffer's tags likewise ("{tasks:<i>.<salt>}").
//
// Classify is deliberately broader than Redis: Redis keys are exact bytes,
// so " flowgate:redis-shards" or "FLOWGATE:redis-shards" is another key,
// harmless to touch; Classify still places them in the family they spell
// (it drops white space, control and format characters anywhere and folds
// case), so no spelling of a family's key passes for a foreign one. A
// leading hash tag is looked through for the families that carry one
// ({holds}: and shard tags). No operation takes a pattern (GET, SET and DEL
// of one exact key), so glob characters are plain characters.
package keyspace

import (
	"strings"
	"unicode"
)

// DefaultKeyPrefix is the prefix of flowgate's own keys: the one default
// of every package's KeyPrefix option ("flowgate", or "flowgate:<name>:"
// where a package keeps a raw prefix), docs/keyspace.md.
const DefaultKeyPrefix = "flowgate"

// ShardMarker is the key recording the REDIS_SHARDS the data was written
// with (sidecar/shardlayout.go).
const ShardMarker = "flowgate:redis-shards"

// Class is what a family's keys are to flowgate, and so what the operation
// endpoints may do with them.
type Class uint8

// The classes, from freest to most guarded.
const (
	// Foreign: no family of flowgate's; flowgate never reads it. The
	// operation endpoints may read, write and delete it (within
	// OPS_KEY_PREFIXES).
	Foreign Class = iota
	// Operator: flowgate:ops:…, the operators' own keys under flowgate's
	// prefix; flowgate never reads them. Read, write, delete.
	Operator
	// Cache: a cache flowgate refills when the key is gone. Read and
	// delete; never write: flowgate keeps it in its own format (a HASH
	// where redisSet writes a string), so a written value would break the
	// reads until it expired.
	Cache
	// State: flowgate's own state; its loss or change changes behaviour
	// (a marker, a ledger, a lock, a guard, a hold). Read (unless Secret),
	// never write or delete.
	State
)

func (c Class) String() string {
	switch c {
	case Operator:
		return "operator"
	case Cache:
		return "cache"
	case State:
		return "state"
	}
	return "foreign"
}

// Family is one family of keys.
type Family struct {
	Name  string // stable, machine-readable ("task-ledger"); "" for Foreign
	Owner string // the package that writes it
	Class Class
	// Secret: the values carry credentials or personal data (booking auth
	// tokens, hold ids with their client, patient names and payloads):
	// redisGet refuses them too.
	Secret bool
	What   string   // one line
	Docs   []string // the keys as docs/keyspace.md spells them (examples)

	patterns []pattern
}

// Readable reports whether redisGet may read the family's keys.
func (f Family) Readable() bool { return !f.Secret }

// Writable reports whether redisSet may write them.
func (f Family) Writable() bool { return f.Class == Foreign || f.Class == Operator }

// Deletable reports whether redisDelete may delete them.
func (f Family) Deletable() bool { return f.Class != State }

// pattern matches a folded key: exactly, or by prefix (and suffix);
// tagged also tries the key without a leading hash tag "{…}:".
type pattern struct {
	prefix, suffix string
	exact, tagged  bool
}

func (p pattern) match(k string) bool {
	if p.exact {
		return k == p.prefix
	}
	return strings.HasPrefix(k, p.prefix) && strings.HasSuffix(k[len(p.prefix):], p.suffix)
}

func exact(k string) pattern                { return pattern{prefix: k, exact: true} }
func prefix(p string) pattern               { return pattern{prefix: p} }
func tagged(p string) pattern               { return pattern{prefix: p, tagged: true} }
func taggedAround(p, s string) pattern      { return pattern{prefix: p, suffix: s, tagged: true} }
func family(f Family, ps ...pattern) Family { f.patterns = ps; return f }

// families, most specific first: the first that matches is the key's. The
// patterns are folded (lower case).
var families = []Family{
	family(Family{Name: "operator", Owner: "operators (redisSet)", Class: Operator,
		What: "the operators' own keys: flowgate never reads them",
		Docs: []string{"flowgate:ops:<name>"}},
		prefix("flowgate:ops:")),
	family(Family{Name: "shard-marker", Owner: "sidecar", Class: State,
		What: "the REDIS_SHARDS the data was written with: without it a start with another count is not refused",
		Docs: []string{ShardMarker}},
		exact(ShardMarker)),
	family(Family{Name: "task-ledger", Owner: "orchestrator/tasks", Class: State, Secret: true,
		What: "the VM task ledger: tasks, their payloads and history, indexes, claims, locators",
		Docs: []string{"flowgate:{tasks}:t:<id>", "flowgate:{tasks:<i>.<salt>}:seq"}},
		prefix("flowgate:{tasks")),
	family(Family{Name: "webhook-replay", Owner: "webhooks/signature", Class: State,
		What: "signatures seen: the ACK/FAIL replay guard",
		Docs: []string{"flowgate:webhook:replay:<signature>"}},
		prefix("flowgate:webhook:replay:")),
	family(Family{Name: "booking-sessions", Owner: "orchestrator/booking/session", Class: State, Secret: true,
		What: "booking sessions: bookingAuthToken, phone, patient; auto-injected into bookings",
		Docs: []string{"flowgate:{bookingSessions}:guid:<PATIENTGUID>", "flowgate:{bookingSessions}:phone:<digits>"}},
		prefix("flowgate:{bookingsessions}:")),
	family(Family{Name: "booking-marks", Owner: "orchestrator/booking", Class: State, Secret: true,
		What: "a booking's lease, in-flight mark and done record: what keeps a retry from booking twice",
		Docs: []string{"flowgate:booking:{<identity>}:inflight", "flowgate:booking:{<identity>}:done"}},
		prefix("flowgate:booking:{")),
	family(Family{Name: "slot-registry", Owner: "orchestrator/slots", Class: State,
		What: "the slot cache's registry and version counter: how invalidation reaches every list",
		Docs: []string{"flowgate:{slots}:entries", "flowgate:{slots}:entries:ver"}},
		prefix("flowgate:{slots}:entries")),
	family(Family{Name: "slot-booked", Owner: "orchestrator/slots", Class: State,
		What: "slots booked lately: kept out of refilled lists, their bookingToken answered idempotently",
		Docs: []string{"flowgate:{slots}:b:<SlotID>"}},
		prefix("flowgate:{slots}:b:")),
	family(Family{Name: "slot-refresh-lock", Owner: "orchestrator/booking/slotcache", Class: State,
		What: "the tier refresh's lease and trigger debounce",
		Docs: []string{"flowgate:{slots}:refresh:lease", "flowgate:{slots}:refresh:trigger"}},
		prefix("flowgate:{slots}:refresh:")),
	family(Family{Name: "slot-lists", Owner: "orchestrator/slots", Class: Cache,
		What: "cached slot lists and tiers (and their pre-grouped :pg): refetched from Cloud9 when gone",
		Docs: []string{"flowgate:{slots}:t:<LOC>:<N>", "flowgate:{slots}:e:<LOC>:<VIEW|*>:<FROM>:<TO>", "flowgate:{slots}:t:<LOC>:<N>:pg"}},
		prefix("flowgate:{slots}:t:"), prefix("flowgate:{slots}:e:")),
	family(Family{Name: "slot-refresh-records", Owner: "orchestrator/booking/slotcache", Class: Cache,
		What: "the tiers' refresh records and history (cache-health; DELETE cache clears them too)",
		Docs: []string{"flowgate:{slots}:health:<LOC>:<N>", "flowgate:{slots}:history:<LOC>"}},
		prefix("flowgate:{slots}:health:"), prefix("flowgate:{slots}:history:")),
	family(Family{Name: "phone-index", Owner: "orchestrator/booking/phoneindex", Class: State, Secret: true,
		What: "the records phone searches read (patient GUID → record, phone digits) and their per-minute read budget",
		Docs: []string{"flowgate:phoneidx:{phones}:entries", "flowgate:phoneidx:{phones}:reads:<MINUTE>"}},
		prefix("flowgate:phoneidx:")),
	family(Family{Name: "cloud9-limiter", Owner: "orchestrator/cloud9", Class: State,
		What: "the Cloud9 write and read limiters: without them flowgate provokes Cloud9's rate limit",
		Docs: []string{"flowgate:cloud9:rl:{<procedure>}:window", "rate:flowgate:cloud9:rl:{<procedure>}"}},
		prefix("flowgate:cloud9:rl:"), prefix("rate:flowgate:cloud9:rl:")),
	family(Family{Name: "buffer", Owner: "orchestrator/buffer", Class: State, Secret: true,
		What: "the work buffer's depth, credit, idempotency and messageId claims, dead-letter counters, error lists",
		Docs: []string{"flowgate:buffer:{buffer}:depth", "flowgate:buffer:{buffer}:idem:<key>", "flowgate:buffer:err:{<messageId>}"}},
		prefix("flowgate:buffer:")),
	family(Family{Name: "dead-letters", Owner: "orchestrator/dlq", Class: State, Secret: true,
		What: "the durable dead-letter records (payloads included)",
		Docs: []string{"flowgate:dlq:{<queue>}:rec", "flowgate:dlq:{<queue>}:idx"}},
		prefix("flowgate:dlq:")),
	family(Family{Name: "durability-marker", Owner: "orchestrator/durable", Class: State,
		What: "the REDIS_MIN_REPLICAS_ACK barrier's marker per master: written and waited on, never read",
		Docs: []string{"flowgate:durable:{<n>}"}},
		prefix("flowgate:durable:")),
	family(Family{Name: "shadow-records", Owner: "orchestrator/shadow", Class: State,
		What: "the shadow mode's comparisons per endpoint: counters and the last SHADOW_READY_WINDOW key-path records (no values), the /switch-over verdicts",
		Docs: []string{"flowgate:shadow:{<endpoint>}:n", "flowgate:shadow:{<endpoint>}:recent"}},
		prefix("flowgate:shadow:")),
	family(Family{Name: "cron-locks", Owner: "scheduler", Class: State,
		What: "the cron jobs' locks and last ticks: each run once across instances",
		Docs: []string{"flowgate:cron:{<job>}:lock", "flowgate:cron:{<job>}:last"}},
		prefix("flowgate:cron:")),
	family(Family{Name: "asynq", Owner: "github.com/hibiken/asynq", Class: State, Secret: true,
		What: "Asynq's queues, tasks (payloads), servers and workers",
		Docs: []string{"asynq:{<queue>}:pending", "asynq:queues"}},
		prefix("asynq:")),
	family(Family{Name: "slot-reservations", Owner: "orchestrator/holds (IVA face)", Class: State,
		What: "the IVA's slot reservations (docs/holds.md), readable for its debugging guide",
		Docs: []string{"SlotReservation:<location>:<YYYYMMDD>:<HHmm>:<column>"}},
		tagged("slotreservation:")),
	family(Family{Name: "holds", Owner: "orchestrator/holds", Class: State, Secret: true,
		What: "the hold engine: slot claims, web holds (holdId and clientId), records, indexes, quotas, cooldowns, adoptions",
		Docs: []string{"holds:records", "holds:slot:<specialistId>:<slotStart>", "hold:<appointmentTypeId>:<slotStart>:<specialistId>",
			"client:<clientId>:holds", "client_limit:<clientId>:<appointmentTypeId>", "{holds}:holds:records"}},
		tagged("holds:"), tagged("hold:"), taggedAround("client:", ":holds"), tagged("client_limit:")),
	family(Family{Name: "hold-streams", Owner: "orchestrator/holds/holdstream", Class: State,
		What: "one SSE stream per client across instances",
		Docs: []string{"holdstream:{<clientId>}:seq"}},
		tagged("holdstream:")),
	family(Family{Name: "availability-timeslots", Owner: "orchestrator/holds/availability", Class: Cache,
		What: "cached timeslots of a type (recomputed when gone)",
		Docs: []string{"{availability}:timeslots:<typeId>:<specialistId|pooled>"}},
		prefix("{availability}:timeslots:")),
	family(Family{Name: "availability", Owner: "orchestrator/holds/availability", Class: State, Secret: true,
		What: "the availability schedule, appointments, timeslot indexes and generations",
		Docs: []string{"{availability}:schedule", "{availability}:appointments", "{availability}:timeslots-gen:<typeId>"}},
		prefix("{availability}:")),
	// Last: anything else under flowgate's prefix is flowgate's, listed or
	// not (a key added without a decision here is guarded, not open).
	family(Family{Name: "flowgate", Owner: "flowgate", Class: State,
		What: "a key under flowgate's prefix that no family above names: guarded until one does",
		Docs: []string{"flowgate:<anything else>"}},
		prefix("flowgate:")),
}

// Families returns every family, in the order Classify tries them.
func Families() []Family {
	out := make([]Family, len(families))
	copy(out, families)
	return out
}

// Classify returns the family of key; a key of no family is Foreign (Name
// "").
func Classify(key string) Family {
	k := Fold(key)
	var untagged string
	if strings.HasPrefix(k, "{") {
		if i := strings.Index(k, "}:"); i > 0 {
			untagged = k[i+2:]
		}
	}
	for _, f := range families {
		for _, p := range f.patterns {
			if p.match(k) || (p.tagged && untagged != "" && p.match(untagged)) {
				return f
			}
		}
	}
	return Family{Class: Foreign}
}

// Fold is key as Classify compares it: without white space, control and
// format characters (zero-width spaces, direction marks) anywhere, in lower
// case.
func Fold(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

package holds

import (
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shard"
)

// RedisKeys are the hold engine's keys, each after its P, and its
// channel: its part of docs/keyspace.md, which is made from them. The IVA
// face's SlotReservation key, written with the canonical claim, is
// reservation.RedisKeys'; the web face's is here.
//
// P is Config.KeyPrefix followed by the hash tag: with one shard
// (Config.Shards 1, the default) an empty tag on a single Redis or Sentinel
// (the originals' keys exactly), "{holds}:" on Redis Cluster (Config.HashTag;
// New picks it for a *redis.ClusterClient), so that every key a script
// touches lies in one hash slot and the claim — exclusivity across both
// faces, the client's exact quota, the cooldown and the indexes — is one
// atomic script.
//
// With Config.Shards n > 1, shard i's P is KeyPrefix + "{holds:<i>.<salt>}:"
// (package shard), on a single Redis too, and each key lives in one shard:
//
//   - the resource shard, Of(lower(specialistId)): the canonical slot key,
//     both face keys (a face key ends with the specialist / schedule
//     column, so FaceKey finds its shard from the name), the records, the
//     expiry and active indexes and the adoption record. A hold id is
//     minted so that Of(holdId) is its resource shard: Heartbeat, Release
//     and Confirm find the record from the id alone;
//   - the client shard, Of(clientId): client:<clientId>:holds and the
//     cooldown client_limit:<clientId>:<appointmentTypeId>;
//   - the appointment shard, Of(appointmentId): the cooldown's index
//     client_limit:appointment:<appointmentId>.
//
// No double booking stays one script (the slot key and both faces share the
// resource shard); how the quota and the cooldown stay exact across two
// shards is in the package doc (doc.go, "Several shards").
//
// <slotStart> is RFC 3339 UTC with seconds ("2025-03-15T09:00:00Z"); ids
// are used as given (the HTTP face rejects ids with ':', '{' or '}'),
// except that the canonical slot key lower-cases the specialist id, so
// "0768…" and "0768…" in upper case are one resource.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/holds"
	return []keyspace.Key{
		{Pattern: "holds:slot:<specialistId>:<slotStart>", Type: keyspace.String, Owner: o,
			TTL: "the hold's (`HOLD_TTL` 30 s, renewed by heartbeats); a booking's claim until the slot ends",
			What: "canonical claim on (resource, start) both faces take, so whichever asks first wins (specialist id " +
				"lower-cased; slotStart RFC 3339 UTC): the Hold JSON. Resource shard"},
		{Pattern: "hold:<appointmentTypeId>:<slotStart>:<specialistId>", Type: keyspace.String, Owner: o, TTL: "the hold's",
			What: "the web face's readable key ([seed 002](reference/README.md#the-specifications-seeds)), the Hold JSON. " +
				"Resource shard"},
		{Pattern: "holds:adopted:<holdId>", Type: keyspace.String, Owner: o, TTL: "`Keep` (default 1 h)",
			What: "Adopt's record of a web hold handed to a booking: {from, hold, memo, adoptedAt}. Resource shard"},
		{Pattern: "client:<clientId>:holds", Type: keyspace.ZSet, Owner: o, TTL: "its longest hold",
			What: "holdId → expiry ms: the client's live holds (the quota; exact, with several shards an exact upper " +
				"bound; the original's SET, made a ZSET so the claim script can drop expired members and count the " +
				"quota exactly). Client shard"},
		{Pattern: "holds:records", Type: keyspace.Hash, Owner: o, TTL: "— (fields removed by release/sweep)",
			What: "holdId → {hold, slotKey, faceKey, confirmed}; outlives the keys so an expiry can be announced. " +
				"Resource shard (one per shard)"},
		{Pattern: "holds:expiry", Type: keyspace.ZSet, Owner: o,
			What: "holdId → expiry ms: the `holds_expiry` sweep's index, swept once per tick. Resource shard (one per shard)"},
		{Pattern: "holds:active:<appointmentTypeId>", Type: keyspace.ZSet, Owner: o,
			What: "holdId → expiry ms: the stream's snapshot (Active). Resource shard (one per shard, merged)"},
		{Pattern: "client_limit:<clientId>:<appointmentTypeId>", Type: keyspace.String, Owner: o,
			TTL:    "the cooldown (`cooldownMinutes`, default 1440 min)",
			What:   "the cooldown of [seed 002](reference/README.md#the-specifications-seeds), in the client shard; its JSON",
			Fields: keyspace.JSONFields[cooldownValue]()},
		{Pattern: "client_limit:appointment:<appointmentId>", Type: keyspace.String, Owner: o, TTL: "same",
			What: "the cooldown key's name: cancel (ClearCooldown) clears it without SCAN. Appointment shard"},
		{Pattern: "holds:events:<appointmentTypeId>", Type: keyspace.Channel, Owner: o,
			What: "`{\"type\":\"hold\"|\"heartbeat\"|\"release\"|\"confirm\", …Hold}` (internal: hold id and client " +
				"included; streams send clients the public fields only; no tag: PUBLISH is not bound to a slot)"},
	}
}

// ClusterTag is the hash tag every key carries on Redis Cluster.
const ClusterTag = "{holds}"

type keys struct{ p, prefix string }

func newKeys(prefix, tag string) keys {
	p := prefix
	if tag != "" {
		p += tag + ":"
	}
	return keys{p: p, prefix: prefix}
}

// ring is the key builders of every shard.
type ring struct {
	set shard.Set
	ks  []keys
}

// newRing is the one shard of today's keys (n == 1: prefix + tag) or n
// shards under the shard package's tags (tag must then be "").
func newRing(prefix, tag string, n int) (ring, error) {
	set, err := shard.New("holds", n)
	if err != nil {
		return ring{}, err
	}
	if n == 1 {
		return ring{set: set, ks: []keys{newKeys(prefix, tag)}}, nil
	}
	r := ring{set: set, ks: make([]keys, n)}
	for i := range r.ks {
		r.ks[i] = newKeys(prefix, set.Tag(i))
	}
	return r, nil
}

// res is the shard of a resource (the specialist, case-folded as the slot
// key folds it).
func (r ring) res(specialistID string) int { return r.set.Of(strings.ToLower(specialistID)) }

// cli is the shard of a client's quota index and cooldowns.
func (r ring) cli(clientID string) int { return r.set.Of(clientID) }

// appt is the shard of a cooldown's index by appointment id.
func (r ring) appt(appointmentID string) int { return r.set.Of(appointmentID) }

// hold is the shard of a hold's record: the hold id is minted there.
func (r ring) hold(holdID string) int { return r.set.Of(holdID) }

// faceShard is the shard of a face key name: its last ':' field is the
// specialist (hold:<type>:<start>:<specialist>,
// SlotReservation:<location>:<date>:<time>:<column>).
func (r ring) faceShard(name string) int {
	return r.res(name[strings.LastIndexByte(name, ':')+1:])
}

// keyShard is the shard whose tag key carries, or -1.
func (r ring) keyShard(key string) int {
	i := strings.IndexByte(key, '{')
	j := strings.IndexByte(key, '}')
	if i < 0 || j < i {
		return -1
	}
	return r.set.Index(key[i : j+1])
}

// mint makes a hold id whose shard is i: base itself when it falls there
// (always with one shard), else base + "-" + a salt, the smallest that
// does (about n tries); a new base after 4096 misses, which FNV-1a makes
// practically unreachable.
func (r ring) mint(i int, newID func() string) string {
	for {
		base := newID()
		if r.set.Of(base) == i {
			return base
		}
		for salt := range 4096 {
			if id := base + "-" + strconv.Itoa(salt); r.set.Of(id) == i {
				return id
			}
		}
	}
}

// FormatStart is a slot start as it appears in keys and on the wire.
func FormatStart(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// slot case-folds the specialist: GUIDs reach the two faces in whatever
// case Cloud9, the caller or the LLM spelled them, and must meet on one key.
func (k keys) slot(specialistID string, start time.Time) string {
	return k.p + "holds:slot:" + strings.ToLower(specialistID) + ":" + FormatStart(start)
}

func (k keys) webHold(atid, specialistID string, start time.Time) string {
	return k.p + "hold:" + atid + ":" + FormatStart(start) + ":" + specialistID
}

// face is a face's readable key given without P (e.g. "SlotReservation:…").
func (k keys) face(name string) string { return k.p + name }

func (k keys) client(clientID string) string { return k.p + "client:" + clientID + ":holds" }
func (k keys) records() string               { return k.p + "holds:records" }
func (k keys) expiry() string                { return k.p + "holds:expiry" }
func (k keys) active(atid string) string     { return k.p + "holds:active:" + atid }
func (k keys) cooldown(clientID, atid string) string {
	return k.p + "client_limit:" + clientID + ":" + atid
}
func (k keys) cooldownIndex(appointmentID string) string {
	return k.p + "client_limit:appointment:" + appointmentID
}
func (k keys) adopted(holdID string) string { return k.p + "holds:adopted:" + holdID }
func (k keys) channel(atid string) string   { return k.prefix + "holds:events:" + atid }

// validID reports whether s can be part of a key.
func validID(s string) bool {
	return s != "" && len(s) <= 200 && !strings.ContainsAny(s, ":{} \t\r\n")
}

package tasks

import (
	"slices"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// RedisKeys are the ledger's keys with the default prefix and one shard,
// and its function library: its part of docs/keyspace.md, which is made
// from them.
//
// The ledger is spread over Config.Shards shards (package shard, name
// "tasks"); every key of one shard carries that shard's hash tag, so every
// script touches one Redis Cluster slot. With one shard the tag is
// {tasks}; with several, shard i's is {tasks:<i>.<salt>}. A task lives in
// its home shard: the shard of its encounter_id, or of its queue_id when it
// has none. Ids flowgate generates for a task with an encounter are drawn
// until their own shard is the home, so only a client-given queue_id needs
// a locator (see locator.go).
//
// Every script declares the keys that it may touch (scriptKeys, taskKeys;
// lua/prelude.lua says why), except the tasks a claim, a sweep or a claim's
// cancel finds in an index, whose keys it builds from the base (ARGV[1])
// and reads before it writes.
func RedisKeys() []keyspace.Key {
	const o = "orchestrator/tasks"
	return []keyspace.Key{
		{Pattern: "flowgate:{tasks}:t:<id>", Type: keyspace.Hash, Owner: o,
			TTL: "— (DONE: purged after `TASKS_DONE_RETENTION`)", Fields: slices.Clone(taskFields),
			What: "one task (times Unix ms, absent when unset; `recoveries` absent = 0; `claim` the token of the claim " +
				"that took it while PROCESSING; `ifp` the fingerprint of the content an import brought it from, absent " +
				"on tasks no import wrote)"},
		{Pattern: "flowgate:{tasks}:h:<id>", Type: keyspace.List, Owner: o, TTL: "with its task",
			What: "history, JSON events, oldest first, capped"},
		{Pattern: "flowgate:{tasks}:seq", Type: keyspace.String, Owner: o,
			What: "counter: creation and pending sequence numbers"},
		{Pattern: "flowgate:{tasks}:all", Type: keyspace.ZSet, Owner: o, What: "id → creation seq, every task"},
		{Pattern: "flowgate:{tasks}:status:<status>", Type: keyspace.ZSet, Owner: o,
			What: "id → creation seq, one per status"},
		{Pattern: "flowgate:{tasks}:pending:<priority>", Type: keyspace.ZSet, Owner: o,
			What: "id → pending seq: the claim order of PENDING tasks"},
		{Pattern: "flowgate:{tasks}:active", Type: keyspace.ZSet, Owner: o,
			What: "id → last activity ms of PROCESSING tasks: the claim, then each heartbeat (nothing else updates a " +
				"PROCESSING task; an import makes PROCESSING tasks PENDING); both recovery sweeps (heartbeat monitor, " +
				"visibility timeout) read it"},
		{Pattern: "flowgate:{tasks}:claimed", Type: keyspace.ZSet, Owner: o,
			What: "the second PROCESSING index, written by flowgate before 2026-11-26 (id → last heartbeat; " +
				"[CHANGELOG.md](../CHANGELOG.md)): " +
				"a heartbeat moves an entry already there and the visibility sweep reads it, so a rolling upgrade loses " +
				"no timeout; it empties itself as the tasks it names finish (an entry goes when it is older than " +
				"`VT_TIMEOUT` and its task is no longer PROCESSING)"},
		{Pattern: "flowgate:{tasks}:sla", Type: keyspace.ZSet, Owner: o,
			What: "id → created_at ms of PENDING tasks that are not HIGH"},
		{Pattern: "flowgate:{tasks}:retry", Type: keyspace.ZSet, Owner: o,
			What: "id → updated_at ms of ERROR tasks awaiting a retry (not dead letters)"},
		{Pattern: "flowgate:{tasks}:dlq", Type: keyspace.ZSet, Owner: o,
			What: "id → creation seq of dead letters (ERROR + dlq)"},
		{Pattern: "flowgate:{tasks}:done", Type: keyspace.ZSet, Owner: o,
			What: "id → updated_at ms of DONE tasks (the purge's index)"},
		{Pattern: "flowgate:{tasks}:done:backfill", Type: keyspace.String, Owner: o,
			What: "progress of the purge's one-time indexing of DONE tasks older than the done index: the last " +
				"status:DONE score indexed, `complete` when finished"},
		{Pattern: "flowgate:{tasks}:enc:<encounter_id>", Type: keyspace.ZSet, Owner: o,
			What: "id → creation seq, every task of one encounter"},
		{Pattern: "flowgate:{tasks}:open", Type: keyspace.Hash, Owner: o,
			What: "encounter_id → id of its one open task"},
		{Pattern: "flowgate:{tasks}:claim:<token>", Type: keyspace.String, Owner: o, TTL: "15 min",
			What: "ids one claim took, joined by `,`; after a cancel the tombstone `!` (the claim, if it runs later, " +
				"takes nothing; with several shards: in each shard the claim touched); a cancel also reads the SET of " +
				"ids flowgate wrote before 2026-11-26 ([CHANGELOG.md](../CHANGELOG.md))"},
		{Pattern: "flowgate:{tasks}:loc:<id>", Type: keyspace.String, Owner: o,
			TTL: "— (deleted after its task is purged)",
			What: "locator of a client-given queue_id whose task lives in another shard: `<home shard>:<written ms>`, " +
				"kept in the shard of the id"},
		{Pattern: "flowgate:{tasks}:replay:<signature>", Type: keyspace.String, Owner: o,
			TTL: "2 × `WEBHOOK_TOLERANCE` (10 min)",
			What: "a version-2 signature of an ACK or FAIL seen, set (`SET NX PX`) by the transition's script in the " +
				"shard of the task it names: the replay guard in the same round trip ([tasks.md](tasks.md#authentication))"},
		{Pattern: "flowgate_tasks_<hash>", Type: keyspace.Library, Owner: o,
			TTL: "— (kept in RDB/AOF; loaded again when missing)",
			What: "the ledger's scripts, on Redis 7+ (every master of a cluster); one per flowgate version, older " +
				"ones listed by `flowgate check` for `FUNCTION DELETE`"},
	}
}

// keys builds the key names of one shard of the ledger.
type keys struct {
	base   string   // "<prefix>:<tag>:", e.g. "flowgate:{tasks}:"
	ledger []string // KEYS[1..nLedgerKeys] of every script, in the prelude's order
}

// nLedgerKeys is how many of every script's KEYS are the ledger's own.
const nLedgerKeys = 16

func newKeys(prefix, tag string) keys {
	k := keys{base: prefix + ":" + tag + ":"}
	k.ledger = []string{k.seq(), k.all(), k.open(), k.active(), k.claimed(), k.sla(), k.retry(), k.dlq(), k.done(),
		k.status(contracts.StatusPending), k.status(contracts.StatusProcessing), k.status(contracts.StatusError),
		k.status(contracts.StatusDone),
		k.pending(contracts.PriorityHigh), k.pending(contracts.PriorityNormal), k.pending(contracts.PriorityLow)}
	return k
}

// scriptKeys are a script's KEYS: the shard's ledger keys, then own.
func (k keys) scriptKeys(own ...string) []string {
	out := make([]string, 0, nLedgerKeys+len(own)+1) // +1: room for a replay key (singleChecked)
	return append(append(out, k.ledger...), own...)
}

// taskKeys are a single-task script's KEYS: the ledger's, the task's hash
// and its history.
func (k keys) taskKeys(id string) []string { return k.scriptKeys(k.task(id), k.history(id)) }

func (k keys) task(id string) string     { return k.base + "t:" + id }
func (k keys) history(id string) string  { return k.base + "h:" + id }
func (k keys) seq() string               { return k.base + "seq" }
func (k keys) all() string               { return k.base + "all" }
func (k keys) dlq() string               { return k.base + "dlq" }
func (k keys) done() string              { return k.base + "done" }
func (k keys) doneBackfill() string      { return k.base + "done:backfill" }
func (k keys) active() string            { return k.base + "active" }
func (k keys) claimed() string           { return k.base + "claimed" }
func (k keys) sla() string               { return k.base + "sla" }
func (k keys) retry() string             { return k.base + "retry" }
func (k keys) open() string              { return k.base + "open" }
func (k keys) encounter(e string) string { return k.base + "enc:" + e }
func (k keys) claim(token string) string { return k.base + "claim:" + token }
func (k keys) locator(id string) string  { return k.base + "loc:" + id }
func (k keys) replay(sig string) string  { return k.base + "replay:" + sig }

func (k keys) status(s contracts.Status) string    { return k.base + "status:" + string(s) }
func (k keys) pending(p contracts.Priority) string { return k.base + "pending:" + string(p) }

// index is the key of an index by its name after the base ("all", "dlq",
// "status:<S>", "pending:<P>", "enc:<encounter>").
func (k keys) index(name string) string { return k.base + name }

// itemKeys are the KEYS of one task a create or an import may write: its
// hash, its history, its encounter's set (the hash again when it has no
// encounter) and its locator in this shard — the hash again when located
// is false (one shard: no task lives elsewhere, so the scripts skip the
// locator check).
func (k keys) itemKeys(id, encounter string, located bool) []string {
	ek, lk := k.task(id), k.task(id)
	if encounter != "" {
		ek = k.encounter(encounter)
	}
	if located {
		lk = k.locator(id)
	}
	return []string{k.task(id), k.history(id), ek, lk}
}

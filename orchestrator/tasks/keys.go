package tasks

import "github.com/flowgate/flowgate/contracts"

// Every Redis key of the ledger. The ledger is spread over Config.Shards
// shards (package shard, name "tasks"); every key of one shard carries that
// shard's hash tag, so every script touches one Redis Cluster slot. With one
// shard the tag is {tasks}; with several, shard i's is {tasks:<i>.<salt>}.
// With the default prefix and one shard:
//
//	flowgate:{tasks}:t:<id>            HASH  one task (fields below)
//	flowgate:{tasks}:h:<id>            LIST  its history, JSON events, oldest first, capped (LTRIM)
//	flowgate:{tasks}:seq               STRING counter: creation and pending sequence numbers
//	flowgate:{tasks}:all               ZSET  id → creation seq (every task; unfiltered listing)
//	flowgate:{tasks}:status:<S>        ZSET  id → creation seq, one per status (listing, Stats)
//	flowgate:{tasks}:pending:<P>       ZSET  id → pending seq, PENDING tasks of priority P (claim order)
//	flowgate:{tasks}:active            ZSET  id → last activity ms of PROCESSING tasks: the claim, then each
//	                                         heartbeat (nothing else updates a PROCESSING task; an import
//	                                         makes PROCESSING tasks PENDING). Both recovery sweeps read it
//	flowgate:{tasks}:claimed           ZSET  written by earlier versions only (id → last heartbeat): a heartbeat
//	                                         moves an entry already there, RecoverExpired sweeps it, and it
//	                                         empties itself as the tasks it names finish, once no such
//	                                         version runs
//	flowgate:{tasks}:sla               ZSET  id → created_at ms of PENDING tasks that are not HIGH
//	flowgate:{tasks}:retry             ZSET  id → updated_at ms of ERROR tasks awaiting a retry (not dead letters)
//	flowgate:{tasks}:dlq               ZSET  id → creation seq of dead letters (ERROR + dlq)
//	flowgate:{tasks}:done              ZSET  id → updated_at ms of DONE tasks (retention: PurgeDone)
//	flowgate:{tasks}:done:backfill     STRING PurgeDone's one-time indexing of DONE tasks older than the done index:
//	                                         the last status:DONE score indexed, "complete" when finished
//	flowgate:{tasks}:enc:<encounter>   ZSET  id → creation seq, every task of one encounter
//	flowgate:{tasks}:open              HASH  encounter_id → id of its one open task
//	flowgate:{tasks}:claim:<token>     STRING ids taken by one claim, joined by ',' (TTL ClaimTokenTTL);
//	                                         after CancelClaim the tombstone "!" (the claim, if it runs
//	                                         later, takes nothing). Earlier versions wrote a SET of ids
//	                                         ("!" alone as the tombstone); CancelClaim reads both
//	flowgate:{tasks}:loc:<id>          STRING the locator of a task whose queue_id was given by
//	                                         the client and whose home shard (its encounter's) is
//	                                         not the shard of its id: "<home shard>:<written ms>",
//	                                         kept in the shard of the id while the task exists
//
// A task lives in its home shard: the shard of its encounter_id, or of its
// queue_id when it has none. Ids flowgate generates for a task with an
// encounter are drawn until their own shard is the home, so only a
// client-given queue_id needs a locator (see locator.go).
//
// Task hash fields: queue_id, encounter_id, status, priority, attempts
// (FAILs), max_attempts, recoveries (sweep recoveries; absent = 0),
// payload (JSON as given, absent when null), fp (fingerprint
// of the canonical payload, for create idempotency), pp (parsed_payload
// without experityActions and dlq, a JSON object), actions (ACK's
// experityActions, JSON), actions_fp, dlq ("0"/"1"), error_message,
// worker_id, created_at, updated_at, claimed_at, heartbeat_at (Unix ms;
// absent when unset), claim (token of the claim that took it, while
// PROCESSING; see CancelClaim; empty once the task left PROCESSING, or
// absent: earlier versions deleted it), seq (creation seq), pseq (seq taken when the task
// last became PENDING), ifp (fingerprint of the content an Importer brought
// it from; absent on tasks no import wrote).
//
// Every script declares the keys above that it may touch (scriptKeys,
// taskKeys; lua/prelude.lua says why), except the tasks a claim, a sweep or a
// claim's cancel finds in an index, whose keys it builds from the base
// (ARGV[1]) and reads before it writes.

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
	out := make([]string, 0, nLedgerKeys+len(own))
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

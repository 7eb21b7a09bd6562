package tasks

import (
	"embed"
	"io/fs"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/luafiles"
)

// luaFiles is the ledger's Lua, in lua/: lua/prelude.lua, then one file per
// script, each opening with its KEYS, ARGV and reply. Every transition of
// the ledger is one script, atomic across any number of flowgate instances;
// the prelude says what every script shares (the shard's KEYS[1..16],
// ARGV[1..3], the standard reply, and why every key a script touches is
// declared). A script runs after the prelude, as EVAL or as a function of
// the ledger's library (functions.go); the locator's two (lua/locator/)
// run alone. test/lint checks every file with luacheck (.luacheckrc).
//
//go:embed lua/*.lua lua/locator/*.lua
var luaFiles embed.FS

// lua is the ledger's scripts, read from lua/ once.
var lua = mustLoadLua(luaFiles)

// ledgerLua is the ledger's scripts, each under its file's name in lua/.
// Beyond the shard's KEYS[1..16] (lua/prelude.lua), each takes:
type ledgerLua struct {
	prelude string
	lib     []*proc // the scripts that run after the prelude, by name: the function library

	// One task: KEYS[17] its hash, KEYS[18] its history.
	heartbeat, ack, fail, requeue, replay, dlq, status, unclaim *proc
	// Item i of a batch: KEYS[17+4i..20+4i] its hash, history, encounter
	// and locator keys.
	create, importTasks *proc
	repairOpen          *proc // KEYS[17] the other open task's hash
	claim, cancelClaim  *proc // KEYS[17] the claim key
	// One batch of a sweep: KEYS[17] the index it walks (recover: active
	// or claimed).
	recover, promote, retry, purge *proc
	backfillDone                   *proc // KEYS[17] the done index's backfill cursor

	// The locator's (locator.go), without the prelude: KEYS[1] the
	// locator key, and claim's KEYS[2] the task's hash in its shard.
	claimLocator, dropLocator *redis.Script
}

// proc is one ledger script: its body runs after the prelude.
type proc struct {
	name string
	body string
	eval *redis.Script // the prelude, then the body
}

// newProc is the script name with body, run after prelude.
func newProc(prelude, name, body string) *proc {
	return &proc{name: name, body: body, eval: redis.NewScript(prelude + "\n" + body)}
}

// mustLoadLua is loadLua of fsys; the files are embedded, so an error is a
// bug of this build.
func mustLoadLua(fsys fs.FS) ledgerLua {
	l, err := loadLua(fsys)
	if err != nil {
		panic(err)
	}
	return l
}

// loadLua reads the ledger's scripts from fsys: every file under lua/ must
// be one of them, and each of them there.
func loadLua(fsys fs.FS) (ledgerLua, error) {
	files, err := luafiles.Read(fsys, "lua", "tasks: the ledger's Lua")
	if err != nil {
		return ledgerLua{}, err
	}
	l := ledgerLua{prelude: files.Take("prelude")}
	p := func(name string) *proc {
		x := newProc(l.prelude, name, files.Take(name))
		l.lib = append(l.lib, x)
		return x
	}
	l.heartbeat, l.ack, l.fail, l.requeue, l.replay, l.dlq, l.status, l.unclaim =
		p("heartbeat"), p("ack"), p("fail"), p("requeue"), p("replay"), p("dlq"), p("status"), p("unclaim")
	l.create, l.importTasks, l.repairOpen, l.claim, l.cancelClaim =
		p("create"), p("import"), p("repair_open"), p("claim"), p("cancel_claim")
	l.recover, l.promote, l.retry, l.purge, l.backfillDone =
		p("recover"), p("promote"), p("retry"), p("purge"), p("backfill_done")
	l.claimLocator, l.dropLocator = redis.NewScript(files.Take("locator/claim")), redis.NewScript(files.Take("locator/drop"))
	sort.Slice(l.lib, func(i, j int) bool { return l.lib[i].name < l.lib[j].name })
	if err := files.Check(); err != nil {
		return ledgerLua{}, err
	}
	return l, nil
}

// The backfill_done script's third reply: whether the walk is complete.
const (
	backfillPartial  = 0 // more batches to go
	backfillComplete = 1 // the walk reached the end
)

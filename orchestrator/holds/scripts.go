package holds

import (
	"embed"
	"io/fs"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/luafiles"
)

// luaFiles is the hold scripts' Lua, in lua/: lua/prelude.lua (what every
// script shares: the helpers, and how the keys lie in one slot and in
// shards), then one file per script, each opening with its KEYS, ARGV and
// reply. Every script runs as EVAL(SHA) of the prelude and its file.
// test/lint checks every file with luacheck (.luacheckrc).
//
//go:embed lua/*.lua
var luaFiles embed.FS

// lua is the hold scripts, read from lua/ once.
var lua = mustLoadLua(luaFiles)

// holdLua is the hold scripts, each under its file's name in lua/, with
// the keys it takes.
type holdLua struct {
	// In the hold's resource shard (a client index or cooldown in another
	// shard is passed as the records key again).
	claim         *redis.Script // slot, face key, client index, records, expiry, active, cooldown
	heartbeat     *redis.Script // slot, face key, client index, records, expiry, active
	release       *redis.Script // slot, face key, client index, records, expiry, active
	confirm       *redis.Script // slot, face key, client index, records, expiry, active, cooldown, cooldown index
	keep          *redis.Script // slot, face key, client index, records, expiry, active
	adopt         *redis.Script // claim's six, the web hold's face key, client index and active, adoption record
	releaseBooked *redis.Script // slot
	sweep         *redis.Script // slot, client index, records, expiry, active
	clearCooldown *redis.Script // cooldown index, cooldown

	// In the client's shard (split.go).
	reserve            *redis.Script // client index, cooldown
	extend             *redis.Script // client index
	startCooldown      *redis.Script // cooldown, cooldown index
	delIf              *redis.Script // the key (a cooldown index)
	clearCooldownValue *redis.Script // cooldown
}

// mustLoadLua is loadLua of fsys; the files are embedded, so an error is a
// bug of this build.
func mustLoadLua(fsys fs.FS) holdLua {
	l, err := loadLua(fsys)
	if err != nil {
		panic(err)
	}
	return l
}

// loadLua reads the hold scripts from fsys: every file of lua/ must be one
// of them, and each of them there.
func loadLua(fsys fs.FS) (holdLua, error) {
	files, err := luafiles.Read(fsys, "lua", "holds: the hold scripts' Lua")
	if err != nil {
		return holdLua{}, err
	}
	prelude := files.Take("prelude")
	s := func(name string) *redis.Script { return redis.NewScript(prelude + "\n" + files.Take(name)) }
	l := holdLua{
		claim: s("claim"), heartbeat: s("heartbeat"), release: s("release"), confirm: s("confirm"), keep: s("keep"),
		adopt: s("adopt"), releaseBooked: s("release_booked"), sweep: s("sweep"), clearCooldown: s("clear_cooldown"),
		reserve: s("reserve"), extend: s("extend"), startCooldown: s("start_cooldown"), delIf: s("del_if"),
		clearCooldownValue: s("clear_cooldown_value"),
	}
	if err := files.Check(); err != nil {
		return holdLua{}, err
	}
	return l, nil
}

// claim.lua's reply codes.
const (
	claimTaken    int64 = 0  // taken by someone else
	claimNew      int64 = 1  // claimed
	claimOwn      int64 = 2  // this owner holds it already for this type
	claimQuota    int64 = -1 // quota reached
	claimCooldown int64 = -2 // the client is cooling down
)

// heartbeat.lua's replies.
const (
	heartbeatMissed   = 0 // expired, unknown, not this client's or booked: nothing changed
	heartbeatExtended = 1
)

// release.lua's replies.
const (
	releaseForeign  = -1 // another client's: nothing changed
	releaseGone     = 0  // unknown or already gone
	releaseReleased = 1  // released, "release" published
)

// confirm.lua's replies.
const (
	confirmDone    = 0
	confirmNoHold  = 1 // no such live hold
	confirmForeign = 2 // another client's: nothing changed
)

// keep.lua's reply codes; its 1 and 2 are KeepOutcome's Kept and
// Retaken.
const (
	keepTaken   int64 = 0 // another owner's
	keepKept          = int64(Kept)
	keepRetaken       = int64(Retaken)
	keepChanged int64 = 3 // changed since read: retry
)

// release_booked.lua's replies.
const (
	bookedNotClaimed = 0 // not this booking's claim: nothing changed
	bookedReleased   = 1
)

// sweep.lua's replies.
const (
	sweepLive      = 0 // still live: its index scores moved to its real end
	sweepAnnounced = 1 // expired, "release" published
	sweepSilent    = 2 // expired silently
)

// clear_cooldown.lua's replies.
const (
	cooldownNone    = 0
	cooldownCleared = 1
)
